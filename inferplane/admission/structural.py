"""Structural-schema semantics shared by admission and CRD checks: defaulting, list-map keys and
`x-kubernetes-validations` CEL rules, planned once per schema and applied per object."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from inferplane import cel
from inferplane.api.json_data import json_copy


def first_line(error: Exception) -> str:
    """The CEL library's diagnosis without its multi-line source excerpt."""
    lines = str(error).splitlines() or [str(error)]
    diagnosis = next((l for l in lines if "ERROR: " in l), lines[0])
    return diagnosis.split("ERROR: ", 1)[-1].replace("<input>:", "at ")


def join_path(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


@dataclass
class Plan:
    """Where a kind's schema asks for work beyond validation: defaults, rules, list keys."""

    defaults: dict[str, Any] = field(default_factory=dict)
    rules: list[dict[str, str]] = field(default_factory=list)
    properties: dict[str, "Plan"] = field(default_factory=dict)
    items: "Plan | None" = None
    values: "Plan | None" = None
    map_keys: list[str] | None = None
    # A list of type set: the API server refuses a value given twice.
    unique: bool = False
    # Whether a rule here or below reads a property by its escaped name (`__namespace__`).
    escapes: bool = False

    def empty(self) -> bool:
        return not (self.defaults or self.rules or self.properties or self.items or self.values or self.map_keys
                    or self.unique)


def _is_transition_rule(rule: str) -> bool:
    try:
        return "oldSelf" in cel.compile_expression(rule).variables
    except cel.CelError:
        return False


def plan_for(schema: dict[str, Any]) -> Plan:
    # Transition rules compare with the previous object: evaluated on update, never on create.
    plan = Plan(rules=[r for r in schema.get("x-kubernetes-validations", []) if not _is_transition_rule(r["rule"])])
    if schema.get("x-kubernetes-list-type") == "map":
        plan.map_keys = schema.get("x-kubernetes-list-map-keys")
    plan.unique = schema.get("x-kubernetes-list-type") == "set"
    for name, sub in schema.get("properties", {}).items():
        if "default" in sub:
            plan.defaults[name] = sub["default"]
        child = plan_for(sub)
        if not child.empty():
            plan.properties[name] = child
    if isinstance(schema.get("items"), dict):
        child = plan_for(schema["items"])
        plan.items = None if child.empty() else child
    if isinstance(schema.get("additionalProperties"), dict):
        child = plan_for(schema["additionalProperties"])
        plan.values = None if child.empty() else child
    children = [*plan.properties.values(), plan.items, plan.values]
    plan.escapes = any("__" in r["rule"] for r in plan.rules) or any(c is not None and c.escapes for c in children)
    return plan


def apply_defaults(plan: Plan, value: Any) -> None:
    """Structural defaulting, as the API server does before validation."""
    if isinstance(value, dict):
        for name, default in plan.defaults.items():
            if name not in value:
                value[name] = json_copy(default)
        for name, child in plan.properties.items():
            if name in value:
                apply_defaults(child, value[name])
        if plan.values:
            for item in value.values():
                apply_defaults(plan.values, item)
    elif isinstance(value, list) and plan.items:
        for item in value:
            apply_defaults(plan.items, item)


def parent_path(path: str) -> str:
    cut = max(path.rfind("."), path.rfind("["))
    return path[:cut] if cut > 0 else ""


def check_rules(plan: Plan, value: Any, path: str, out: list[tuple[str, str]], failed: set[str],
                 document: cel.Document, steps: tuple[str | int, ...] = ()) -> None:
    """List-map uniqueness and CEL rules, at every node that is present.

    `failed` holds the nodes whose own fields broke the schema: their rules would only repeat the
    schema's error in vaguer words (a wrong type, a misspelt field), so they are skipped.
    """
    if value is None:
        return
    if plan.map_keys and isinstance(value, list):
        seen: dict[tuple, int] = {}
        for index, item in enumerate(value):
            if isinstance(item, dict):
                # Keys are scalars when the schema holds; repr() keeps a broken one comparable.
                key = tuple(v if isinstance(v, (str, int, float, bool, type(None))) else repr(v)
                            for v in (item.get(k) for k in plan.map_keys))
                if key in seen:
                    label = ", ".join(f"{k}={v}" for k, v in zip(plan.map_keys, key))
                    out.append((f"{path}[{index}]", f"duplicate entry {label} (also at [{seen[key]}]): "
                                                    f"{'/'.join(plan.map_keys)} must be unique"))
                seen.setdefault(key, index)
    if plan.unique and isinstance(value, list):
        first: dict[Any, int] = {}
        for index, item in enumerate(value):
            # Items of a set are scalars when the schema holds; repr() keeps a broken one comparable.
            key = item if isinstance(item, (str, int, float, bool, type(None))) else repr(item)
            if key in first:
                out.append((f"{path}[{index}]", f"duplicate entry {item!r} (also at [{first[key]}]): a set lists "
                                                "each value once: remove it"))
            first.setdefault(key, index)
    for entry in plan.rules if path not in failed else ():
        try:
            ok = document.check(entry["rule"], steps)
        except cel.CelError as exc:
            if not failed:
                out.append((path, f"rule evaluation error ({first_line(exc)}) in: {entry['rule']}"))
            continue
        if not ok:
            where = path + entry.get("fieldPath", "") if entry.get("fieldPath") else path
            out.append((where.lstrip("."), _rule_message(entry, document, steps)))
    if isinstance(value, dict):
        for name, child in plan.properties.items():
            if name in value:
                check_rules(child, value[name], join_path(path, name), out, failed, document, steps + (name,))
        if plan.values:
            for key, item in value.items():
                check_rules(plan.values, item, join_path(path, key), out, failed, document, steps + (key,))
    elif isinstance(value, list) and plan.items:
        for index, item in enumerate(value):
            check_rules(plan.items, item, f"{path}[{index}]", out, failed, document, steps + (index,))


def _rule_message(entry: dict[str, str], document: cel.Document, steps: tuple[str | int, ...]) -> str:
    """messageExpression when it evaluates to a string, else the static message (as Kubernetes does)."""
    if "messageExpression" in entry:
        try:
            message = document.evaluate(entry["messageExpression"], steps)
            if isinstance(message, str) and message:
                return message
        except cel.CelError:
            pass
    return entry.get("message") or f"failed rule: {entry['rule']}"



def rule_failures(plan: Plan, content: Any, schema_errors: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Every list-map and rule failure of `content` (already defaulted), given its schema errors."""
    failed = {p for path, _ in schema_errors for p in (path, parent_path(path))}
    try:
        document = cel.Document(content, escape=plan.escapes)
    except cel.CelError as exc:
        return [("", f"cannot evaluate rules: {exc}")]
    out: list[tuple[str, str]] = []
    check_rules(plan, content, "", out, failed, document)
    return out
