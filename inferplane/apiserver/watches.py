"""Watches: one thread follows the store for every client, as the API server's watch cache does.

It reads what was written since the last version it saw (the store's index of versions), and finds
deletions by the count of objects (every addition shows in the versions, so fewer objects than it
holds means some were deleted). It keeps each object's last body (a deletion's event carries it, as
Kubernetes' does) and a bounded history, from which a watch that names a resourceVersion resumes; one
older than the history gets 410 Gone, and the client lists again.

The store does not number deletions: a DELETED event carries the latest version at the time it was
seen, which may equal the version of the write before it."""

from __future__ import annotations

import collections
import queue
import sys
import threading
from dataclasses import dataclass, field
from typing import Callable, NamedTuple

import orjson

from inferplane.apiserver.status import gone
from inferplane.runtime.store import Key, Store

# How often the store is read when nothing woke the thread (another process's writes).
POLL_SECONDS = 0.05
# How many events a watch may resume from: a client further behind lists again.
HISTORY = 50_000

ADDED, MODIFIED, DELETED = "ADDED", "MODIFIED", "DELETED"


class Event(NamedTuple):
    version: int
    type: str
    key: Key
    body: bytes  # the object's JSON, its resourceVersion the event's


@dataclass
class Subscription:
    match: Callable[[Key], bool]
    events: "queue.Queue[Event]" = field(default_factory=queue.Queue)


class Held(NamedTuple):
    version: int
    uid: str
    body: bytes


def with_version(body: bytes, version: int) -> bytes:
    obj = orjson.loads(body)
    obj["metadata"]["resourceVersion"] = str(version)
    return orjson.dumps(obj)


def log_line(line: str) -> None:
    """The server's log: one line on standard error."""
    print(line, file=sys.stderr, flush=True)


class Feed:
    """What a watch subscribes to: versioned events, each object's last body (a watch that starts from
    the current state gets them as ADDED), and a bounded history a watch resumes from."""

    def __init__(self, history: int = HISTORY):
        self.history: collections.deque[Event] = collections.deque(maxlen=history)
        self.held: dict[Key, Held] = {}
        self.subscriptions: list[Subscription] = []
        self.lock = threading.RLock()
        self.seen = 0
        self.floor = 0  # events after this version are all in the history

    def _publish(self, events: list[Event], seen: int) -> None:
        with self.lock:
            for event in events:
                if len(self.history) == self.history.maxlen:
                    self.floor = self.history[0].version
                self.history.append(event)
                for subscription in self.subscriptions:
                    if subscription.match(event.key):
                        subscription.events.put(event)
            self.seen = seen

    def subscribe(self, match: Callable[[Key], bool], since: int | None) -> tuple[Subscription, list[Event], int]:
        """A subscription to the events of the keys `match` accepts, and what comes before them: with no
        `since`, every such object now as ADDED (a watch's initial state); else the history after `since`.
        Also the version they bring the client to."""
        subscription = Subscription(match)
        with self.lock:
            if since is None:
                first = [Event(held.version, ADDED, key, held.body) for key, held in sorted(self.held.items())
                         if match(key)]
            elif since < self.floor:
                raise gone(str(since), self.floor)
            else:
                first = [e for e in self.history if e.version > since and match(e.key)]
            self.subscriptions.append(subscription)
            return subscription, first, self.seen

    def unsubscribe(self, subscription: Subscription) -> None:
        with self.lock:
            if subscription in self.subscriptions:
                self.subscriptions.remove(subscription)



class Hub(Feed):
    """The store's objects as a feed, followed by a thread of its own; each poll also calls `also` with
    the thread's store (the Events' feed reads it there)."""

    def __init__(self, open_store: Callable[[], Store], poll: float = POLL_SECONDS, history: int = HISTORY,
                 log: Callable[[str], None] = log_line, also: Callable[[Store], None] | None = None):
        super().__init__(history)
        self.open_store, self.log, self.also = open_store, log, also
        self.poll = poll
        self.woken = threading.Event()
        self.stopped = threading.Event()
        self.thread: threading.Thread | None = None
        self.failure: BaseException | None = None

    def start(self) -> None:
        """Read every object (the watches' starting state), then follow the store in a thread of its own
        (a SQLite connection serves the thread that opened it)."""
        ready = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(ready,), name="watch", daemon=True)
        self.thread.start()
        ready.wait()
        if self.failure is not None:
            raise self.failure

    def _load(self, store: Store) -> None:
        with self.lock, store.reading():
            self.seen = self.floor = store.latest_version()
            for key, version, body in store.rows():
                self.held[key] = Held(version, self._uid(body), body.encode())

    def stop(self) -> None:
        self.stopped.set()
        self.woken.set()
        if self.thread is not None:
            self.thread.join(timeout=5)

    def wake(self) -> None:
        """A write of this process: read it now rather than at the next poll."""
        self.woken.set()

    def _run(self, ready: threading.Event) -> None:
        store = None
        try:
            store = self.open_store()
            self._load(store)
            ready.set()
            while not self.stopped.is_set():
                self.woken.wait(self.poll)
                self.woken.clear()
                self.read(store)
                if self.also is not None:
                    self.also(store)
        except BaseException as error:  # noqa: BLE001 (reported; the watches end, and clients list again)
            self.failure = error
            self.stopped.set()
            self.log(f"watch failed, every watch ends: {error!r}")
        finally:
            ready.set()
            if store is not None:
                store.close()

    @staticmethod
    def _uid(body: str | bytes) -> str:
        return orjson.loads(body)["metadata"].get("uid", "")

    def read(self, store: Store) -> None:
        """Turn what was written since the last read into events."""
        events = []
        with store.reading():  # one snapshot: the versions and the count agree
            rows = store.rows_changed_since(self.seen)
            count = store.count()
            latest = store.latest_version()
            for key, version, body in rows:
                before, uid = self.held.get(key), self._uid(body)
                if before is not None and before.uid != uid:  # deleted and created again in between
                    events.append(Event(version, DELETED, key, with_version(before.body, version)))
                    before = None
                self.held[key] = Held(version, uid, body.encode())
                events.append(Event(version, ADDED if before is None else MODIFIED, key, body.encode()))
            if count < len(self.held):
                present = store.keys()
                for key in [k for k in self.held if k not in present]:
                    events.append(Event(latest, DELETED, key, with_version(self.held.pop(key).body, latest)))
        self._publish(events, max(latest, self.seen))

