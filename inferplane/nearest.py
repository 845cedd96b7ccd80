"""The nearest names to a word that names nothing: the one "did you mean" of every message that offers one."""

from __future__ import annotations

import difflib
from typing import Iterable


def nearest(word: str, names: Iterable[str], n: int = 1) -> list[str]:
    """Up to `n` names close to `word`, closest first (difflib's ratio, at least 0.6)."""
    return difflib.get_close_matches(word, list(names), n=n)


def did_you_mean(word: str, names: Iterable[str], n: int = 1) -> str | None:
    """`did you mean X?` (`X, Y or Z?` for several), or None when no name is close."""
    near = nearest(word, names, n)
    if not near:
        return None
    listed = near[0] if len(near) == 1 else f"{', '.join(near[:-1])} or {near[-1]}"
    return f"did you mean {listed}?"
