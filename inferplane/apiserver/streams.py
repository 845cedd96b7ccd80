"""A watch's stream: its first events, then each change as the hub sees it, one JSON object a line
(k8s.io/apimachinery pkg/apis/meta/v1 WatchEvent: `type`, `object`), with BOOKMARK events while
nothing changes when the client allows them, until `timeoutSeconds` or the server stops."""

from __future__ import annotations

import queue
import threading
import time
from typing import Any, Callable, Iterator

import orjson

from inferplane.apiserver.reads import ListQuery, flag
from inferplane.apiserver.watches import Event, Feed, Subscription

# How often a quiet watch that allows bookmarks gets one (kube-apiserver about once a minute:
# k8s.io/apiserver pkg/storage/cacher/cacher.go, v0.37.0, defaultBookmarkFrequency; a client resumes from
# the latest it got, so more often costs a line and saves a relist).
BOOKMARK_SECONDS = 1.0
INITIAL_EVENTS_END = "k8s.io/initial-events-end"
# How often a quiet watch looks whether the server is stopping.
IDLE_SECONDS = 0.5


def watch_stream(feed: Feed, stopped: threading.Event, subscription: Subscription, first: list[Event],
                 query: ListQuery, params: dict[str, str],
                 table: Callable[[list[dict[str, Any]], bool], dict[str, Any]] | None,
                 kind: tuple[str, str] = ("", "")) -> Iterator[bytes]:
    timeout = float(params.get("timeoutSeconds") or 0)
    deadline = time.monotonic() + timeout if timeout > 0 else None
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
        while not stopped.is_set() and (deadline is None or time.monotonic() < deadline):
            try:
                event = subscription.events.get(timeout=IDLE_SECONDS)
            except queue.Empty:
                if bookmarks and time.monotonic() - quiet_since >= BOOKMARK_SECONDS:
                    quiet_since = time.monotonic()
                    yield bookmark()
                continue
            quiet_since = time.monotonic()
            if (out := line(event)) is not None:
                yield out
    finally:
        feed.unsubscribe(subscription)
