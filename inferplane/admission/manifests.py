"""Reading manifests from files, folders and standard input: every document with where it came from.

Every input is read the same way: at most the stream limit of bytes, decoded as YAML defines it, its
documents counted before any is built, and every key checked for duplicates (the API server's strict
field validation refuses them; a plain YAML loader keeps the last).
"""

from __future__ import annotations

import codecs
import functools
import itertools
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import yaml

from inferplane.admission.limits import MAX_DEPTH, MAX_OBJECT_BYTES, HugeInteger, StreamLimits, _join, size_problem

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
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


def manifest_files(path: Path) -> list[Path]:
    """A file as given, or every manifest file under a folder, in a stable order."""
    if path.is_dir():
        return sorted(p for p in path.rglob("*") if p.suffix in MANIFEST_SUFFIXES and p.is_file())
    return [path]


def inputs(paths: list[Path]) -> Iterator[Path]:
    """Every input the paths name: files as given, a folder's manifest files, standard input once
    (`-f - -f -` means it once); a path that does not exist is yielded for `read_input` to report."""
    stdin_read = False
    for root in paths:
        if str(root) == STDIN:
            if not stdin_read:
                stdin_read = True
                yield root
        elif not root.exists():
            yield root
        else:
            yield from manifest_files(root)


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


def load(paths: list[Path], limits: StreamLimits = StreamLimits()) -> tuple[list[Manifest], list[LoadError]]:
    manifests: list[Manifest] = []
    errors: list[LoadError] = []
    for path in inputs(paths):
        data = read_input(path, limits)
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
            # kubectl's List (what `get -o yaml` prints): each item is a manifest of its own.
            by_item: dict[int, list[tuple[str, str]]] = {}
            for field, message in problems:
                position, _, rest = field.removeprefix("items[").partition("]")
                if field.startswith("items[") and position.isdigit():
                    by_item.setdefault(int(position), []).append((rest.lstrip("."), message))
                else:
                    errors.append(LoadError(source, f"{field}: {message}"))
            for position, item in enumerate(document["items"]):
                where = f"{source} items[{position}]"
                if isinstance(item, dict):
                    manifests.append(Manifest(where, item, tuple(by_item.get(position, ()))))
                else:
                    errors.append(LoadError(where, f"a List item must be a mapping with apiVersion, kind and "
                                                   f"metadata, not a {type(item).__name__}"))
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


def parse(text: str, limits: StreamLimits = StreamLimits()) -> Iterator[tuple[Any, list[tuple[str, str]]]]:
    """Every document of a YAML text with its duplicate keys: by libyaml when the text is plainly
    within the limits, else by the bounded pure-Python loader, which reports what is wrong with its own
    message and position. A text of more documents than the limit is refused before any is built.

    libyaml composes the node tree recursively in C and expands aliases without measuring them, so it
    only sees text that `_survey` cleared: no aliases, nesting well inside MAX_DEPTH. Any error it
    raises is reported by the bounded loader instead, so the messages are the same whichever loader
    reads a file (libyaml is ~10x faster, which is most of a no-op re-apply's time).
    """
    if _survey(text, limits):
        try:
            return iter(list(_documents(FastManifestLoader(text))))
        except yaml.YAMLError:
            pass
    return _documents(ManifestLoader(text))


def _documents(loader: "KubernetesScalars") -> Iterator[tuple[Any, list[tuple[str, str]]]]:
    try:
        while loader.check_data():
            document = loader.get_data()
            yield document, loader.duplicates
    finally:
        loader.dispose()


_OPENS = (yaml.MappingStartEvent, yaml.SequenceStartEvent)
_CLOSES = (yaml.MappingEndEvent, yaml.SequenceEndEvent)


# Every collection opens with one of these: a flow one with its bracket, a block mapping's entries
# with `:` or `?`, a block sequence's with `-`. Each occurrence opens at most one collection.
_COLLECTION_INDICATORS = "[{:?-"


def _survey(text: str, limits: StreamLimits) -> bool:
    """Whether libyaml may read the text: True when it has no alias and no collection nested
    MAX_DEPTH - 1 deep (a scalar inside is one level more). A text of more documents than the limit
    (a List counting as its items) is refused here, on libyaml's event stream, which builds nothing.

    Counting indicator characters bounds the nesting from above in microseconds, which settles a
    manifest of a few dozen lines (whose few documents `parse_input` counts); longer texts are read
    through the event stream, which keeps no tree and does not recurse. The limit is refused for the
    whole input, whichever count finds it, so the message names the input alone."""
    indicators = sum(text.count(c) for c in _COLLECTION_INDICATORS)
    if "*" not in text and indicators < MAX_DEPTH - 1:
        return True  # too few indicators for deep nesting; `parse_input` counts its few documents
    plain, depth, documents = True, 0, 0  # plain: no alias so far
    root_mapping = key_next = in_items = listed = False
    key = kind = None
    items = 0
    try:
        for event in yaml.parse(text, Loader=yaml.CSafeLoader):
            cls = event.__class__  # compared by identity: this loop runs once per event of a long text
            if cls in _NODE_EVENTS:
                # The root mapping's `kind` and `items`: a List counts as its items, each as it is read.
                if depth == 1 and root_mapping:
                    if key_next:
                        key = event.value if cls is yaml.ScalarEvent else None
                    elif key == "kind":
                        kind = event.value if cls is yaml.ScalarEvent else None
                    elif key == "items" and cls is yaml.SequenceStartEvent:
                        in_items = listed = True
                    key_next = not key_next
                elif depth == 2 and in_items:
                    items += 1
                    if kind in (None, "List") and documents + items > limits.max_documents:
                        raise LimitExceeded(None, limits.documents_problem())
                if cls is yaml.ScalarEvent:
                    continue
                if cls is yaml.AliasEvent:
                    plain = False
                    continue
                if depth == 0 and cls is yaml.MappingStartEvent:
                    root_mapping = key_next = True
                depth += 1
                if depth >= MAX_DEPTH:
                    # The bounded loader refuses the text at this document, and builds none after it:
                    # the documents before it were counted here.
                    return False
            elif cls in _CLOSE_EVENTS:
                depth -= 1
                in_items = in_items and depth > 1
            elif cls is yaml.DocumentStartEvent:
                root_mapping = key_next = in_items = listed = False
                key = kind = None
                items = 0
            elif cls is yaml.DocumentEndEvent:
                documents += max(1, items) if kind == "List" and listed else 1
                if documents > limits.max_documents:
                    raise LimitExceeded(None, limits.documents_problem())
    except LimitExceeded:
        raise
    except yaml.YAMLError:
        return False
    return plain


_NODE_EVENTS = frozenset((yaml.ScalarEvent, yaml.AliasEvent, *_OPENS))
_CLOSE_EVENTS = frozenset(_CLOSES)


class LimitExceeded(yaml.YAMLError):
    """A document refused while it is read, before it can grow in memory."""

    def __init__(self, mark: yaml.Mark | None, problem: str):
        super().__init__(problem)
        self.problem_mark = mark
        self.problem = problem


class KubernetesScalars(yaml.constructor.SafeConstructor):
    """Scalars decoded the way Kubernetes' YAML decoder does: timestamps stay strings (it keeps
    `2024-01-01` as text); an integer too long for Python to convert is kept as a HugeInteger for
    admission to refuse."""

    def construct_yaml_int(self, node: yaml.ScalarNode) -> Any:
        try:
            return super().construct_yaml_int(node)
        except ValueError:  # beyond Python's 4,300-digit limit on converting text to int
            return HugeInteger(node.value)


class ManifestLoader(KubernetesScalars, yaml.SafeLoader):
    """PyYAML's pure-Python safe loader, bounded, with Kubernetes' scalars.

    - Nesting is capped while nodes are composed (PyYAML's composer recurses, so a 10,000-deep
      document would otherwise end in a RecursionError).
    - Each document's size is measured on its node graph, where an alias is one shared node,
      before anything is built: a few hundred bytes of nested aliases ("billion laughs") expand
      to gigabytes and are refused in microseconds. An alias to its own ancestor is refused too.
    """

    def __init__(self, stream: Any):
        super().__init__(stream)
        self._depth = 0
        self.duplicates: list[tuple[str, str]] = []

    def compose_node(self, parent: Any, index: Any) -> Any:
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise LimitExceeded(self.peek_event().start_mark,
                                    f"nested more than {MAX_DEPTH} levels deep (inferplane's limit; Kubernetes' "
                                    "JSON decoder stops at 10,000): flatten the structure")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_document(self, node: yaml.Node) -> Any:
        size, depth, aliased = expanded_size(node)
        if depth > MAX_DEPTH:
            raise LimitExceeded(node.start_mark, f"aliases expand it to more than {MAX_DEPTH} levels deep "
                                                 f"(inferplane's limit): write the nested values out")
        # Without aliases the object is no larger than its text: admission names its Kind/name.
        if aliased and size > MAX_OBJECT_BYTES:
            raise LimitExceeded(node.start_mark, size_problem(size, "the document, with its aliases expanded,"))
        self.duplicates = duplicate_keys(node)  # before construction, which folds merge keys into the nodes
        return super().construct_document(node)


_MAP_TAG, _SEQ_TAG = "tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"
_CACHED_SCALAR_LENGTH = 64
_SPECIAL_KEY_TAGS = ("tag:yaml.org,2002:merge", "tag:yaml.org,2002:value")


class FastManifestLoader(KubernetesScalars, yaml.CSafeLoader):
    """libyaml's parser and composer with Kubernetes' scalars: only for text `_survey` cleared.

    That text has no aliases, so every node is built once, directly: PyYAML's generic constructor tracks
    shared and recursive nodes through generators, which cost more than libyaml's parsing. Plain
    mappings (scalar keys, no merge keys) and sequences are built here, scalars by the loader's own
    constructor for their tag; anything else (`!!set`, `<<`, complex keys, unknown tags) goes through
    PyYAML's constructor as before, so the result (or error) is the same."""

    def resolve(self, kind: type, value: Any, implicit: tuple[bool, bool]) -> str:
        # A plain scalar's tag depends on its text alone (no path resolvers): the same few texts
        # (`true`, names, counts) recur in every manifest of a fleet.
        if kind is yaml.ScalarNode and implicit[0] and len(value) <= _CACHED_SCALAR_LENGTH:
            return _plain_scalar_tag(value)
        return super().resolve(kind, value, implicit)

    def construct_document(self, node: yaml.Node) -> Any:
        self.duplicates = duplicate_keys(node)  # before construction, which folds merge keys into the nodes
        data = self._build(node)
        # What PyYAML's constructor remembers per document (its deep construction leaves no pending state).
        self.constructed_objects, self.recursive_objects = {}, {}
        return data

    def _build(self, node: yaml.Node) -> Any:
        if isinstance(node, yaml.ScalarNode):
            constructor = self.yaml_constructors.get(node.tag)
            if constructor is not None:
                return constructor(self, node)
        elif isinstance(node, yaml.SequenceNode) and node.tag == _SEQ_TAG:
            return [self._build(child) for child in node.value]
        elif isinstance(node, yaml.MappingNode) and node.tag == _MAP_TAG and all(
                isinstance(key, yaml.ScalarNode) and key.tag not in _SPECIAL_KEY_TAGS for key, _ in node.value):
            return {self._build(key): self._build(value) for key, value in node.value}
        return self.construct_object(node, deep=True)


@functools.lru_cache(maxsize=4096)
def _plain_scalar_tag(value: str) -> str:
    # The resolver reads only class-level tables, so the class stands in for an instance.
    return yaml.resolver.BaseResolver.resolve(FastManifestLoader, yaml.ScalarNode, value, (True, False))


for _loader in (ManifestLoader, FastManifestLoader):
    _loader.add_constructor("tag:yaml.org,2002:timestamp", yaml.SafeLoader.construct_yaml_str)
    _loader.add_constructor("tag:yaml.org,2002:int", KubernetesScalars.construct_yaml_int)


def duplicate_keys(root: yaml.Node) -> list[tuple[str, str]]:
    """(field path, message) for every key a mapping of the document repeats: the API server's strict
    decoding refuses them, where a YAML loader keeps the last one silently. A merge key (`<<`) repeats
    nothing: the keys it brings in may be overridden. Iterative; a shared (aliased) node is read once."""
    found: list[tuple[int, str, str]] = []
    read: set[int] = set()
    stack: list[tuple[yaml.Node, str]] = [(root, "")]
    while stack:
        node, path = stack.pop()
        if id(node) in read:
            continue
        read.add(id(node))
        if isinstance(node, yaml.MappingNode):
            keys = set()
            for key, value in node.value:
                name = key.value if isinstance(key.value, str) else "?"
                if key.tag == _STR_TAG:  # only a scalar's tag is str
                    if name in keys:
                        found.append((key.start_mark.index, _join(path, name),
                                      f"duplicate field \"{name}\": a key appears once in a mapping (the API server "
                                      "refuses a repeated one): remove one of them"))
                    keys.add(name)
                if not isinstance(value, yaml.ScalarNode):
                    stack.append((value, f"{path}.{name}" if path else name))
        elif isinstance(node, yaml.SequenceNode):
            stack += [(child, f"{path}[{index}]") for index, child in enumerate(node.value)
                      if not isinstance(child, yaml.ScalarNode)]
    return [(path, message) for _, path, message in sorted(found)]


_STR_TAG = "tag:yaml.org,2002:str"


def expanded_size(root: yaml.Node) -> tuple[int, int, bool]:
    """(approximate JSON bytes, depth, whether any node is shared) of a node graph with every alias expanded.

    Iterative and memoised per node, so shared subtrees are measured once however often they are
    referenced; an alias that points at one of its own ancestors makes the size infinite.
    """
    done: dict[int, tuple[int, int]] = {}
    open_: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    aliased = False
    while stack:
        node, children_done = stack.pop()
        if id(node) in done:
            aliased = True
            continue
        if isinstance(node, yaml.ScalarNode):
            done[id(node)] = (len(node.value) + 3, 1)  # quotes and a separator
            continue
        children = [n for pair in node.value for n in pair] if isinstance(node, yaml.MappingNode) \
            else list(node.value)
        if children_done:
            open_.discard(id(node))
            sizes = [done[id(c)] for c in children]
            done[id(node)] = (2 + sum(s for s, _ in sizes), 1 + max((d for _, d in sizes), default=0))
            continue
        if id(node) in open_:
            raise LimitExceeded(node.start_mark, "an alias refers to a node that contains it, which makes the "
                                                 "document infinitely large: remove the recursive alias")
        open_.add(id(node))
        stack.append((node, True))
        for child in children:
            if id(child) in open_:
                raise LimitExceeded(child.start_mark, "an alias refers to a node that contains it, which makes "
                                                      "the document infinitely large: remove the recursive alias")
            if id(child) not in done:
                stack.append((child, False))
            else:
                aliased = True
    return (*done[id(root)], aliased)
