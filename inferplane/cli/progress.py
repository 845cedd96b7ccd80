"""How long work shows itself: a progress bar on a terminal that ends at 100% on its own line, a
plain line every few seconds elsewhere (a CI log, a pipe), and the one line that sums up an apply."""

from __future__ import annotations

import time
from typing import Callable, Iterable

# A bar is redrawn this often (in items worked off): more often costs more than it tells.
REDRAW_EVERY = 25
BAR_WIDTH = 30
# Without a terminal a line is printed at most this often: a log that shows the run is alive, not one
# line per reconcile.
PLAIN_EVERY_SECONDS = 5.0
# A summary names at most this many objects that are not ready; the rest are counted.
NAMED_NOT_READY = 5


class Progress:
    """Called with (done, queued) as the reconciler works off its queue (`queued` counts what is left,
    asked only when a line is written); `finish()` once the run ended.

    `echo(text, newline)` writes to the person watching (standard error); `terminal`: whether that is
    a terminal (a bar redrawn in place) or not (plain lines); `clock` paces the plain lines."""

    def __init__(self, echo: Callable[[str, bool], None], terminal: bool,
                 clock: Callable[[], float] = time.monotonic):
        self.echo, self.terminal, self.clock = echo, terminal, clock
        self.done = 0
        self.drawn = False  # a bar is on screen without its line ended
        self.printed_at = clock()

    def __call__(self, done: int, queued: Callable[[], int]) -> None:
        if done == self.done:
            return  # nothing new worked off (a simulation whose inputs had not changed)
        self.done = done
        if self.terminal:
            if done % REDRAW_EVERY == 0:
                self._bar(done, queued())
        elif self.clock() - self.printed_at >= PLAIN_EVERY_SECONDS:
            self.printed_at = self.clock()
            self.echo(f"reconciling: {done} done, {queued()} queued", True)

    def finish(self) -> None:
        """End a bar at 100% on a line of its own; a run that never drew one leaves nothing."""
        if self.terminal and self.drawn:
            self._bar(self.done, 0)
            self.echo("", True)
            self.drawn = False

    def _bar(self, done: int, queued: int) -> None:
        # The total grows as composites compose more composites: the bar is done / (done + queued).
        filled = round(BAR_WIDTH * done / max(done + queued, 1))
        self.echo(f"\rreconciling [{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {done} done, {queued} queued   ",
                  False)
        self.drawn = True


def apply_summary(seconds: float, verbs: Iterable[str], refused: int,
                  not_ready: list[tuple[str, str]], dry_run: bool = False) -> str:
    """One line: how long the apply took, what it changed, and what is not ready and why.

    `verbs`: created / configured / unchanged per object applied; `not_ready`: (object, reason) of the
    applied objects whose Ready condition is not True."""
    verbs = list(verbs)
    created, configured = verbs.count("created"), verbs.count("configured")
    how = ", ".join(f"{n} {verb}" for n, verb in ((created, "created"), (configured, "configured")) if n)
    line = (f"{'dry run' if dry_run else 'applied'} in {seconds:.1f} s: {created + configured} changed"
            f"{f' ({how})' if how else ''}, {verbs.count('unchanged')} unchanged")
    if refused:
        line += f", {refused} refused"
    if not not_ready:
        return line + "; all ready" if verbs else line
    named = ", ".join(f"{name} ({reason})" for name, reason in not_ready[:NAMED_NOT_READY])
    more = len(not_ready) - NAMED_NOT_READY
    return line + f"; {len(not_ready)} not ready: {named}" + (f" and {more} more" if more > 0 else "")
