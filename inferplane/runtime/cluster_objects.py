"""What each simulated target cluster holds (nodes, pods, ResourceSlices), kept in the store whole per
cluster, and the fingerprint of the inputs it was simulated from."""

from __future__ import annotations

import sqlite3
from typing import Any, Iterable

import orjson

Resource = dict[str, Any]


class ClusterObjects:
    """The part of Store (store.py) that keeps the simulated clusters' objects."""

    _db: sqlite3.Connection

    def replace_cluster_objects(self, cluster: str, objects: list[Resource], inputs: str | None) -> None:
        """A cluster's simulated objects and the fingerprint of their inputs (None: forget both)."""
        with self.transaction():
            self._db.execute("DELETE FROM cluster_objects WHERE cluster=?", (cluster,))
            self._db.executemany("INSERT INTO cluster_objects (cluster, seq, body) VALUES (?,?,?)",
                                 [(cluster, i, orjson.dumps(o).decode()) for i, o in enumerate(objects)])
            self._db.execute("DELETE FROM simulations WHERE cluster=?", (cluster,))
            if inputs is not None:
                self._db.execute("INSERT INTO simulations (cluster, inputs) VALUES (?,?)", (cluster, inputs))

    def simulated_inputs(self, cluster: str) -> str | None:
        row = self._db.execute("SELECT inputs FROM simulations WHERE cluster=?", (cluster,)).fetchone()
        return row[0] if row else None

    def cluster_objects(self, cluster: str | None = None,
                        kinds: Iterable[str] | None = None) -> dict[str, list[Resource]]:
        """Objects of every simulated cluster (or one), by cluster name; with `kinds`, only those kinds
        (read by SQLite, so the rest, most of a big fleet's pods, are never decoded)."""
        query = "SELECT cluster, body FROM cluster_objects"
        clauses, args = [], []
        if cluster is not None:
            clauses.append("cluster=?")
            args.append(cluster)
        if kinds is not None:
            wanted = list(kinds)
            clauses.append(f"json_extract(body, '$.kind') IN ({','.join('?' * len(wanted))})")
            args += wanted
        if clauses:
            query += " WHERE " + " AND ".join(clauses)
        out: dict[str, list[Resource]] = {}
        try:
            for name, body in self._db.execute(query + " ORDER BY cluster, seq", args):
                out.setdefault(name, []).append(orjson.loads(body))
        except orjson.JSONDecodeError:
            raise self._undecodable() from None
        return out
