"""Python's cyclic garbage collector, held off while a command builds a large heap of plain data.

What admission and the reconciler allocate is mostly trees of dicts, lists and strings (manifests,
objects as the store holds them) that hold no cycles; the collector's automatic passes would walk
them again and again as they pile up, for a tenth of a full apply's time. Reference counting still
frees everything that is not in a cycle; what is, waits for the pause to end (or for a collection
the code asks for).
"""

from __future__ import annotations

import contextlib
import gc
from typing import Iterator


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """No automatic cyclic collection inside; as it was after (nested pauses keep it off until the outermost ends)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()
