"""What each simulated target cluster holds (nodes, pods, ResourceSlices), kept in the store whole per
cluster, and the fingerprint of the inputs it was simulated from: tables of the simulator's own, which it
registers with each store it uses (TABLES; the runtime knows none of them).

A cluster's objects are kept packed: one row per run of objects of one kind, in the cluster's order, as
their JSON array compressed with zlib at its fastest level. A cluster's pods repeat each other's keys and
values, so a row is ~14 times smaller than the objects' JSON (72 MB to 5 MB at 1,000 clusters), and the
bytes every write moves (the write-ahead log, its checkpoint, a helper's merge) shrink with it; compressing
takes ~0.2 ms a cluster, less than the JSON of its objects row by row did. The kind stays a column, so that
a reader of nodes and ResourceSlices never decompresses a pod."""

from __future__ import annotations

import itertools
import zlib
from typing import Any, Iterable, Iterator

import orjson

from inferplane.runtime.schema import Tables
from inferplane.runtime.store import Store

Resource = dict[str, Any]

# The Ready condition type of the Nodes and Pods kept here, the kubelet's: Kubernetes' own, the same word
# as Crossplane's Ready (api/function.py) but not the same fact. Here, not with the objects' builders
# (simulation_objects.py), as `get nodes` reads it too and loads none of the simulation.
KUBERNETES_READY = "Ready"

# zlib's fastest level: 5.1 MB at 1,000 clusters in 0.17 s, against 3.7 MB in 0.42 s at its default (6).
LEVEL = 1
INSERT = "INSERT INTO cluster_objects (cluster, seq, kind, body) VALUES (?,?,?,?)"


def packed(cluster: str, objects: list[Resource]) -> Iterator[tuple[str, int, str, bytes]]:
    """The rows that keep a cluster's objects: each run of one kind, in order, as one compressed array."""
    for seq, (kind, run) in enumerate(itertools.groupby(objects, key=lambda o: o["kind"])):
        yield cluster, seq, kind, zlib.compress(orjson.dumps(list(run)), LEVEL)


def _outdated(store: Store) -> bool:
    """A state from before the store's version 5 keeps an object a row, as JSON text (or was cut off while
    its rows were being packed)."""
    columns = {row[1] for row in store.execute("PRAGMA table_info(cluster_objects)")}
    tables = {row[0] for row in store.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    return bool(columns and "kind" not in columns) or "unpacked_cluster_objects" in tables


def _set_aside_unpacked(store: Store) -> None:
    """Rows of an object each wait under another name until _pack_unpacked packs them (in the same
    transaction)."""
    columns = {row[1] for row in store.execute("PRAGMA table_info(cluster_objects)")}
    if columns and "kind" not in columns:
        store.execute("ALTER TABLE cluster_objects RENAME TO unpacked_cluster_objects")


def _pack_unpacked(store: Store) -> None:
    """The rows set aside above, packed into the table made since."""
    tables = {row[0] for row in store.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if "unpacked_cluster_objects" not in tables:
        return
    store.execute("DELETE FROM cluster_objects")
    rows = store.execute("SELECT cluster, body FROM unpacked_cluster_objects ORDER BY cluster, seq").fetchall()
    for cluster, bodies in itertools.groupby(rows, key=lambda row: row[0]):
        store.executemany(INSERT, packed(cluster, [orjson.loads(body) for _, body in bodies]))
    store.execute("DROP TABLE unpacked_cluster_objects")


TABLES = Tables(
    "simulator",
    # A row is a run of objects of one kind, in the cluster's order: their JSON array, zlib-compressed;
    # `simulations` holds the fingerprint of the inputs each cluster was simulated from (rerun only when
    # they change).
    ("""CREATE TABLE IF NOT EXISTS cluster_objects (
        cluster TEXT NOT NULL,
        seq INTEGER NOT NULL,
        kind TEXT NOT NULL,
        body BLOB NOT NULL,
        PRIMARY KEY (cluster, seq))""",
     "CREATE TABLE IF NOT EXISTS simulations (cluster TEXT PRIMARY KEY, inputs TEXT NOT NULL)"),
    outdated=_outdated, before=_set_aside_unpacked, after=_pack_unpacked)


def replace_cluster_objects(store: Store, cluster: str, objects: list[Resource], inputs: str | None) -> None:
    """A cluster's simulated objects and the fingerprint of their inputs (None: forget both)."""
    store.register_tables(TABLES)
    with store.transaction():
        store.execute("DELETE FROM cluster_objects WHERE cluster=?", (cluster,))
        store.executemany(INSERT, packed(cluster, objects))
        store.execute("DELETE FROM simulations WHERE cluster=?", (cluster,))
        if inputs is not None:
            store.execute("INSERT INTO simulations (cluster, inputs) VALUES (?,?)", (cluster, inputs))


def simulated_inputs(store: Store, cluster: str) -> str | None:
    store.register_tables(TABLES)
    row = store.execute("SELECT inputs FROM simulations WHERE cluster=?", (cluster,)).fetchone()
    return row[0] if row else None


def simulated_objects(store: Store, cluster: str | None = None,
                      kinds: Iterable[str] | None = None) -> dict[str, list[Resource]]:
    """Objects of every simulated cluster (or one), by cluster name; with `kinds`, only those kinds
    (the rest, most of a big fleet's pods, are never read)."""
    store.register_tables(TABLES)
    query = "SELECT cluster, body FROM cluster_objects"
    clauses, args = [], []
    if cluster is not None:
        clauses.append("cluster=?")
        args.append(cluster)
    if kinds is not None:
        wanted = list(kinds)
        clauses.append(f"kind IN ({','.join('?' * len(wanted))})")
        args += wanted
    if clauses:
        query += " WHERE " + " AND ".join(clauses)
    out: dict[str, list[Resource]] = {}
    try:
        for name, body in store.execute(query + " ORDER BY cluster, seq", tuple(args)):
            out.setdefault(name, []).extend(orjson.loads(zlib.decompress(body)))
    except (orjson.JSONDecodeError, zlib.error, TypeError):
        raise store.database.undecodable() from None
    return out
