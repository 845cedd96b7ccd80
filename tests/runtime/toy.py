"""A toy kind the runtime's tests drive it with: a Shelf composes one Book a title in its spec, each a
managed resource (no function composes it), and a Library requires every Shelf and reports their count.
Nothing of inferplane's own kinds: the runtime knows none (tests/runtime/test_generic.py checks it)."""

from __future__ import annotations

from inferplane.api.function import Desired, Request, Requirement, Response

GROUP = "toy.example"
API_VERSION = f"{GROUP}/v1"


def shelf(name: str, titles: list[str]) -> dict:
    return {"apiVersion": API_VERSION, "kind": "Shelf", "metadata": {"name": name}, "spec": {"titles": titles}}


def library(name: str) -> dict:
    return {"apiVersion": API_VERSION, "kind": "Library", "metadata": {"name": name}, "spec": {}}


def compose_shelf(request: Request) -> Response:
    name = request.composite["metadata"]["name"]
    return Response(desired={title: Desired({"apiVersion": API_VERSION, "kind": "Book",
                                             "metadata": {"name": f"{name}-{title}"}, "spec": {"title": title}})
                             for title in request.composite["spec"]["titles"]})


def compose_library(request: Request) -> Response:
    shelves = request.required.get("shelves") or []
    return Response(status={"shelves": len(shelves)},
                    requirements={"shelves": Requirement(api_version=API_VERSION, kind="Shelf")})


FUNCTIONS = {"Shelf": compose_shelf, "Library": compose_library}
