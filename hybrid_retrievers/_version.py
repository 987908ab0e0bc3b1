"""The library's version, in a leaf module so that any module can read it without a circle.

The installed distribution's version when there is one, else the version of the source
checkout (``pyproject.toml``). Saved indexes record it in their manifests.
"""

from __future__ import annotations

from importlib import metadata as _metadata

try:
    __version__ = _metadata.version("hybrid-retrievers")
except _metadata.PackageNotFoundError:  # running from a source checkout
    __version__ = "0.1.0"
