"""kubectl-like output: plain columns padded to the widest cell, upper-case headers."""

from __future__ import annotations

from typing import Iterable, Sequence


def table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    cells = [list(map(str, headers))] + [["<none>" if c in (None, "") else str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = ["   ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in cells]
    return "\n".join(lines)
