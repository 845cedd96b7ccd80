"""A YAML text's documents, read within the stream limits, each with its duplicate keys.

libyaml reads a text that is plainly within the limits (no alias, nesting well inside MAX_DEPTH, as the
survey of its event stream finds); any other text, and any text libyaml refuses, is read by the bounded
pure-Python loader, which measures aliases as it expands them and says what is wrong where. Both keep
Kubernetes' scalars (a date stays text) and report every duplicate key.
"""

from __future__ import annotations

import functools
from typing import Any, Iterator

import yaml

from inferplane.admission.limits import MAX_DEPTH, MAX_OBJECT_BYTES, HugeInteger, StreamLimits, _join, size_problem


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
    try:
        return _read_events(text, limits)
    except LimitExceeded:
        raise
    except yaml.YAMLError:
        return False


def _read_events(text: str, limits: StreamLimits) -> bool:
    """`_survey` on libyaml's event stream: False at the first collection nested MAX_DEPTH deep, else
    whether no alias was seen; raises LimitExceeded at the first document over the limit."""
    plain, depth, documents = True, 0, 0  # plain: no alias so far
    root_mapping = key_next = in_items = listed = False
    key = kind = None
    items = 0
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
                # The bounded loader refuses the text at this document, and builds none after it: the
                # documents before it were counted here.
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
