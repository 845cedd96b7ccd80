"""The simulated provider: what the cloud and the target clusters do with applied resources.

Managed resources (cloud clusters and pools, Helm releases, Kubernetes objects) become ready as
soon as they are applied, as a provider reports them once the external resource exists. inferplane's
own kinds never reach it: the reconciler hands composed composites to their composition functions.
"""

from __future__ import annotations

from inferplane.engine.store import Resource


class SimulatedProvider:
    def observe(self, obj: Resource) -> dict:
        """The status the provider reports for an applied managed resource."""
        status = dict(obj.get("status") or {})
        status["conditions"] = [
            {"type": "Ready", "status": "True", "reason": "Available", "message": ""},
            {"type": "Synced", "status": "True", "reason": "ReconcileSuccess", "message": ""},
        ]
        status.setdefault("atProvider", {})
        return status
