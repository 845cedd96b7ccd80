"""The simulated clusters' objects, in tables of the simulator's own (simulator/cluster_objects.py)."""

import sqlite3

from inferplane.runtime.store import Store
from inferplane.simulator.cluster_objects import TABLES, replace_cluster_objects, simulated_inputs, simulated_objects


def test_the_simulators_tables_come_with_its_first_use_and_hold_a_cluster_whole(tmp_path):
    store = Store(tmp_path)
    tables = lambda: {row[0] for row in store.execute("SELECT name FROM sqlite_master WHERE type='table'")}  # noqa: E731
    assert not TABLES.names & tables()  # the runtime's own store knows none of them
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n-1"}}
    replace_cluster_objects(store, "eks", [node], "inputs-1")
    assert TABLES.names <= tables()
    assert simulated_objects(store) == {"eks": [node]} and simulated_inputs(store, "eks") == "inputs-1"
    replace_cluster_objects(store, "eks", [], None)
    assert simulated_objects(store) == {} and simulated_inputs(store, "eks") is None
    store.close()


def test_a_version_4_store_keeps_its_simulated_clusters_objects_packed_on_opening(tmp_path):
    import orjson

    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n-1"}}
    pods = [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p-{i}", "namespace": "kube-system"}}
            for i in range(3)]
    held = [node, *pods, {**node, "metadata": {"name": "n-2"}}]  # kinds in runs, as a simulation orders them
    Store(tmp_path).close()
    with sqlite3.connect(tmp_path / "store.db") as db:
        db.executescript("DROP TABLE IF EXISTS cluster_objects; CREATE TABLE cluster_objects (cluster TEXT NOT NULL, "
                         "seq INTEGER NOT NULL, body TEXT NOT NULL, PRIMARY KEY (cluster, seq)); PRAGMA user_version = 4;")
        db.executemany("INSERT INTO cluster_objects VALUES (?,?,?)",
                       [("eks", i, orjson.dumps(o).decode()) for i, o in enumerate(held)])
    store = Store(tmp_path)
    assert simulated_objects(store) == {"eks": held}
    assert simulated_objects(store, "eks", kinds=["Node"]) == {"eks": [node, held[-1]]}
    kinds = [row[0] for row in store._db.execute("SELECT kind FROM cluster_objects ORDER BY seq")]
    assert kinds == ["Node", "Pod", "Node"]
    store.close()
