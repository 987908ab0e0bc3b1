"""The framework-neutral halves of saving and loading a fusion of saved indexes.

`hybrid_retrievers.fusion.saving` writes and reads the folder; `FusionSearcher.save` /
`FusionSearcher.load` and the LangChain and LlamaIndex fusion adapters add only their own
class names and parameter names. What is the same for all of them lives here once: the settings a fusion records
(`fusion_settings`), loading each child by kind with one message for a missing
model (`load_children`), and refusing to restore a callable weights rule that was
never saved (`check_weights_restorable`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

__all__ = ["check_weights_restorable", "fusion_settings", "load_children"]

ChildLoader = Callable[[Path, int], Any]
"""``load(child folder, k)``: one saved child back (a core index or an adapter retriever)."""


def fusion_settings(plan: Any, **extra: Any) -> dict[str, Any]:
    """The settings a saved fusion records: the weights, mode, RRF constant, names and
    dedup policy of ``plan`` (a `FusionPlan`), then the saver's own ``extra`` keys (an
    adapter's depth ``k``, the core's ``fetch_k``...).

    A callable weights rule is not saved; ``weights_callable`` records that there was
    one, so that `check_weights_restorable` can ask for it on load. Names that are only
    the children's indexes are saved as ``None``.
    """
    weights, names = plan.weights, tuple(plan.names)
    return {
        "weights": None if weights is None or callable(weights) else list(weights),
        "weights_callable": callable(weights),
        "mode": plan.mode.value,
        "k_rrf": plan.k_rrf,
        "names": None if names == tuple(range(len(names))) else list(names),
        "dedup": plan.dedup.value,
        **extra,
    }


def load_children(
    folder: str | os.PathLike[str],
    entries: Iterable[tuple[str, Path, Mapping[str, Any]]],
    loaders: Mapping[str, ChildLoader],
    *,
    model: Any,
    model_arg: str,
    method: str,
    sparse_model: Any = None,
    sparse_model_arg: str = "sparse_embedder",
) -> list[Any]:
    """Each ``(kind, folder, settings)`` entry loaded by ``loaders[kind]`` with its saved ``k``.

    A ``"vector"`` child embeds queries with ``model``, a ``"sparse"`` one with
    ``sparse_model``; a nested ``"fusion"`` child is checked by its own loader against
    the legs it really has (a BM25 + sparse hybrid needs no dense model).

    Raises:
        ValueError: naming the argument and ``method``, for a child without its model.
    """
    children = []
    for kind, path, child in entries:
        if kind == "sparse":
            if sparse_model is None:
                raise ValueError(
                    f"{str(folder)!r} holds a learned sparse child: pass {sparse_model_arg}= "
                    f"(the sparse model the index was built with) to {method}"
                )
        elif kind == "vector" and model is None:
            raise ValueError(
                f"{str(folder)!r} holds a dense child: pass {model_arg}= (the model the "
                f"index was built with) to {method}"
            )
        children.append(loaders[kind](path, child.get("k", 4)))
    return children


def check_weights_restorable(
    settings: dict[str, Any], overrides: Mapping[str, Any], folder: str | os.PathLike[str],
    method: str,
) -> None:
    """Pop ``weights_callable`` from ``settings``; refuse a saved callable rule not passed back.

    Raises:
        ValueError: naming ``method``, when the fusion had a callable weights rule and
            ``overrides`` gives no ``weights``.
    """
    if settings.pop("weights_callable", False) and "weights" not in overrides:
        raise ValueError(
            f"{str(folder)!r} was saved with a callable weights rule, which is not saved; "
            f"pass weights= (e.g. hybrid_retrievers.fusion.lexical_boost_rule()) to {method}"
        )
