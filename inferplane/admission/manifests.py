"""Reading manifests from files and folders: every document with where it came from."""

from __future__ import annotations

import functools
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from inferplane.admission.limits import MAX_DEPTH, MAX_OBJECT_BYTES, HugeInteger, size_problem

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
# `-f -` reads the manifests from standard input, as kubectl does; their source is named so.
STDIN = "-"
STDIN_SOURCE = "<stdin>"


@dataclass(frozen=True)
class Manifest:
    source: str  # "path" or "path#2" for the third document of a file
    body: dict[str, Any]


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


def load(paths: list[Path]) -> tuple[list[Manifest], list[LoadError]]:
    manifests: list[Manifest] = []
    errors: list[LoadError] = []
    stdin_read = False
    for root in paths:
        if str(root) == STDIN:
            if not stdin_read:  # standard input can be read once: `-f - -f -` means it once
                stdin_read = True
                _load_stdin(manifests, errors)
            continue
        if not root.exists():
            errors.append(LoadError(str(root), "no such file or folder"))
            continue
        for path in manifest_files(root):
            _load_file(path, manifests, errors)
    return manifests, errors


def _load_stdin(manifests: list[Manifest], errors: list[LoadError]) -> None:
    try:
        text = sys.stdin.read()
    except (OSError, UnicodeDecodeError) as exc:
        errors.append(LoadError(STDIN_SOURCE, f"cannot read standard input: {exc}"))
        return
    _load_text(STDIN_SOURCE, text, manifests, errors)


def _load_file(path: Path, manifests: list[Manifest], errors: list[LoadError]) -> None:
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        errors.append(LoadError(str(path), f"cannot read: {exc}"))
        return
    _load_text(str(path), text, manifests, errors)


def _load_text(path: str, text: str, manifests: list[Manifest], errors: list[LoadError]) -> None:
    try:
        documents = parse(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        message = problem if isinstance(exc, LimitExceeded) else f"malformed YAML: {problem}: fix the syntax at this line"
        errors.append(LoadError(where, message))
        return
    many = sum(d is not None for d in documents) > 1
    for index, document in enumerate(documents):
        source = f"{path}#{index}" if many else str(path)
        if document is None:
            continue
        if not isinstance(document, dict):
            errors.append(LoadError(source, f"a manifest must be a mapping with apiVersion, kind and metadata, "
                                            f"not a {type(document).__name__}"))
            continue
        if document.get("kind") == "List" and isinstance(document.get("items"), list):
            # kubectl's List (what `get -o yaml` prints): each item is a manifest of its own.
            for position, item in enumerate(document["items"]):
                where = f"{source} items[{position}]"
                if isinstance(item, dict):
                    manifests.append(Manifest(where, item))
                else:
                    errors.append(LoadError(where, f"a List item must be a mapping with apiVersion, kind and "
                                                   f"metadata, not a {type(item).__name__}"))
            continue
        manifests.append(Manifest(source, document))


def parse(text: str) -> list[Any]:
    """Every document of a YAML text: by libyaml when the text is plainly within the limits, else by
    the bounded pure-Python loader, which reports what is wrong with its own message and position.

    libyaml composes the node tree recursively in C and expands aliases without measuring them, so it
    only sees text that `_plainly_bounded` cleared: no aliases, nesting well inside MAX_DEPTH. Any
    error it raises is reported by the bounded loader instead, so the messages are the same whichever
    loader reads a file (libyaml is ~10x faster, which is most of a no-op re-apply's time).
    """
    if _plainly_bounded(text):
        try:
            return list(yaml.load_all(text, Loader=FastManifestLoader))
        except yaml.YAMLError:
            pass
    return list(yaml.load_all(text, Loader=ManifestLoader))


_OPENS = (yaml.MappingStartEvent, yaml.SequenceStartEvent)
_CLOSES = (yaml.MappingEndEvent, yaml.SequenceEndEvent)


# Every collection opens with one of these: a flow one with its bracket, a block mapping's entries
# with `:` or `?`, a block sequence's with `-`. Each occurrence opens at most one collection.
_COLLECTION_INDICATORS = "[{:?-"


def _plainly_bounded(text: str) -> bool:
    """True when the text has no alias and no collection nested MAX_DEPTH - 1 deep (a scalar inside
    is one level more).

    Counting indicator characters bounds the nesting from above in microseconds, which settles a
    manifest of a few dozen lines; longer texts are read through libyaml's event stream, which keeps
    no tree and does not recurse."""
    if "*" not in text and sum(text.count(c) for c in _COLLECTION_INDICATORS) < MAX_DEPTH - 1:
        return True
    depth = 0
    try:
        for event in yaml.parse(text, Loader=yaml.CSafeLoader):
            if isinstance(event, _OPENS):
                depth += 1
                if depth >= MAX_DEPTH:
                    return False
            elif isinstance(event, _CLOSES):
                depth -= 1
            elif isinstance(event, yaml.AliasEvent):
                return False
    except yaml.YAMLError:
        return False
    return True


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
        return super().construct_document(node)


_MAP_TAG, _SEQ_TAG = "tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"
_CACHED_SCALAR_LENGTH = 64
_SPECIAL_KEY_TAGS = ("tag:yaml.org,2002:merge", "tag:yaml.org,2002:value")


class FastManifestLoader(KubernetesScalars, yaml.CSafeLoader):
    """libyaml's parser and composer with Kubernetes' scalars: only for text `_plainly_bounded` cleared.

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
