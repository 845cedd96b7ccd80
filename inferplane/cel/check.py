"""Static checks of a DRA device selector, as the API server makes them on a ResourceClaim: its
length, its types against the declared `device` variable, its nesting and its estimated cost.

The evaluating library (`cel`, Rust) parses but does not type-check, so the checks run on Google's
reference implementation (`cel-expr-python`, cel-cpp's checker) with the environment Kubernetes
declares for selectors: `device` as an object with `driver` (string), `attributes` (domain -> name
-> any value), `capacity` (domain -> name -> quantity) and `allowMultipleAllocations` (bool), the
standard library with the string, math and encoder extensions, and Kubernetes' quantity and semver
libraries. Only what passes here reaches the evaluator, whose parser crashes the process on some
deeply nested expressions that the checker refuses cleanly.
"""

from __future__ import annotations

import functools
import re

from cel_expr_python import cel as cpp
from cel_expr_python.ext import ext_encoders, ext_math, ext_strings
from google.protobuf import descriptor_pb2, descriptor_pool, struct_pb2

from .source import tokens

# resourceapi.CELSelectorExpressionMaxLength and CELSelectorExpressionMaxCost (k8s.io/api/resource).
MAX_SELECTOR_LENGTH = 10 * 1024
MAX_SELECTOR_COST = 1_000_000
# resourceapi.ResourceSliceMaxAttributesAndCapacitiesPerDevice: the most entries a device's
# attribute or capacity map holds, which bounds a comprehension over one; and the longest string an
# attribute holds (DeviceAttributeMaxValueLength), which bounds a string function's work.
MAX_DEVICE_ENTRIES = 32
MAX_STRING_LENGTH = 64
# Macros whose body runs once per element.
_COMPREHENSIONS = {"all", "exists", "exists_one", "map", "filter"}
# Functions whose work grows with the length of the string they read.
_STRING_WORK = {"matches", "contains", "startsWith", "endsWith", "indexOf", "lastIndexOf", "replace", "split",
                "lowerAscii", "upperAscii", "substring", "trim", "charAt", "join", "reverse"}

DEVICE_TYPE = "inferplane.dra.Device"


def _device_pool() -> descriptor_pool.DescriptorPool:
    """`device` as a message: typed fields, unknown ones refused; attribute and capacity domains
    are Structs (maps of any value) because their names are data."""
    pool = descriptor_pool.DescriptorPool()
    struct_file = descriptor_pb2.FileDescriptorProto()
    struct_pb2.DESCRIPTOR.CopyToProto(struct_file)
    pool.Add(struct_file)
    field = descriptor_pb2.FieldDescriptorProto
    device_file = descriptor_pb2.FileDescriptorProto(name="inferplane/dra/device.proto", package="inferplane.dra",
                                                     syntax="proto3", dependency=[struct_file.name])
    device = device_file.message_type.add(name="Device")
    device.field.add(name="driver", number=1, type=field.TYPE_STRING, label=field.LABEL_OPTIONAL)
    for number, name in ((2, "attributes"), (3, "capacity")):
        entry = device.nested_type.add(name=f"{name.capitalize()}Entry")
        entry.options.map_entry = True
        entry.field.add(name="key", number=1, type=field.TYPE_STRING, label=field.LABEL_OPTIONAL)
        entry.field.add(name="value", number=2, type=field.TYPE_MESSAGE, label=field.LABEL_OPTIONAL,
                        type_name=".google.protobuf.Struct")
        device.field.add(name=name, number=number, type=field.TYPE_MESSAGE, label=field.LABEL_REPEATED,
                         type_name=f".{DEVICE_TYPE}.{entry.name}")
    device.field.add(name="allowMultipleAllocations", number=4, type=field.TYPE_BOOL, label=field.LABEL_OPTIONAL)
    pool.Add(device_file)
    return pool


def _kubernetes_library() -> list[cpp.FunctionDecl]:
    """Kubernetes' quantity and semver libraries, as declarations (inferplane evaluates them)."""
    T = cpp.Type
    quantity, semver = T.AbstractType("kubernetes.Quantity"), T.AbstractType("kubernetes.Semver")

    def decl(name: str, *overloads: tuple[str, T, list[T], bool]) -> cpp.FunctionDecl:
        return cpp.FunctionDecl(name, [cpp.Overload(id=i, return_type=r, parameters=p, is_member=m)
                                       for i, r, p, m in overloads])

    return [
        decl("quantity", ("quantity_string", quantity, [T.STRING], False)),
        decl("isQuantity", ("is_quantity_string", T.BOOL, [T.STRING], False)),
        decl("semver", ("semver_string", semver, [T.STRING], False),
             ("semver_string_bool", semver, [T.STRING, T.BOOL], False)),
        decl("isSemver", ("is_semver_string", T.BOOL, [T.STRING], False),
             ("is_semver_string_bool", T.BOOL, [T.STRING, T.BOOL], False)),
        decl("compareTo", ("quantity_compare", T.INT, [quantity, quantity], True),
             ("semver_compare", T.INT, [semver, semver], True)),
        decl("isGreaterThan", ("quantity_greater", T.BOOL, [quantity, quantity], True),
             ("semver_greater", T.BOOL, [semver, semver], True)),
        decl("isLessThan", ("quantity_less", T.BOOL, [quantity, quantity], True),
             ("semver_less", T.BOOL, [semver, semver], True)),
        decl("add", ("quantity_add", quantity, [quantity, quantity], True),
             ("quantity_add_int", quantity, [quantity, T.INT], True)),
        decl("sub", ("quantity_sub", quantity, [quantity, quantity], True),
             ("quantity_sub_int", quantity, [quantity, T.INT], True)),
        decl("asInteger", ("quantity_as_integer", T.INT, [quantity], True)),
        decl("isInteger", ("quantity_is_integer", T.BOOL, [quantity], True)),
        decl("asApproximateFloat", ("quantity_as_float", T.DOUBLE, [quantity], True)),
        decl("sign", ("quantity_sign", T.INT, [quantity], True)),
        decl("major", ("semver_major", T.INT, [semver], True)),
        decl("minor", ("semver_minor", T.INT, [semver], True)),
        decl("patch", ("semver_patch", T.INT, [semver], True)),
        # cel-go's sets and lists extensions, which Kubernetes environments carry (not lists.range:
        # a range of any length would defeat the cost estimate).
        *(decl(f"sets.{name}", (f"sets_{name}", T.BOOL, [T.List(T.DYN), T.List(T.DYN)], False))
          for name in ("contains", "equivalent", "intersects")),
        *(decl(name, (f"list_{name}", T.List(T.DYN), [T.List(T.DYN)], True)) for name in ("distinct", "flatten", "sort")),
        decl("slice", ("list_slice", T.List(T.DYN), [T.List(T.DYN), T.INT, T.INT], True)),
    ]


@functools.cache
def _selector_env() -> cpp.Env:
    return cpp.NewEnv(descriptor_pool=_device_pool(), variables={"device": cpp.Type(DEVICE_TYPE)},
                      extensions=[ext_strings.ExtStrings(), ext_math.ExtMath(), ext_encoders.ExtEncoders()],
                      functions=_kubernetes_library())


_LOCATION = re.compile(r"(?:INVALID_ARGUMENT|CANCELLED): (?:ERROR: <input>:(-?\d+):(-?\d+): )?")


def _readable(error: Exception) -> str:
    """The checker's first diagnosis, as `at line:column: what` without the source excerpt."""
    first = str(error).split("\n", 1)[0]
    match = _LOCATION.match(first)
    detail = _LOCATION.sub("", first, count=1).replace(" [INVALID_ARGUMENT]", "").replace(" [CANCELLED]", "")
    if "recursion" in detail:
        return "nested too deeply (the checker's limit is 32 levels): split it into several selectors"
    line, column = (match.group(1), match.group(2)) if match else (None, None)
    where = f"at {line}:{column}: " if line and not line.startswith("-") else ""
    return where + detail.strip()


def estimated_cost(expression: str) -> int:
    """An upper bound on the work of one evaluation, in Kubernetes' cost units (about one per
    operation): every token costs 1, a string function the longest string it can read, and a
    comprehension's body runs once per element of the largest list it can walk: a device's map
    (at most 32 entries) or a list literal of the expression (at most one element per comma)."""
    toks = tokens(expression)
    any_list = max(MAX_DEVICE_ENTRIES, sum(t.text == "," for t in toks) + 1)
    cost, multiplier, pending = 0, 1, 0
    stack: list[int] = []  # per open parenthesis: the factor it multiplied the cost by
    for i, token in enumerate(toks):
        method = token.kind == "ident" and i > 1 and toks[i - 1].text == "." \
            and i + 1 < len(toks) and toks[i + 1].text == "("
        if method and token.text in _COMPREHENSIONS:
            pending = _literal_size(toks, i - 2) or any_list
        elif method and token.text in _STRING_WORK:
            cost += multiplier * MAX_STRING_LENGTH
        if token.text == "(":
            stack.append(pending or 1)
            multiplier *= pending or 1
            pending = 0
        elif token.text == ")" and stack:
            multiplier //= stack.pop()
        cost += multiplier
    return cost


def _literal_size(toks: list, close: int) -> int | None:
    """Elements of the list literal ending at toks[close] (a `]`), or None when it is not one."""
    if toks[close].text != "]":
        return None
    depth, commas = 0, 0
    for j in range(close, -1, -1):
        depth += {"]": 1, ")": 1, "}": 1, "[": -1, "(": -1, "{": -1}.get(toks[j].text, 0)
        if depth == 1 and toks[j].text == ",":
            commas += 1
        if depth == 0:
            index_or_literal = j > 0 and (toks[j - 1].kind in ("ident", "string") or toks[j - 1].text in ("]", ")"))
            return None if index_or_literal else (0 if close == j + 1 else commas + 1)
    return None


def selector_problems(expression: str) -> list[str]:
    """Why Kubernetes would refuse `expression` as a device selector (empty when it would not)."""
    if len(expression) > MAX_SELECTOR_LENGTH:
        return [f"is {len(expression)} characters long, over the {MAX_SELECTOR_LENGTH} a selector may have "
                "(Kubernetes' CELSelectorExpressionMaxLength): shorten it or split it into several selectors"]
    try:
        checked = _selector_env().compile(expression)
    except Exception as error:  # noqa: BLE001 - the checker reports every refusal as an exception
        return [f"not a valid CEL expression: {_readable(error)}"]
    result = checked.return_type().name()
    if result not in ("BOOL", "DYN"):
        return [f"must evaluate to bool, not {result.lower()}: compare the value, e.g. device.driver == \"gpu.nvidia.com\""]
    cost = estimated_cost(expression)
    if cost > MAX_SELECTOR_COST:
        return [f"estimated cost {cost:,} exceeds the budget of {MAX_SELECTOR_COST:,} per selector (Kubernetes' "
                "CELSelectorExpressionMaxCost, about 1 ms of evaluation): nest fewer comprehensions"]
    return []
