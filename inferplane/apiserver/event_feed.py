"""Events as lists and watches see them.

The store keeps events apart from objects, without a resourceVersion: an event is counted again and
seen again in place when it repeats, and goes with its object. So this feed reads them whole and
numbers each change it finds (a new event ADDED, a count or time changed MODIFIED, one gone DELETED)
in a sequence of its own: a resourceVersion is opaque to clients and may differ by resource type, and
an Events list and a watch of Events are both answered from this feed, so they always agree. The
sequence starts at the server's start time in microseconds: a version a previous server gave is below
this one's history, so a client resuming from it gets 410 and lists again rather than miss events.

The feed is read when an Events list or watch asks (so each starts from what is stored now), and by
the watch thread every EVENT_POLL seconds while a watch of Events is open (or less often, where reading
them all takes long: a large fleet's log)."""

from __future__ import annotations

import time
from typing import Any, Callable

import orjson

from inferplane.apiserver.watches import ADDED, DELETED, HISTORY, MODIFIED, Event, Feed, Held, with_version
from inferplane.runtime.store import Key, Store

# How often open watches of Events see new ones (the whole event log is read each time).
EVENT_POLL = 0.5


def event_key(event: dict[str, Any]) -> Key:
    return Key("", "Event", event["metadata"]["namespace"], event["metadata"]["name"])


class EventFeed(Feed):
    def __init__(self, events: Callable[[Store], list[dict[str, Any]]], history: int = HISTORY):
        super().__init__(history)
        self.events = events
        self.seen = self.floor = int(time.time() * 1_000_000)
        self.last_poll = 0.0
        self.cost = 0.0  # how long the last read took: the watch thread reads at most a fifth of the time
        self.fingerprints: dict[Key, str] = {}  # each held event as read, before it was numbered

    def poll(self, store: Store) -> None:
        """The watch thread's turn: read the events if a watch of them is open and EVENT_POLL has passed."""
        if self.subscriptions and time.monotonic() - self.last_poll >= max(EVENT_POLL, 4 * self.cost):
            self.refresh(store)

    def refresh(self, store: Store) -> tuple[list[dict[str, Any]], int]:
        """Read the events now and publish what changed; every event (with its version) and the feed's
        version. Read and compared under the feed's lock: two readers never publish out of order."""
        with self.lock:
            started = self.last_poll = time.monotonic()
            version, changes = self.seen, []
            current = {event_key(e): e for e in self.events(store)}
            for key, event in current.items():
                fingerprint = orjson.dumps(event, option=orjson.OPT_SORT_KEYS).decode()
                before = self.held.get(key)
                if before is not None and self.fingerprints[key] == fingerprint:
                    continue
                version += 1
                event["metadata"]["resourceVersion"] = str(version)
                self.held[key], self.fingerprints[key] = Held(version, "", orjson.dumps(event)), fingerprint
                changes.append(Event(version, ADDED if before is None else MODIFIED, key, self.held[key].body))
            for key in [k for k in self.held if k not in current]:
                version += 1
                del self.fingerprints[key]
                changes.append(Event(version, DELETED, key, with_version(self.held.pop(key).body, version)))
            self._publish(changes, version)
            self.cost = time.monotonic() - started
            return [orjson.loads(held.body) for _, held in sorted(self.held.items())], version
