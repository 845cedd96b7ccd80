"""The server's controller loop reconciles a burst of writes (one request per object, as kubectl and
GitOps controllers send them) in one round, and never waits longer than BURST_LONGEST for a pause."""

from __future__ import annotations

import threading
import time

from inferplane.apiserver import app


class Counting:
    """Stands in for the ControlPlane: counts the rounds and when each began."""

    def __init__(self):
        self.began: list[float] = []

    def reconcile(self):
        self.began.append(time.monotonic())
        return type("Report", (), {"converged": True, "waited_for": None})()

    def close(self):
        pass


class NoReplays:
    def load(self, runtime):
        pass

    def run(self, runtime):
        return 0


def writes(loop: app.Reconciling, every: float, lasting: float) -> float:
    """Wake the loop as each write of a burst does; when the last write was."""
    ended = time.monotonic() + lasting
    while time.monotonic() < ended:
        loop.wake()
        time.sleep(every)
    last = time.monotonic()
    loop.wake()
    return last


def test_a_burst_of_writes_is_one_round_after_it():
    runtime = Counting()
    loop = app.Reconciling(lambda: runtime, NoReplays(), log=lambda line: None)
    loop.start()
    try:
        time.sleep(1)  # the round at start
        assert len(runtime.began) == 1
        last = writes(loop, every=0.01, lasting=1.0)
        time.sleep(1)
        assert len(runtime.began) == 2 and runtime.began[1] > last
    finally:
        loop.stop()


def test_writes_that_never_pause_are_reconciled_all_the_same(monkeypatch):
    monkeypatch.setattr(app, "BURST_LONGEST", 0.5)
    runtime = Counting()
    loop = app.Reconciling(lambda: runtime, NoReplays(), log=lambda line: None)
    loop.start()
    try:
        time.sleep(1)
        writer = threading.Thread(target=writes, args=(loop, 0.01, 2.0))
        writer.start()
        writer.join()
        time.sleep(1)
        # The writes lasted 2 s without a pause: the loop reconciled while they went on, and after them.
        assert len(runtime.began) >= 4
    finally:
        loop.stop()
