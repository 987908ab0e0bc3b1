"""Import optional dependencies with an error that names the extra to install."""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["require", "is_available"]


def require(module: str, *, extra: str, feature: str) -> ModuleType:
    """Import ``module`` or raise ImportError telling which extra provides it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(
            f"{feature} needs the optional dependency {module!r}, which is not installed. "
            f"Install it with: pip install 'hybrid-retrievers[{extra}]'"
        ) from exc


def is_available(module: str) -> bool:
    """True when ``module`` can be imported."""
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True
