"""The inputs `-f` names: a file as given, a folder's manifest files, and every entry of a folder that
cannot be read, each reported with its path rather than skipped without a word.

As kubectl's `-f DIR` (k8s.io/cli-runtime pkg/resource/visitor.go, ExpandPathsToFileVisitors): a folder's
files whose names end in .yaml, .yml or .json, its subfolders' when recursive (`if path != paths &&
!recursive { return filepath.SkipDir }`; kubectl's default is not to recurse, ours is, see cli/options.py);
a file named explicitly is read whatever its name. Its walk is filepath.Walk, which never follows a
symbolic link to a folder; neither does this one. kubectl stops at the first entry it cannot read; this
walk reports every one, then the command exits 1.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Iterator

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")

# What a walk yields: a file to read, or (path, why it cannot be read).
Unreadable = tuple[Path, str]

PERMISSION_FIX = "let this user read it (chmod, or its owner), or run as a user who may"


def folder_inputs(root: Path, recursive: bool) -> Iterator[Path | Unreadable]:
    """Every manifest file under a folder and each entry that cannot be read, in one stable order: names
    sorted, a subfolder's entries in its place (the order of the paths sorted whole)."""
    try:
        with os.scandir(root) as entries:
            listed = sorted(entries, key=lambda entry: entry.name)
    except PermissionError:
        yield root, f"the folder cannot be listed: permission denied: {PERMISSION_FIX}"
        return
    except OSError as exc:
        yield root, f"the folder cannot be listed: {_reason(exc)}"
        return
    for entry in listed:
        path = Path(entry.path)
        try:
            mode = entry.stat(follow_symlinks=False).st_mode
        except PermissionError:  # listed, but not searchable: no entry of it can be opened (the first fails)
            yield root, f"the folder cannot be searched (no execute permission): its files cannot be opened: " \
                        f"{PERMISSION_FIX}"
            return
        except FileNotFoundError:  # removed while the folder was walked
            continue
        if stat.S_ISDIR(mode):
            if recursive:
                yield from folder_inputs(path, recursive)
        elif entry.name.endswith(MANIFEST_SUFFIXES):
            yield _manifest_entry(path, mode)


def _manifest_entry(path: Path, mode: int) -> Path | Unreadable:
    """A folder's entry named as a manifest: the file to read, or why it cannot be read. A symbolic
    link is followed to a file, never to a folder (kubectl's walk does not follow them either)."""
    if stat.S_ISLNK(mode):
        try:
            mode = os.stat(path).st_mode
        except FileNotFoundError:
            return path, f"a symbolic link to {os.readlink(path)}, which does not exist: fix or remove the link"
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                return path, "a symbolic link in a loop (too many levels of symbolic links): fix or remove the link"
            return path, f"cannot be accessed: {_reason(exc)}"
        if stat.S_ISDIR(mode):
            return path, "a symbolic link to a folder, which is not followed: name the folder itself with -f"
    if stat.S_ISREG(mode):
        return path
    return path, f"not a regular file ({_file_type(mode)}): a folder's manifests are read from regular files; " \
                 "name it with -f on its own to read it"


def _file_type(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device")):
        if test(mode):
            return name
    return "not a file"


def root_problem(root: Path) -> str | None:
    """Why a path named with -f cannot be read at all (it does not exist, or cannot be reached), else None."""
    try:
        os.stat(root)
    except FileNotFoundError:
        if os.path.islink(root):
            return f"a symbolic link to {os.readlink(root)}, which does not exist: fix the link, or name another path"
        return "no such file or folder"
    except PermissionError:
        return f"the path cannot be accessed: permission denied (a folder above it cannot be searched): " \
               f"{PERMISSION_FIX}"
    except OSError as exc:
        return f"the path cannot be accessed: {_reason(exc)}"
    return None


def _reason(exc: OSError) -> str:
    return exc.strerror.lower() if exc.strerror else str(exc)
