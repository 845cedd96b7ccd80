"""The live fleet console at /console/: the fleet page (the CLI hands its rendering over, as it does the
catalog) served on the API's address, and kept up to date as the fleet changes.

Logging in, as notebook servers do: `inferplane serve` prints a link carrying a one-time login token
(and `inferplane serve --console-url` asks the running server for another, with the bearer token).
Visiting it spends the token and sets a session cookie (HttpOnly, Secure, SameSite=Strict, for
/console/ only), then redirects to the bare address, so the token is neither kept in the address bar
nor sent again. The cookie opens the console's page, its script and its own read endpoint, nothing
else: the API itself still wants the bearer token. Without it the console answers 401 with a page
that says how to get a link.

The page follows the fleet through its read endpoint, /console/fleet, as a Kubernetes client follows
a kind: a list (the whole view, with its resourceVersion), then a watch from that version (each
change as the parts of the page it replaces, BOOKMARKs while nothing changes), and a list again on
410 Gone (a version older than the history kept, or from a server since restarted). One thread
follows the store's changes for every open page and renders each change once (console_view.py's
work, the CLI's); it starts with the first page opened, so a server nobody views pays nothing."""

from __future__ import annotations

import base64
import collections
import hashlib
import hmac
import re
import secrets
import threading
import time
from typing import Any, Callable, Iterator, Protocol

import orjson

from inferplane.apiserver.app import Answer, Request
from inferplane.apiserver.status import APIError, bad_request, gone, method_not_supported, too_many_watches
from inferplane.apiserver.streams import BOOKMARK_SECONDS, IDLE_SECONDS, RETRY_AFTER, Released, WatchSlots, lifetime
from inferplane.apiserver.watches import Hub, log_line
from inferplane.runtime.store import Key, Store

PREFIX = "/console"
SCRIPT = f"{PREFIX}/fleet.js"
COOKIE = "inferplane-console"
# A login link's token is good for one visit, within this many seconds of being made.
LOGIN_SECONDS = 3600
# A session's cookie is good for this long (and dies with the server, which keeps sessions in memory).
SESSION_SECONDS = 12 * 3600
# Most login tokens and sessions kept at once (the oldest go first).
MOST_KEPT = 64
# Changes kept for pages to resume from: a page further behind lists again (410).
HISTORY = 256
# Console watches open at once (all pages, all sessions); the next is answered 429.
MAX_WATCHES = 32
# How long a page waits for the first view of the fleet (a large one takes a second or two).
FIRST_VIEW_WAIT = 60.0
# How long the fleet stays quiet before its view is read whole again (see console_view.refresh).
QUIET_SECONDS = 1.0
# A console watch's lifetime when the page names none: the page watches again from where it was.
WATCH_SECONDS = 300
HEADERS = {
    # Only our own script (and the page's inline one, by its hash), reads of our own address, no frames.
    "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer", "X-Frame-Options": "DENY"}
HTML = "text/html; charset=utf-8"


class View(Protocol):
    """The CLI's console view (inferplane/cli/console_view.py)."""

    def watches(self, key: Key) -> bool: ...
    def refresh(self, store: Store) -> Any: ...
    def update(self, store: Store, keys: set[Key]) -> Any: ...
    def page(self, version: str, script: str) -> str: ...


class Tokens:
    """Secrets handed out, each until it expires (or is spent): looked up by constant-time comparison
    with every one kept, never by a lookup that returns sooner for a closer guess."""

    def __init__(self, seconds: float, clock: Callable[[], float] = time.monotonic):
        self.seconds, self.clock = seconds, clock
        self.kept: collections.OrderedDict[str, float] = collections.OrderedDict()
        self.lock = threading.Lock()

    def make(self) -> str:
        token = secrets.token_urlsafe(32)
        with self.lock:
            self.kept[token] = self.clock() + self.seconds
            while len(self.kept) > MOST_KEPT:
                self.kept.popitem(last=False)
        return token

    def find(self, offered: str, spend: bool = False) -> bool:
        offered_bytes = offered.encode("utf-8", "replace")
        now, found = self.clock(), None
        with self.lock:
            for token, expires in list(self.kept.items()):
                if expires <= now:
                    del self.kept[token]
                elif hmac.compare_digest(token.encode(), offered_bytes):
                    found = token
            if found is not None and spend:
                del self.kept[found]
        return found is not None


def cookie_of(headers: dict[str, str]) -> str:
    for part in headers.get("cookie", "").split(";"):
        name, _, value = part.strip().partition("=")
        if name == COOKIE:
            return value
    return ""


def inline_script_hash(page: str) -> str:
    found = re.search(r"<script>(.*?)</script>", page, re.S)
    digest = hashlib.sha256(found.group(1).encode() if found else b"").digest()
    return "'sha256-" + base64.b64encode(digest).decode() + "'"


def html(code: int, text: str, headers: dict[str, str] | None = None) -> Answer:
    policy = {"Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; "
              "form-action 'none'; frame-ancestors 'none'"}
    return Answer(code, text.encode(), content_type=HTML, headers={**HEADERS, **policy, **(headers or {})})


def login_page(why: str) -> Answer:
    return html(401, f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>inferplane console: log in</title></head>
<body style="font:14px/1.4 system-ui,sans-serif;margin:20px 24px">
<h1>inferplane console: log in</h1>
<p>{why}</p>
<p>Open the console with the link <code>inferplane serve</code> printed when it started. Each link logs in
once; for another, run on this machine, with the state the server serves:</p>
<pre>inferplane serve --console-url --state STATE</pre>
</body></html>
""")


class Console:
    def __init__(self, view: View, script: bytes, open_store: Callable[[], Store], hub: Hub,
                 address: Callable[[], str], log: Callable[[str], None] = log_line):
        self.view, self.script, self.open_store, self.hub = view, script, open_store, hub
        self.address, self.log = address, log
        self.logins, self.sessions = Tokens(LOGIN_SECONDS), Tokens(SESSION_SECONDS)
        self.watch_slots = WatchSlots(MAX_WATCHES)
        self.boot = secrets.token_hex(4)  # a version from another run of the server is 410, not misread
        self.changed = threading.Condition()
        self.history: collections.deque[tuple[int, dict[str, Any]]] = collections.deque(maxlen=HISTORY)
        self.number = 0  # the version of the view pages have (0: none yet)
        self.floor = 0  # changes after this version are all in the history
        self.current: Any = None
        self.stopped = threading.Event()
        self.thread: threading.Thread | None = None
        self.start_lock = threading.Lock()
        self.failure: str | None = None

    def login_url(self) -> str:
        return f"https://{self.address()}{PREFIX}/?token={self.logins.make()}"

    # ---- following the fleet

    def _start(self) -> None:
        with self.start_lock:
            if self.thread is None:
                self.thread = threading.Thread(target=self._run, name="console", daemon=True)
                self.thread.start()

    def stop(self) -> None:
        self.stopped.set()
        with self.changed:
            self.changed.notify_all()
        if self.thread is not None:
            self.thread.join(timeout=5)

    def _run(self) -> None:
        store = None
        subscription = None
        try:
            store = self.open_store()
            subscription, first, _ = self.hub.subscribe(self.view.watches, self.hub.seen)
            self._publish(self.view.refresh(store))
            keys, full = {e.key for e in first}, False
            while not self.stopped.is_set() and not self.hub.stopped.is_set():
                keys |= _drained(subscription.events, QUIET_SECONDS)
                if keys:
                    self._publish(self.view.update(store, keys))
                    keys, full = set(), True
                elif full:  # quiet again after changes: read it whole once (console_view.refresh)
                    self._publish(self.view.refresh(store))
                    full = False
        except Exception as error:  # noqa: BLE001 (logged; pages show the connection lost)
            self.failure = repr(error)
            self.log(f"console: following the fleet failed, its pages stop updating: {error!r}")
        finally:
            if subscription is not None:
                self.hub.unsubscribe(subscription)
            if store is not None:
                store.close()
            self.stopped.set()
            with self.changed:
                self.changed.notify_all()

    def _publish(self, view: Any) -> None:
        with self.changed:
            change = None if self.current is None else self.current.changes_to(view)
            self.current = view
            if self.number and change is None:
                return
            self.number += 1
            if change is None:
                self.floor = self.number
            else:
                if len(self.history) == self.history.maxlen:
                    self.floor = self.history[0][0]
                self.history.append((self.number, change))
            self.changed.notify_all()

    def _ready(self) -> tuple[int, Any]:
        self._start()
        deadline = time.monotonic() + FIRST_VIEW_WAIT
        with self.changed:
            while not self.number and not self.stopped.is_set() and time.monotonic() < deadline:
                self.changed.wait(0.2)
            if not self.number or self.stopped.is_set():
                raise APIError(503, "ServiceUnavailable", "the console cannot read the fleet now: the server's "
                               "log says why", headers={"Retry-After": str(RETRY_AFTER)})
            return self.number, self.current

    def version(self, number: int) -> str:
        return f"{self.boot}.{number}"

    # ---- answers

    def answer(self, request: Request, bearer: bool) -> Answer:
        """A request under /console: by the bearer token (`bearer`), or by the session cookie, or one
        that logs in with a login token."""
        path = request.path.rstrip("/") or "/"
        if path == f"{PREFIX}/login":
            if not bearer:
                return login_page("Log in with a link, not here.")
            if request.method != "POST":
                raise method_not_supported("the console's login (POST it with the bearer token)", request.method)
            return _json(200, {"url": self.login_url()})
        if request.method != "GET":
            raise method_not_supported("the console (it is read only)", request.method)
        if path == PREFIX and "token" in request.query:
            if not self.logins.find(request.query["token"], spend=True):
                return login_page("This login link was used already, or it expired.")
            session = self.sessions.make()
            return html(303, "", {"Location": f"{PREFIX}/", "Set-Cookie": f"{COOKIE}={session}; Path={PREFIX}/; "
                                  f"Max-Age={SESSION_SECONDS}; HttpOnly; Secure; SameSite=Strict"})
        if not bearer and not self.sessions.find(cookie_of(request.headers)):
            return login_page("You are not logged in to this server's console (or your session ended).")
        if path == PREFIX:
            return self._page()
        if path == SCRIPT:
            return Answer(200, self.script, content_type="text/javascript; charset=utf-8", headers=HEADERS)
        if path == f"{PREFIX}/fleet":
            return self._watch(request) if request.query.get("watch") in ("1", "true") else self._list()
        raise APIError(404, "NotFound", f"the console has no {path}: open {PREFIX}/")

    def _page(self) -> Answer:
        number, _ = self._ready()
        page = self.view.page(self.version(number), SCRIPT)
        policy = (f"default-src 'none'; script-src 'self' {inline_script_hash(page)}; style-src 'unsafe-inline'; "
                  "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
        answer = html(200, page, {"Content-Security-Policy": policy})
        return answer

    def _list(self) -> Answer:
        number, view = self._ready()
        return _json(200, {"resourceVersion": self.version(number), **view.whole()})

    def _since(self, text: str | None) -> int:
        boot, _, number = (text or "").partition(".")
        if not number.isdigit() or len(number) > 18:
            raise bad_request(f"resourceVersion: {(text or '')[:40]!r} is not one the console gave: list "
                              f"{PREFIX}/fleet and watch from its resourceVersion")
        if boot != self.boot or int(number) < self.floor or int(number) > self.number:
            raise gone(text[:40], self.floor)
        return int(number)

    def _watch(self, request: Request) -> Answer:
        self._ready()
        since, timeout = self._since(request.query.get("resourceVersion")), lifetime(request.query)
        if not request.query.get("timeoutSeconds"):
            timeout = WATCH_SECONDS
        try:
            self.watch_slots.take()
        except APIError:
            raise too_many_watches(MAX_WATCHES, RETRY_AFTER) from None
        stream = self._stream(since, time.monotonic() + timeout, request.connected)
        return Answer(200, None, stream=Released(stream, self.watch_slots.give_back))

    def _stream(self, last: int, deadline: float, connected: Callable[[], bool]) -> Iterator[bytes]:
        quiet = time.monotonic()
        while not self.stopped.is_set() and time.monotonic() < deadline:
            with self.changed:
                behind = last < self.floor  # fell behind the history while it waited
                pending = [(n, change) for n, change in self.history if n > last]
                if not pending and not behind:
                    self.changed.wait(IDLE_SECONDS)
            if behind:
                yield _line({"type": "ERROR", "object": gone(self.version(last), self.floor).status()})
                return
            for last, change in pending:
                yield _line({"type": "MODIFIED", "resourceVersion": self.version(last), "object": change})
                quiet = time.monotonic()
            if pending:
                continue
            if not connected():
                return
            if time.monotonic() - quiet >= BOOKMARK_SECONDS:
                quiet = time.monotonic()
                yield _line({"type": "BOOKMARK", "resourceVersion": self.version(last)})


def _drained(events: Any, wait: float) -> set[Key]:
    """The keys of the events queued: waiting up to `wait` for the first, then all there are."""
    import queue
    keys = set()
    try:
        keys.add(events.get(timeout=wait).key)
        while True:
            keys.add(events.get_nowait().key)
    except queue.Empty:
        return keys


def _json(code: int, body: Any) -> Answer:
    return Answer(code, orjson.Fragment(orjson.dumps(body)), headers=HEADERS)


def _line(obj: dict[str, Any]) -> bytes:
    return orjson.dumps(obj) + b"\n"
