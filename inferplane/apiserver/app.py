"""The API as a function of a request: routes a method and a URL to discovery, OpenAPI, reads, watches
and writes, and answers with an object or a Status. HTTP, TLS and the token are `server.py`'s."""

from __future__ import annotations

import contextlib
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

import orjson

from inferplane import KUBERNETES_RELEASE
from inferplane.apiserver import applies, discovery, patches, reads, tables, writes
from inferplane.apiserver.catalog import Catalog, Served
from inferplane.apiserver.openapi import OpenAPI
from inferplane.apiserver.replay import REPLAY_SECONDS, Replays
from inferplane.apiserver.streams import MAX_WATCHES, Released, WatchSlots, lifetime, watch_stream
from inferplane.apiserver.status import APIError, bad_request, method_not_supported, not_found
from inferplane.apiserver.event_feed import EventFeed
from inferplane.apiserver.watches import Feed, Hub, log_line
from inferplane.engine.control_plane import ControlPlane
from inferplane.runtime.store import Conflict, Key, Store, StoreError

# How long a write waits for another process's write lock or reconcile before it answers 500.
WRITE_WAIT = 60.0
# kube-apiserver's version this server answers as: the Kubernetes whose definitions admission reads.
_MAJOR, _MINOR, _ = KUBERNETES_RELEASE.removeprefix("v").split(".")
VERSION = {"major": _MAJOR, "minor": _MINOR, "gitVersion": KUBERNETES_RELEASE, "platform": "linux/amd64"}


def is_console(path: str) -> bool:
    """Whether a path is the fleet console's (console.py), which a session cookie may read."""
    return path == "/console" or path.startswith("/console/")


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]  # names lower-cased
    body: bytes = b""
    # Whether the client is still connected (a quiet watch asks, to end when its client has gone).
    connected: Callable[[], bool] = lambda: True
    # Whether it carries the bearer token (the console's pages come with a session cookie instead).
    bearer: bool = True

    @property
    def dry_run(self) -> bool:
        return self.query.get("dryRun") == "All"

    def manager(self, apply: bool = False) -> str:
        """The field manager the write is recorded as (applies.manager_of)."""
        return applies.manager_of(self.query, self.headers.get("user-agent", ""), apply)


@dataclass
class Answer:
    code: int
    body: Any
    warnings: list[str] = field(default_factory=list)
    # A watch: the events to stream after the headers, instead of `body`.
    stream: Released | None = None
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)  # sent besides Content-Type (Retry-After)


@dataclass(frozen=True)
class Target:
    """What a resource URL names."""
    served: Served
    namespace: str  # "" for cluster-scoped kinds, and for a namespaced kind listed across namespaces
    name: str | None
    subresource: str | None


class App:
    def __init__(self, state: Path, catalog: Catalog, events: Callable[[Store], list[dict[str, Any]]],
                 address: str = "", max_watches: int | None = None):
        self.state, self.catalog, self.events, self.address = state, catalog, events, address
        self.openapi = OpenAPI(catalog)
        self.pool: list[ControlPlane] = []  # runtimes not lent (see `runtime`)
        self.pool_lock = threading.Lock()
        self.write_lock = threading.Lock()
        self.event_feed = EventFeed(events)
        self.hub = Hub(lambda: ControlPlane(state, wait=WRITE_WAIT).store, also=self.event_feed.poll)
        self.replays = Replays(log_line)
        self.reconciler = Reconciling(lambda: ControlPlane(state, wait=WRITE_WAIT), self.replays)
        self.watch_slots = WatchSlots(max_watches or MAX_WATCHES)
        self.console: Any = None  # the fleet console (console.py), when the CLI hands one over

    def start(self) -> None:
        self.hub.start()
        self.reconciler.start()

    def stop(self) -> None:
        if self.console is not None:
            self.console.stop()
        self.hub.stop()
        self.reconciler.stop()
        with self.pool_lock:
            for runtime in self.pool:
                runtime.close()
            self.pool.clear()

    @contextlib.contextmanager
    def runtime(self) -> Iterator[ControlPlane]:
        """A runtime over the state for one request, lent from the server's pool (a new one when every
        one is lent). Runtimes are lent per request, not kept per connection: a connection held open
        (a watch, kubectl's keep-alive) holds no store connection, and the pool is as large as the most
        requests ever served at once. None is ever closed while the server runs: SQLite keeps the file
        descriptors of a connection closed while others hold the file's locks, for the next to reuse
        (sqlite.org/src/file/src/os_unix.c, setPendingFd), so closing them would free nothing."""
        with self.pool_lock:
            runtime = self.pool.pop() if self.pool else None
        if runtime is None:
            runtime = ControlPlane(self.state, wait=WRITE_WAIT)
        try:
            yield runtime
        finally:
            with self.pool_lock:
                self.pool.append(runtime)

    # ---- routing

    def answer(self, request: Request) -> Answer:
        """The answer to a request; whatever fails is a Status, never a dropped connection."""
        try:
            return self._route(request)
        except APIError as error:
            return Answer(error.code, error.status(), headers=error.headers)
        except Conflict as error:  # another writer came in between a read and a write of this request
            return Answer(409, APIError(409, "Conflict", f"{error}: read it again and retry").status())
        except StoreError as error:  # told with its fix (busy, read-only, damaged)
            return Answer(503, APIError(503, "ServiceUnavailable", str(error)).status())
        except Exception:  # noqa: BLE001 (a bug of ours: logged with its traceback, answered without it)
            log_line(f"{request.method} {request.path} failed:\n{traceback.format_exc()}")
            return Answer(500, APIError(500, "InternalError", "the server failed to answer this request: its "
                                        "log says why").status())

    def _route(self, request: Request) -> Answer:
        path = request.path.rstrip("/") or "/"
        if self.console is not None and is_console(path):
            return self.console.answer(request, request.bearer)
        if not request.bearer:
            raise APIError(401, "Unauthorized", "Unauthorized")
        fixed = {"/api": lambda: discovery.api_versions(self.address), "/apis": lambda: discovery.api_group_list(
            self.catalog), "/version": lambda: VERSION, "/openapi/v3": self.openapi.index}
        if path in ("/api", "/apis") and discovery.wants_aggregated(request.headers.get("accept", "")):
            answer = self._read_only(request, discovery.aggregated(self.catalog, core=path == "/api"))
            answer.content_type = discovery.AGGREGATED
            return answer
        if path in fixed:
            return self._read_only(request, fixed[path]())
        if path in ("/healthz", "/livez", "/readyz"):
            return self._read_only(request, "ok")
        if path.startswith("/openapi/v3/"):
            return self._read_only(request, orjson.Fragment(self.openapi.served(path.removeprefix("/openapi/v3/"))))
        api_version, rest = self._split(path)
        if not rest:
            found = discovery.api_resource_list(self.catalog, api_version)
            if found is None:
                raise APIError(404, "NotFound", f"the server could not find the requested resource ({path})")
            return self._read_only(request, found)
        return self._resource(request, self._target(api_version, rest))

    @staticmethod
    def _read_only(request: Request, body: Any) -> Answer:
        if request.method != "GET":
            raise method_not_supported(request.path, request.method)
        return Answer(200, body)

    @staticmethod
    def _split(path: str) -> tuple[str, list[str]]:
        parts = path.strip("/").split("/")
        if parts[0] == "api" and len(parts) >= 2:
            return parts[1], parts[2:]
        if parts[0] == "apis" and len(parts) >= 3:
            return f"{parts[1]}/{parts[2]}", parts[3:]
        raise APIError(404, "NotFound", f"the server could not find the requested resource ({path})")

    def _target(self, api_version: str, rest: list[str]) -> Target:
        namespace = ""
        if rest[0] == "namespaces" and len(rest) >= 3 and self.catalog.by_plural(api_version, rest[2]):
            namespace, rest = rest[1], rest[2:]
        served = self.catalog.by_plural(api_version, rest[0])
        if served is None or len(rest) > 3:
            raise APIError(404, "NotFound", f"the server could not find the requested resource "
                           f"({api_version} {'/'.join(rest)})")
        if served.namespaced and len(rest) > 1 and not namespace:
            raise APIError(404, "NotFound", f"{served.plural} are namespaced: name the namespace in the URL")
        subresource = rest[2] if len(rest) == 3 else None
        if subresource not in (None, "status") and not (subresource == "scale" and served.scale):
            raise APIError(404, "NotFound", f"{served.plural} have no {subresource} subresource here")
        return Target(served, namespace, rest[1] if len(rest) > 1 else None, subresource)

    def _resource(self, request: Request, target: Target) -> Answer:
        verbs = {"GET": self._get, "POST": self._create, "PUT": self._update, "PATCH": self._patch,
                 "DELETE": self._delete}
        if request.method not in verbs:
            raise method_not_supported(target.served.plural, request.method)
        if request.method != "GET" and target.served.kind == reads.EVENT:
            raise method_not_supported("events (the engine records them)", request.method)
        if request.method == "DELETE" and target.name is None:
            return self._delete_collection(request, target)
        if request.method != "GET" and (request.method == "POST") != (target.name is None):
            raise method_not_supported(f"{target.served.plural}{'' if target.name is None else ' by name'}",
                                       request.method)
        return verbs[request.method](request, target)

    # ---- reads

    def _get(self, request: Request, target: Target) -> Answer:
        watching = reads.flag(request.query, "watch")
        with self.runtime() as runtime:
            if watching:
                return self._watch(request, target, runtime)
            events, seen = self.event_feed.refresh(runtime.store) if reads.is_event(target.served) else (None, None)
            version = str(seen if seen is not None else runtime.store.latest_version())
            if target.name is not None:
                obj = reads.one(runtime.store, target.served, target.namespace, target.name, events)
                if target.subresource == "scale":
                    return Answer(200, writes.scale_of(target.served, obj))
                if tables.wants_table(request.headers.get("accept", "")):
                    return Answer(200, self._table(request, target, [obj], version))
                return Answer(200, obj)
            query = reads.list_query(target.served, target.namespace or None, request.query)
            objects = events if events is not None else reads.objects_of(runtime.store, target.served)
        items, token = reads.page(objects, query)
        if tables.wants_table(request.headers.get("accept", "")):
            return Answer(200, self._table(request, target, items, version, token=token))
        return Answer(200, reads.list_body(target.served, items, version, token))

    def _table(self, request: Request, target: Target, objects: list[dict[str, Any]], version: str,
               headers: bool = True, token: str | None = None) -> dict[str, Any]:
        include = request.query.get("includeObject", "Metadata")
        if include not in tables.INCLUDE:
            raise bad_request(f"includeObject: {include!r} is none of {', '.join(tables.INCLUDE)}")
        return tables.table(self.catalog, target.served.kind, target.served.api_version, objects, version,
                            include, headers, token)

    def _watch(self, request: Request, target: Target, runtime: ControlPlane) -> Answer:
        served = target.served
        feed: Feed = self.hub
        if reads.is_event(served):
            feed = self.event_feed
            feed.refresh(runtime.store)  # so that a watch from now starts from what is stored now
        query = reads.list_query(served, target.namespace or None, request.query)

        def match(key: Key) -> bool:
            return (key.group, key.kind) == (served.group, served.kind) and (
                not target.namespace or key.namespace == target.namespace) and (
                target.name is None or key.name == target.name)

        # A watch-list starts from the current state whatever version it names (resourceVersionMatch=NotOlderThan).
        since = None if reads.flag(request.query, "sendInitialEvents") else \
            reads.parse_version(request.query.get("resourceVersion"))
        timeout = lifetime(request.query)
        self.watch_slots.take()
        try:
            subscription, first, seen = feed.subscribe(match, since)
        except BaseException:
            self.watch_slots.give_back()
            raise

        def release() -> None:
            feed.unsubscribe(subscription)
            self.watch_slots.give_back()

        table = (lambda objects, headers: self._table(request, target, objects, str(seen), headers)) \
            if tables.wants_table(request.headers.get("accept", "")) else None
        stream = watch_stream(feed, self.hub.stopped, subscription, first, query, request.query, table,
                              (served.api_version, served.kind), timeout, request.connected)
        return Answer(200, None, stream=Released(stream, release))

    # ---- writes

    def _written(self, request: Request, target: Target, change: Callable[[ControlPlane], writes.Written | dict],
                 code: int = 200) -> Answer:
        with self.write_lock, self.runtime() as runtime:
            done = change(runtime)
        if not request.dry_run:
            self.hub.wake()
            self.reconciler.wake()
        if isinstance(done, writes.Written):
            return Answer(201 if done.created else code, done.obj, done.warnings)
        return Answer(code, done)

    def _create(self, request: Request, target: Target) -> Answer:
        body = writes.checked_body(target.served, target.namespace, None,
                                   writes.decoded(request.body, request.headers.get("content-type", "")))
        manager = request.manager()
        return self._written(request, target, lambda runtime: writes.write(
            runtime, target.served, body, create=True, dry_run=request.dry_run, manager=manager))

    def _update(self, request: Request, target: Target) -> Answer:
        sent = writes.decoded(request.body, request.headers.get("content-type", ""))
        if target.subresource == "scale":
            return self._scale(request, target, sent)
        return self._replace(request, target, writes.checked_body(target.served, target.namespace, target.name, sent))

    def _replace(self, request: Request, target: Target, body: dict[str, Any]) -> Answer:
        if target.subresource == "status":
            key = writes.key_of(target.served, target.namespace, target.name or "")
            return self._written(request, target, lambda runtime: writes.write_status(
                runtime, target.served, key, body, request.dry_run))
        manager = request.manager()
        return self._written(request, target, lambda runtime: writes.write(
            runtime, target.served, body, create=False, dry_run=request.dry_run, replays=self.replays,
            manager=manager))

    def _scale(self, request: Request, target: Target, scale: Any) -> Answer:
        """A Scale written (PUT) or patched: the object with its replicas set, written as any update."""
        key = writes.key_of(target.served, target.namespace, target.name or "")
        with self.runtime() as runtime:
            current = runtime.get(key)
        if current is None:
            raise not_found(target.served.plural, target.served.group, key.name)
        body = writes.scaled(target.served, current, scale)
        manager = request.manager()
        answer = self._written(request, target, lambda runtime: writes.write(
            runtime, target.served, body, create=False, dry_run=request.dry_run, manager=manager))
        if answer.code < 300:
            answer.body = writes.scale_of(target.served, answer.body)
        return answer

    def _patch(self, request: Request, target: Target) -> Answer:
        apply = request.headers.get("content-type", "").split(";", 1)[0].strip() == patches.APPLY
        applies.force_of(request.query, apply)
        if apply:
            return self._apply(request, target)
        key = writes.key_of(target.served, target.namespace, target.name or "")
        with self.runtime() as runtime:
            current = runtime.get(key)
        if current is None:
            raise not_found(target.served.plural, target.served.group, key.name)
        if target.subresource == "scale":
            current = writes.scale_of(target.served, current)
            scale = writes.patched(target.served, current, request.headers.get("content-type", ""), request.body)
            return self._scale(request, target, scale)
        after = writes.patched(target.served, current, request.headers.get("content-type", ""), request.body)
        after = writes.checked_body(target.served, target.namespace, target.name, after)
        # A patch is based on the version it was applied to, unless it names another (then that one).
        after["metadata"].setdefault("resourceVersion", current["metadata"].get("resourceVersion"))
        return self._replace(request, target, after)

    def _apply(self, request: Request, target: Target) -> Answer:
        """Server-side apply (applies.py): the object created or merged, as any other write."""
        if target.subresource is not None:
            raise APIError(415, "UnsupportedMediaType", f"server-side apply to the {target.subresource} subresource is "
                           "not supported by inferplane serve: apply the object itself (its status is the engine's)")
        manager, force = request.manager(apply=True), applies.force_of(request.query, True)
        config = writes.checked_body(target.served, target.namespace, target.name,
                                     writes.decoded(request.body, "application/yaml"))
        return self._written(request, target, lambda runtime: applies.apply(
            runtime, target.served, config, manager, force, request.dry_run, self.replays))

    @staticmethod
    def _delete_options(request: Request) -> tuple[str, bool]:
        """(propagation policy, dry run) from the query or a DeleteOptions body."""
        options = (writes.decoded(request.body, "application/json") if request.body else None) or {}
        if not isinstance(options, dict) or not isinstance(options.get("dryRun") or [], list):
            raise bad_request("the body of a DELETE is DeleteOptions: a JSON object, its dryRun a list (e.g. "
                              "{\"propagationPolicy\": \"Foreground\", \"dryRun\": [\"All\"]})")
        propagation = writes.check_propagation(request.query.get("propagationPolicy")
                                               or options.get("propagationPolicy"))
        return propagation, request.dry_run or "All" in (options.get("dryRun") or [])

    def _delete(self, request: Request, target: Target) -> Answer:
        propagation, dry_run = self._delete_options(request)
        key = writes.key_of(target.served, target.namespace, target.name or "")
        try:
            with self.write_lock, self.runtime() as runtime:
                gone = writes.delete(runtime, target.served, key, dry_run, propagation, self.replays)
        finally:
            self.hub.wake()
            self.reconciler.wake()  # a refused deletion may be recorded, to be replayed
        return Answer(200, gone)

    def _delete_collection(self, request: Request, target: Target) -> Answer:
        """deletecollection: every object the label and field selectors choose (in the URL's namespace, or
        all), each deleted as a single DELETE would be, Usage protection and replay included. As
        kube-apiserver's (k8s.io/apiserver pkg/registry/generic/registry/store.go, v0.37.0: DeleteCollection
        deletes item by item, not atomically, and answers the deleted objects' list or an error), except
        that every refusal is named, not the first only."""
        if target.served.namespaced and not target.namespace:
            # kube-apiserver serves a namespaced resource's deletecollection under a namespace only (its path
            # across namespaces is list and watch: k8s.io/apiserver pkg/endpoints/installer.go, v0.37.0).
            raise method_not_supported(f"{target.served.plural} across namespaces (name one)", "DELETE")
        propagation, dry_run = self._delete_options(request)
        selection = {k: v for k, v in request.query.items() if k in ("labelSelector", "fieldSelector")}
        query = reads.list_query(target.served, target.namespace or None, selection)
        gone, refused = [], []
        try:
            with self.write_lock, self.runtime() as runtime:
                chosen, _ = reads.page(reads.objects_of(runtime.store, target.served), query)
                version = str(runtime.store.latest_version())
                for obj in chosen:
                    key = writes.key_of(target.served, obj["metadata"].get("namespace", ""), obj["metadata"]["name"])
                    try:
                        gone.append(writes.delete(runtime, target.served, key, dry_run, propagation, self.replays))
                    except APIError as error:
                        if error.code != 404:  # one deleted with another (composed by it) is not an error
                            refused.append(error.message)
        finally:
            self.hub.wake()
            self.reconciler.wake()
        if refused:
            raise APIError(409, "Conflict", f"{len(refused)} of the {len(chosen)} {target.served.plural} chosen were "
                           f"not deleted ({len(gone)} were):\n" + "\n".join(refused))
        return Answer(200, reads.list_body(target.served, gone, version, None))


# How soon the reconciler tries again after a round that failed, or that found another process's
# reconcile under way (which it waited for up to WRITE_WAIT).
RETRY_SECONDS = 5.0
# A burst of writes (a GitOps sync, `kubectl apply -f` of a folder: one request per object) is reconciled
# together: a round begins once writes have paused this long, or this long after the first unreconciled
# write at the latest. Each round reads the fleet whole, so a round per write made a 1,000-object apply
# quadratic, and the round's transactions held the writes' lock (bench/ssa_bench.py).
BURST_PAUSE = 0.2
BURST_LONGEST = 5.0


class Reconciling:
    """The server's controller loop: after each burst of writes (and once at start), the engine's
    reconciler works its queue to the fixpoint, holding the state's lease as `inferplane apply` does; a
    write that comes in meanwhile is reconciled in the next round. A round that fails is logged and tried
    again."""

    def __init__(self, open_runtime: Callable[[], ControlPlane], replays: Replays, log: Callable[[str], None] = log_line):
        self.open_runtime, self.replays, self.log = open_runtime, replays, log
        self.woken = threading.Event()
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, name="reconcile", daemon=True)
        self.rounds = 0
        self.last_report = None

    def start(self) -> None:
        self.woken.set()
        self.thread.start()

    def wake(self) -> None:
        self.woken.set()

    def stop(self) -> None:
        self.stopped.set()
        self.woken.set()
        self.thread.join(timeout=30)

    def _run(self) -> None:
        runtime = self.open_runtime()
        retry = None
        try:
            self.replays.load(runtime)
            while not self.stopped.is_set():
                self.woken.wait(retry)
                self._burst_ended()
                if self.stopped.is_set():
                    break
                retry = self._round(runtime)
        finally:
            runtime.close()

    def _burst_ended(self) -> None:
        """Wait until the writes have paused (BURST_PAUSE), BURST_LONGEST at most."""
        latest = time.monotonic() + BURST_LONGEST
        self.woken.clear()
        while (left := latest - time.monotonic()) > 0 and self.woken.wait(min(BURST_PAUSE, left)):
            if self.stopped.is_set():
                return
            self.woken.clear()

    def _round(self, runtime: ControlPlane) -> float | None:
        """One reconcile to the fixpoint; how long to wait before the next unwoken one (None: until woken)."""
        try:
            self.last_report = report = runtime.reconcile()
        except Exception as error:  # noqa: BLE001 (logged; the server keeps serving and tries again)
            self.log(f"reconcile failed: {runtime.store.database.failure(error) or error!r}; "
                     f"trying again in {RETRY_SECONDS:g} s")
            return RETRY_SECONDS
        self.rounds += 1
        if not report.converged:
            self.log(f"reconcile: the fleet is not at its fixpoint ({report.waited_for or 'see the events'}); "
                     f"trying again in {RETRY_SECONDS:g} s")
            return RETRY_SECONDS
        try:
            remaining = self.replays.run(runtime)
        except Exception as error:  # noqa: BLE001 (logged; tried again)
            self.log(f"replaying recorded deletions failed: {runtime.store.database.failure(error) or error!r}; "
                     f"trying again in {RETRY_SECONDS:g} s")
            return RETRY_SECONDS
        return REPLAY_SECONDS if remaining else None
