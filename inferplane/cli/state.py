"""The runtime on the state folder, as every command opens it: errors that keep a state from being used
told with their fix, progress on standard error."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator, TypeVar

import click

if TYPE_CHECKING:
    from inferplane.engine.control_plane import ControlPlane
    from inferplane.runtime.store import Store

T = TypeVar("T")


@contextlib.contextmanager
def opened(state: Path | None, wait: float | None = None, create: bool = True,
           read_only: bool = False) -> Iterator["ControlPlane"]:
    """The runtime on the state folder, closed however the command ends; whatever keeps the state
    from being used (another process's lock, a read-only folder, a file that is not a state or is
    damaged) is reported with its fix, never a traceback. A command that does not create (create=False)
    refuses a folder with no store rather than create an empty one; one that only reads (read_only)
    works on a state it may not write."""
    from inferplane.engine.control_plane import ControlPlane
    from inferplane.engine.lease_wait import DEFAULT_WAIT

    folder = _existing(state, create=create and not read_only)
    runtime = _opening(folder, lambda: ControlPlane(folder, progress=progress_bar(),
                                                wait=DEFAULT_WAIT if wait is None else wait, read_only=read_only))
    with _store_failures(runtime.store):
        try:
            yield runtime
            runtime.progress.finish()
        finally:
            runtime.close()


@contextlib.contextmanager
def read_store(state: Path | None) -> Iterator["Store"]:
    """The store of the state folder alone, for a command that only reads objects (`get`): without the
    engine, whose imports would be most of such a command's time; errors told as `opened` tells them."""
    from inferplane.runtime.store import Store

    folder = _existing(state, create=False)
    store = _opening(folder, lambda: Store(folder, read_only=True))
    with _store_failures(store):
        try:
            yield store
        finally:
            store.close()


@contextlib.contextmanager
def _store_failures(store: "Store") -> Iterator[None]:
    """An error of the store while a command uses it, told with its fix instead of a traceback."""
    try:
        yield
    except Exception as exc:
        failure = store.database.failure(exc)
        if failure is None:
            raise
        raise click.ClickException(str(failure)) from None


def _existing(state: Path | None, create: bool) -> Path:
    """The state folder; unless the command may create it, refused where it holds no store."""
    from inferplane import state_dir
    from inferplane.runtime.store import STORE_FILE

    folder = state_dir(state)
    if not create and not (folder / STORE_FILE).is_file():
        raise click.ClickException(
            f"no inferplane state in {folder}: `inferplane apply -f FILE --state {folder}` creates it; or pass "
            "--state (or set $INFERPLANE_STATE) to the folder you applied to")
    return folder


def _opening(folder: Path, open_: Callable[[], T]) -> T:
    """What `open_` opens on the folder; what keeps it from opening, told with its fix."""
    from inferplane.runtime.store import StoreError, UnknownSchema

    try:
        return open_()
    except UnknownSchema as exc:
        raise click.ClickException(f"cannot open the state in {folder}: {exc}") from None
    except StoreError as exc:
        raise click.ClickException(str(exc)) from None
    except OSError as exc:
        raise click.ClickException(f"cannot open the state in {folder}: {exc.strerror}: {exc.filename}: pass "
                                   "--state with a folder this user may read and write") from None


@contextlib.contextmanager
def scratch(state: Path | None) -> Iterator[tuple["ControlPlane", list[dict]]]:
    """An in-memory copy of the state (empty where there is none) and what the state holds now: for
    dry runs and diffs, which store nothing."""
    from inferplane import state_dir
    from inferplane.engine.control_plane import ControlPlane
    from inferplane.runtime.store import STORE_FILE

    if (state_dir(state) / STORE_FILE).is_file():
        with opened(state, read_only=True) as runtime:
            before, copy = runtime.list(), runtime.scratch_copy()
    else:
        before, copy = [], ControlPlane(None)
    try:
        yield copy, before
    finally:
        copy.close()


def progress_bar():
    """Progress on standard error: a bar on a terminal, a plain line every few seconds elsewhere."""
    from inferplane.cli.progress import Progress

    return Progress(lambda text, newline: click.echo(text, nl=newline, err=True), terminal=sys.stderr.isatty())
