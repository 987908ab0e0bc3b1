"""`PlanSettings`: a fusion's settings read back from its `FusionPlan`, written once.

A fusion object (the core's `FusionSearcher`, a framework adapter's fusion retriever)
holds its settings in one `FusionPlan` (``self._plan``), which checked them; this mixin
exposes them as read-only properties, so every fusion reports them the same way.
"""

from __future__ import annotations

from ..readonly import ReadOnly
from .candidates import Dedup
from .modes import FusionMode
from .plan import FusionPlan, Weights

__all__ = ["PlanSettings"]


class PlanSettings:
    """Mixin: ``weights``, ``mode``, ``k_rrf`` and ``dedup`` of ``self._plan``."""

    _plan: FusionPlan

    weights = ReadOnly[Weights | None](
        "_plan.weights", "The weights as given (a tuple, a callable, or ``None`` for all 1).")
    mode = ReadOnly[FusionMode]("_plan.mode", "The `FusionMode`.")
    k_rrf = ReadOnly[float]("_plan.k_rrf", "The RRF constant.")
    dedup = ReadOnly[Dedup]("_plan.dedup", "What counts as the same document (`Dedup`).")
