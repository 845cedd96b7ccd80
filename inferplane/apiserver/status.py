"""Status errors as kube-apiserver answers them: an HTTP code, a reason and a message
(k8s.io/apimachinery pkg/api/errors/errors.go, v0.37.0: NewNotFound, NewAlreadyExists, NewConflict,
NewInvalid, NewBadRequest, NewUnauthorized, NewMethodNotSupported, NewGone)."""

from __future__ import annotations

from typing import Any


class APIError(Exception):
    """A request answered with a Status of failure."""

    def __init__(self, code: int, reason: str, message: str, details: dict[str, Any] | None = None,
                 headers: dict[str, str] | None = None):
        super().__init__(message)
        self.code, self.reason, self.message, self.details = code, reason, message, details
        self.headers = headers or {}  # sent with the Status (Retry-After)

    def status(self) -> dict[str, Any]:
        body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": self.message, "reason": self.reason, "code": self.code}
        if self.details:
            body["details"] = self.details
        return body


def resource_name(plural: str, group: str) -> str:
    """`inferenceclusters.inferplane.dev`, `secrets`: how a Status names a resource."""
    return f"{plural}.{group}" if group else plural


def not_found(plural: str, group: str, name: str) -> APIError:
    return APIError(404, "NotFound", f'{resource_name(plural, group)} "{name}" not found',
                    {"name": name, "group": group, "kind": plural})


def already_exists(plural: str, group: str, name: str) -> APIError:
    return APIError(409, "AlreadyExists", f'{resource_name(plural, group)} "{name}" already exists',
                    {"name": name, "group": group, "kind": plural})


def conflict(plural: str, group: str, name: str, why: str) -> APIError:
    return APIError(409, "Conflict", f'Operation cannot be fulfilled on {resource_name(plural, group)} "{name}": '
                    f"{why}", {"name": name, "group": group, "kind": plural})


def invalid(kind: str, group: str, name: str, causes: list[tuple[str, str]]) -> APIError:
    """422 with one cause per (field path, message); the message lists them all, as NewInvalid does. Where
    no error has a field path (an unknown kind), no cause is given: kubectl then prints the message
    rather than `: message` for each."""
    qualified = f"{kind}.{group}" if group else kind
    listed = "; ".join(f"{path}: {message}" if path else message for path, message in causes)
    details: dict = {"name": name, "group": group, "kind": kind}
    if any(path for path, _ in causes):
        details["causes"] = [{"reason": "FieldValueInvalid", "message": message, "field": path or "metadata"}
                             for path, message in causes]
    return APIError(422, "Invalid", f'{qualified} "{name}" is invalid: {listed}', details)


def bad_request(message: str) -> APIError:
    return APIError(400, "BadRequest", message)


def unauthorized() -> APIError:
    return APIError(401, "Unauthorized", "Unauthorized: send the bearer token of the kubeconfig "
                    "`inferplane serve` wrote (its path is printed when it starts)")


def method_not_supported(what: str, method: str) -> APIError:
    return APIError(405, "MethodNotAllowed", f"{method} is not supported on {what}")


def unsupported_media_type(media: str, accepted: list[str]) -> APIError:
    return APIError(415, "UnsupportedMediaType", f"the body of the request was in an unknown format - accepted "
                    f"media types include: {', '.join(accepted)} (got {media or 'none'})")


def gone(version: str, oldest: int) -> APIError:
    return APIError(410, "Expired", f"too old resource version: {version} ({oldest}): list again and watch "
                    "from the list's resourceVersion")


def impersonation_refused(headers: list[str]) -> APIError:
    """kube-apiserver answers an impersonation its user may not make 403 Forbidden (k8s.io/apiserver
    pkg/endpoints/filters/impersonation.go, v0.37.0: responsewriters.Forbidden); here there is one user,
    the token's, and nobody to impersonate, so the header is refused rather than ignored (an ignored one
    would act as the token's user while the client believes it acts as another)."""
    return APIError(403, "Forbidden", f"impersonation is not supported by inferplane serve ({', '.join(headers)} "
                    "sent): its token is its only user; send the request without --as, --as-group or --as-uid")


def too_many_watches(limit: int, retry_after: int) -> APIError:
    """429 with Retry-After, as kube-apiserver's max-in-flight filter answers (k8s.io/apiserver
    pkg/server/filters/maxinflight.go, v0.37.0: tooManyRequests sets Retry-After: 1)."""
    return APIError(429, "TooManyRequests", f"too many watches are open with this token ({limit}, inferplane serve's "
                    f"limit): close some (a kubectl get -w you left running) and retry after {retry_after} s",
                    {"retryAfterSeconds": retry_after}, {"Retry-After": str(retry_after)})
