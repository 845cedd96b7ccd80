"""A watch's stream: its first events, then each change as the hub sees it, one JSON object a line
(k8s.io/apimachinery pkg/apis/meta/v1 WatchEvent: `type`, `object`), with BOOKMARK events while
nothing changes when the client allows them, until its timeout, its client goes or the server stops.

A watch always ends: after `timeoutSeconds`, or by default after a randomized 30 to 60 minutes, as
kube-apiserver ends it (the client watches again from the last version it got); and within
IDLE_SECONDS of its client going, even when nothing happens, so that its thread and store connection
are let go. Each token may hold MAX_WATCHES at once; the next is answered 429."""

from __future__ import annotations

import queue
import random
import threading
import time
from typing import Any, Callable, Iterator

import orjson

from inferplane.apiserver.reads import ListQuery, flag
from inferplane.apiserver.status import bad_request, too_many_watches
from inferplane.apiserver.watches import Event, Feed, Subscription

# How often a quiet watch that allows bookmarks gets one (kube-apiserver about once a minute:
# k8s.io/apiserver pkg/storage/cacher/cacher.go, v0.37.0, defaultBookmarkFrequency; a client resumes from
# the latest it got, so more often costs a line and saves a relist).
BOOKMARK_SECONDS = 1.0
INITIAL_EVENTS_END = "k8s.io/initial-events-end"
# How often a quiet watch looks whether the server is stopping or its client has gone.
IDLE_SECONDS = 0.5
# A watch's lifetime when the client names none: kube-apiserver's --min-request-timeout (1800 s) times a
# random factor in [1, 2), which spreads the watches' reconnections (k8s.io/apiserver
# pkg/endpoints/handlers/get.go, v0.37.0, ListResource: minRequestTimeout * (rand.Float64() + 1.0)).
MIN_REQUEST_TIMEOUT = 1800
# Watches one token may hold open at once: each holds a thread here; a client past it gets 429 and
# retries after RETRY_AFTER seconds.
MAX_WATCHES = 250
RETRY_AFTER = 1


class WatchSlots:
    """The watches open at once, bounded (the server has one token, so this is the token's count)."""

    def __init__(self, limit: int = MAX_WATCHES):
        self.limit, self.open = limit, 0
        self.lock = threading.Lock()

    def take(self) -> None:
        with self.lock:
            if self.open >= self.limit:
                raise too_many_watches(self.limit, RETRY_AFTER)
            self.open += 1

    def give_back(self) -> None:
        with self.lock:
            self.open -= 1


def lifetime(params: dict[str, str]) -> float:
    """Seconds the watch lasts: `timeoutSeconds` when given (a whole number, as kube-apiserver parses
    it), else kube-apiserver's randomized default."""
    text = params.get("timeoutSeconds")
    if not text:
        return MIN_REQUEST_TIMEOUT * (random.random() + 1.0)
    if not text.isdigit():
        raise bad_request(f"timeoutSeconds: {text[:40]!r} is not a whole number of seconds: send one, e.g. "
                          "timeoutSeconds=300")
    return float(text) if int(text) > 0 else MIN_REQUEST_TIMEOUT * (random.random() + 1.0)


def watch_stream(feed: Feed, stopped: threading.Event, subscription: Subscription, first: list[Event],
                 query: ListQuery, params: dict[str, str],
                 table: Callable[[list[dict[str, Any]], bool], dict[str, Any]] | None,
                 kind: tuple[str, str] = ("", ""), timeout: float = MIN_REQUEST_TIMEOUT,
                 connected: Callable[[], bool] = lambda: True) -> Iterator[bytes]:
    deadline = time.monotonic() + timeout
    bookmarks = flag(params, "allowWatchBookmarks")
    state = {"headers": True}

    def line(event: Event) -> bytes | None:
        obj = orjson.loads(event.body)
        if query.namespace is not None and obj["metadata"].get("namespace") != query.namespace:
            return None
        if not (query.labels(obj["metadata"].get("labels") or {}) and query.fields(obj)):
            return None
        if table is not None:
            obj = table([obj], state["headers"])
            state["headers"] = False
        return orjson.dumps({"type": event.type, "object": obj}) + b"\n"

    def bookmark(annotations: dict[str, str] | None = None) -> bytes:
        meta = {"resourceVersion": str(feed.seen), **({"annotations": annotations} if annotations else {})}
        return orjson.dumps({"type": "BOOKMARK", "object": {"kind": kind[1], "apiVersion": kind[0],
                                                            "metadata": meta}}) + b"\n"

    try:
        for event in first:
            if (out := line(event)) is not None:
                yield out
        if flag(params, "sendInitialEvents"):
            # A watch-list (client-go's WatchListClient, kubectl wait): the initial state ends with this
            # bookmark (k8s.io/apimachinery pkg/apis/meta/v1 InitialEventsAnnotationKey).
            yield bookmark({INITIAL_EVENTS_END: "true"})
        quiet_since = time.monotonic()
        while not stopped.is_set() and time.monotonic() < deadline:
            try:
                event = subscription.events.get(timeout=min(IDLE_SECONDS, max(0.0, deadline - time.monotonic())))
            except queue.Empty:
                if not connected():
                    return
                if bookmarks and time.monotonic() - quiet_since >= BOOKMARK_SECONDS:
                    quiet_since = time.monotonic()
                    yield bookmark()
                continue
            quiet_since = time.monotonic()
            if (out := line(event)) is not None:
                yield out
    finally:
        feed.unsubscribe(subscription)


class Released:
    """A watch's stream that gives back what the watch held (its subscription, its slot) once closed,
    whether or not it was ever read: a generator closed before its first step runs no `finally`."""

    def __init__(self, stream: Iterator[bytes], release: Callable[[], None]):
        self.stream, self.release = stream, release
        self.released = False

    def __iter__(self) -> "Released":
        return self

    def __next__(self) -> bytes:
        return next(self.stream)

    def close(self) -> None:
        try:
            self.stream.close()
        finally:
            if not self.released:
                self.released = True
                self.release()
