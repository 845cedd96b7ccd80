"""What a reconciler's run to the fixpoint did."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class RunReport:
    converged: bool = True
    reconciles: int = 0
    simulations: int = 0  # runs of the hosted controllers (the simulator's: target clusters simulated again)
    # How often each object was reconciled.
    reconciled: dict[str, int] = field(default_factory=dict)
    # Objects that hit the bound, with how often they were reconciled.
    unconverged: dict[str, int] = field(default_factory=dict)
    # Set when this command gave up waiting for another process's reconcile: who holds the lease.
    waited_for: str | None = None

    def add(self, other: "RunReport") -> None:
        """Count another run's work (of the same fixpoint) in this one."""
        self.converged = self.converged and other.converged
        self.reconciles += other.reconciles
        self.simulations += other.simulations
        for name, count in other.reconciled.items():
            self.reconciled[name] = self.reconciled.get(name, 0) + count
        self.unconverged.update(other.unconverged)
