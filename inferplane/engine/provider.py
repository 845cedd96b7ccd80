"""The simulated provider: what the cloud and the target clusters do with applied resources.

Managed resources (cloud clusters and pools, Helm releases, Kubernetes objects) become ready as
soon as they are applied, as a provider reports them once the external resource exists.
"""

from __future__ import annotations

from inferplane.engine.store import Resource

# Kinds inferplane itself owns are reconciled by composition functions or are user input; they never
# become "ready" by the provider.
_OWN_GROUPS = ("inferplane.dev", "infrastructure.inferplane.dev")


class SimulatedProvider:
    def observe(self, obj: Resource) -> dict | None:
        """The status the provider reports for an applied managed resource (None: not managed)."""
        group = obj["apiVersion"].rsplit("/", 1)[0]
        if group in _OWN_GROUPS:
            return None
        status = dict(obj.get("status") or {})
        status["conditions"] = [
            {"type": "Ready", "status": "True", "reason": "Available", "message": ""},
            {"type": "Synced", "status": "True", "reason": "ReconcileSuccess", "message": ""},
        ]
        status.setdefault("atProvider", {})
        return status
