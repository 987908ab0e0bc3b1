"""`PlanSettings`: a fusion's settings read back from its `FusionPlan`, written once.

A fusion object (the core's `FusionSearcher`, a framework adapter's fusion retriever)
holds its settings in one `FusionPlan` (``self._plan``), which checked them; this mixin
exposes them as read-only properties, so every fusion reports them the same way.
"""

from __future__ import annotations

from .candidates import Dedup
from .modes import FusionMode
from .plan import FusionPlan, Weights

__all__ = ["PlanSettings"]


class PlanSettings:
    """Mixin: ``weights``, ``mode``, ``k_rrf`` and ``dedup`` of ``self._plan``."""

    _plan: FusionPlan

    @property
    def weights(self) -> Weights | None:
        """The weights as given (a tuple, a callable, or ``None`` for all 1)."""
        return self._plan.weights

    @property
    def mode(self) -> FusionMode:
        """The `FusionMode`."""
        return self._plan.mode

    @property
    def k_rrf(self) -> float:
        """The RRF constant."""
        return self._plan.k_rrf

    @property
    def dedup(self) -> Dedup:
        """What counts as the same document (`Dedup`)."""
        return self._plan.dedup
