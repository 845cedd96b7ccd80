"""Reading manifests from files, folders and standard input: every document with where it came from.

Every input is read the same way: at most the stream limit of bytes, decoded as YAML defines it, its
documents counted before any is built, and every key checked for duplicates (the API server's strict
field validation refuses them; a plain YAML loader keeps the last).
"""

from __future__ import annotations

import codecs
import itertools
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import yaml

from inferplane.admission.folders import PERMISSION_FIX, folder_inputs, root_problem
from inferplane.admission.limits import StreamLimits
from inferplane.admission.yaml_documents import LimitExceeded, parse

# `-f -` reads the manifests from standard input, as kubectl does; their source is named so.
STDIN = "-"
STDIN_SOURCE = "<stdin>"


@dataclass(frozen=True)
class Manifest:
    source: str  # "path" or "path#2" for the third document of a file
    body: dict[str, Any]
    # (field path, message) for what reading found wrong with the document (a duplicate key): admission
    # reports them with the object's kind and name, beside its own errors.
    problems: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class LoadError:
    source: str
    message: str

    def __str__(self) -> str:
        return f"{self.source}: {self.message}"


def inputs(paths: list[Path], recursive: bool = True) -> Iterator[Path | LoadError]:
    """Every input the paths name: files as given, a folder's manifest files (its subfolders' too when
    `recursive`, see folders.py), standard input once (`-f - -f -` means it once); a path that does not
    exist or cannot be reached, and each entry of a folder that cannot be read, as a LoadError naming it."""
    stdin_read = False
    for root in paths:
        if str(root) == STDIN:
            if not stdin_read:
                stdin_read = True
                yield root
            continue
        problem = root_problem(root)
        if problem is not None:
            yield LoadError(str(root), problem)
        elif root.is_dir():
            for found in folder_inputs(root, recursive):
                yield LoadError(str(found[0]), found[1]) if isinstance(found, tuple) else found
        else:
            yield root


def source_name(path: Path) -> str:
    return STDIN_SOURCE if str(path) == STDIN else str(path)


def read_input(path: Path, limits: StreamLimits) -> bytes | bytearray | LoadError:
    """The bytes of one input, never more than the limit: a larger regular file is refused by its size,
    standard input once one byte past the limit is read, so a 1 GiB pipe costs no more than the limit."""
    source = source_name(path)
    try:
        if str(path) == STDIN:
            data = _read_at_most(sys.stdin.buffer, limits.max_bytes, _PIECE)
        else:
            with open(path, "rb") as stream:
                size = os.fstat(stream.fileno()).st_size  # 0 for a FIFO or a device: read in pieces
                if size > limits.max_bytes:
                    return LoadError(source, limits.bytes_problem())
                data = _read_at_most(stream, limits.max_bytes, size + 1 if size else _PIECE)
    except FileNotFoundError:
        return LoadError(source, "no such file or folder")
    except PermissionError:
        return LoadError(source, f"cannot read the file: permission denied: {PERMISSION_FIX}")
    except (OSError, AttributeError, ValueError) as exc:  # stdin closed or detached: no buffer to read
        what = "standard input" if source == STDIN_SOURCE else "the file"
        return LoadError(source, f"cannot read {what}: {getattr(exc, 'strerror', None) or exc}")
    if len(data) > limits.max_bytes:
        return LoadError(source, limits.bytes_problem())
    return data


_PIECE = 1024 * 1024


def _read_at_most(stream: Any, limit: int, first: int) -> bytes | bytearray:
    """At most `limit` + 1 bytes: `first` at once (a regular file's size and one more), then in pieces
    of 1 MiB, so memory follows what the input holds, not the limit (a read of `limit` + 1 bytes
    allocates all of it up front). A buffered read returns less than asked only at the end."""
    wanted = min(first, limit + 1)
    data = stream.read(wanted)
    if len(data) < wanted or len(data) > limit:
        return data
    grown = bytearray(data)
    while len(grown) <= limit:
        piece = stream.read(min(_PIECE, limit + 1 - len(grown)))
        if not piece:
            break
        grown += piece
    return grown


def decode(source: str, data: bytes | bytearray) -> str | LoadError:
    """The text of an input as YAML defines its encoding: UTF-16 when it starts with that byte-order
    mark, else UTF-8 (with or without one). Undecodable bytes are refused with their offset."""
    if data[:2] in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE):
        encoding, skipped = "utf-16", 0  # the codec reads the mark and counts offsets from the start
    else:
        encoding, skipped = "utf-8", len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
    try:
        return data[skipped:].decode(encoding)
    except UnicodeDecodeError as exc:
        offset = exc.start + skipped
        return LoadError(source, f"byte {offset:,} (0x{data[offset]:02x}) is not {encoding.upper()} text: a "
                                 "manifest is YAML or JSON text, in UTF-8: save it as UTF-8 (a binary or compressed "
                                 "file is not a manifest)")


def load(paths: list[Path], limits: StreamLimits = StreamLimits(),
         recursive: bool = True) -> tuple[list[Manifest], list[LoadError]]:
    manifests: list[Manifest] = []
    errors: list[LoadError] = []
    for path in inputs(paths, recursive):
        data = path if isinstance(path, LoadError) else read_input(path, limits)
        if isinstance(data, LoadError):
            errors.append(data)
            continue
        found, problems = parse_input(source_name(path), data, limits)
        manifests += found
        errors += problems
    return manifests, errors


def parse_input(path: str, data: bytes | bytearray, limits: StreamLimits) -> tuple[list[Manifest], list[LoadError]]:
    """Every manifest of one input's bytes, or every error that keeps them out. An input over the
    document limit is refused whole."""
    if sum(1 for _ in itertools.islice(_DOCUMENT_START.finditer(data), limits.max_documents + 1)) \
            > limits.max_documents:
        # Each `---` starts a document: a long stream is refused in milliseconds, before it is decoded.
        return [], [LoadError(path, limits.documents_problem())]
    text = decode(path, data)
    if isinstance(text, LoadError):
        return [], [text]
    manifests: list[Manifest] = []
    errors: list[LoadError] = []
    counted = 0
    try:
        documents = list(parse(text, limits))
    except yaml.YAMLError as exc:
        return [], [_yaml_error(path, text, exc)]
    many = sum(d is not None for d, _ in documents) > 1
    for index, (document, problems) in enumerate(documents):
        source = f"{path}#{index}" if many else str(path)
        is_list = isinstance(document, dict) and document.get("kind") == "List" and isinstance(
            document.get("items"), list)
        # Counted as `_survey` counts them (every document, a List as its items), which refuses a long
        # text before any document is built; this count also sees what it cannot (items behind an alias).
        counted += max(1, len(document["items"])) if is_list else 1
        if counted > limits.max_documents:
            return [], [LoadError(path, limits.documents_problem())]
        if document is None:
            continue
        if not isinstance(document, dict):
            errors.append(LoadError(source, f"a manifest must be a mapping with apiVersion, kind and metadata, "
                                            f"not a {type(document).__name__}"))
            continue
        if is_list:
            items, item_errors = _list_items(source, document["items"], problems)
            manifests += items
            errors += item_errors
            continue
        manifests.append(Manifest(source, document, tuple(problems)))
    return manifests, errors


# A document start marker: `---` at the start of a line, then a space or the line's end. YAML forbids
# it inside any scalar, so every one starts a document (UTF-16 text has none here, which undercounts).
_DOCUMENT_START = re.compile(rb"^---(?=[ \t\r\n]|\Z)", re.MULTILINE)


def _yaml_error(path: str, text: str, exc: yaml.YAMLError) -> LoadError:
    mark = getattr(exc, "problem_mark", None)
    if mark is not None:
        where = f"{path}:{mark.line + 1}:{mark.column + 1}"
    elif isinstance(exc, yaml.reader.ReaderError):  # a character YAML does not allow: its place in the text
        line, column = text.count("\n", 0, exc.position) + 1, exc.position - text.rfind("\n", 0, exc.position)
        where = f"{path}:{line}:{column}"
    else:
        where = str(path)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    message = problem if isinstance(exc, LimitExceeded) else f"malformed YAML: {problem}: fix the syntax at this line"
    return LoadError(where, message)


def _list_items(source: str, items: list[Any], problems: list[tuple[str, str]]) -> tuple[list[Manifest], list[LoadError]]:
    """kubectl's List (what `get -o yaml` prints): each item is a manifest of its own, with the problems
    found under it; a problem of the List itself is an error of the List."""
    manifests: list[Manifest] = []
    errors: list[LoadError] = []
    by_item: dict[int, list[tuple[str, str]]] = {}
    for field, message in problems:
        position, _, rest = field.removeprefix("items[").partition("]")
        if field.startswith("items[") and position.isdigit():
            by_item.setdefault(int(position), []).append((rest.lstrip("."), message))
        else:
            errors.append(LoadError(source, f"{field}: {message}"))
    for position, item in enumerate(items):
        where = f"{source} items[{position}]"
        if isinstance(item, dict):
            manifests.append(Manifest(where, item, tuple(by_item.get(position, ()))))
        else:
            errors.append(LoadError(where, f"a List item must be a mapping with apiVersion, kind and "
                                           f"metadata, not a {type(item).__name__}"))
    return manifests, errors
