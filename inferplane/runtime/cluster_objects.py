"""What each simulated target cluster holds (nodes, pods, ResourceSlices), kept in the store whole per
cluster, and the fingerprint of the inputs it was simulated from.

A cluster's objects are kept packed: one row per run of objects of one kind, in the cluster's order, as
their JSON array compressed with zlib at its fastest level. A cluster's pods repeat each other's keys and
values, so a row is ~14 times smaller than the objects' JSON (72 MB to 5 MB at 1,000 clusters), and the
bytes every write moves (the write-ahead log, its checkpoint, a helper's merge) shrink with it; compressing
takes ~0.2 ms a cluster, less than the JSON of its objects row by row did. The kind stays a column, so that
a reader of nodes and ResourceSlices never decompresses a pod."""

from __future__ import annotations

import itertools
import sqlite3
import zlib
from typing import Any, Iterable, Iterator

import orjson

Resource = dict[str, Any]

# zlib's fastest level: 5.1 MB at 1,000 clusters in 0.17 s, against 3.7 MB in 0.42 s at its default (6).
LEVEL = 1
INSERT = "INSERT INTO cluster_objects (cluster, seq, kind, body) VALUES (?,?,?,?)"


def packed(cluster: str, objects: list[Resource]) -> Iterator[tuple[str, int, str, bytes]]:
    """The rows that keep a cluster's objects: each run of one kind, in order, as one compressed array."""
    for seq, (kind, run) in enumerate(itertools.groupby(objects, key=lambda o: o["kind"])):
        yield cluster, seq, kind, zlib.compress(orjson.dumps(list(run)), LEVEL)


class ClusterObjects:
    """The part of Store (store.py) that keeps the simulated clusters' objects."""

    _db: sqlite3.Connection

    def replace_cluster_objects(self, cluster: str, objects: list[Resource], inputs: str | None) -> None:
        """A cluster's simulated objects and the fingerprint of their inputs (None: forget both)."""
        with self.transaction():
            self._db.execute("DELETE FROM cluster_objects WHERE cluster=?", (cluster,))
            self._db.executemany(INSERT, packed(cluster, objects))
            self._db.execute("DELETE FROM simulations WHERE cluster=?", (cluster,))
            if inputs is not None:
                self._db.execute("INSERT INTO simulations (cluster, inputs) VALUES (?,?)", (cluster, inputs))

    def simulated_inputs(self, cluster: str) -> str | None:
        row = self._db.execute("SELECT inputs FROM simulations WHERE cluster=?", (cluster,)).fetchone()
        return row[0] if row else None

    def cluster_objects(self, cluster: str | None = None,
                        kinds: Iterable[str] | None = None) -> dict[str, list[Resource]]:
        """Objects of every simulated cluster (or one), by cluster name; with `kinds`, only those kinds
        (the rest, most of a big fleet's pods, are never read)."""
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
            for name, body in self._db.execute(query + " ORDER BY cluster, seq", args):
                out.setdefault(name, []).extend(orjson.loads(zlib.decompress(body)))
        except (orjson.JSONDecodeError, zlib.error, TypeError):
            raise self._undecodable() from None
        return out

    def _set_aside_unpacked_cluster_objects(self) -> None:
        """A state from before version 5 kept an object a row, as JSON text: its rows wait under another
        name until _pack_cluster_objects packs them (so that an interrupted packing is done again)."""
        columns = {row[1] for row in self._db.execute("PRAGMA table_info(cluster_objects)")}
        if columns and "kind" not in columns:
            self._db.execute("ALTER TABLE cluster_objects RENAME TO unpacked_cluster_objects")

    def _pack_cluster_objects(self) -> None:
        """The rows set aside above, packed into the table this layout made, in one transaction."""
        tables = {row[0] for row in self._db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if "unpacked_cluster_objects" not in tables:
            return
        with self.transaction(durable=False):  # see StoreFile._set_up
            self._db.execute("DELETE FROM cluster_objects")
            rows = self._db.execute("SELECT cluster, body FROM unpacked_cluster_objects ORDER BY cluster, seq")
            for cluster, bodies in itertools.groupby(rows, key=lambda row: row[0]):
                self._db.executemany(INSERT, packed(cluster, [orjson.loads(body) for _, body in bodies]))
            self._db.execute("DROP TABLE unpacked_cluster_objects")
