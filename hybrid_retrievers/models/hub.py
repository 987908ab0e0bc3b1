"""Deciding, before a model loads, whether its name can load here: fail fast offline.

A model given by a hub name (``"cross-encoder/ms-marco-MiniLM-L-6-v2"``) is fetched by
huggingface_hub, which retries an unreachable Hub for over a minute (5 retries of each
file, with back-off) before its error. On a machine without the Hub (offline, behind a
firewall, or a CI runner that reaches only a package mirror) that is a minute of silence
followed by a traceback. `prepare_hub_load` answers first, in milliseconds:

* a local folder, or ``HF_HUB_OFFLINE=1`` (huggingface_hub then never calls out): load as
  asked;
* the Hub's host resolves: load as asked (downloads or revalidates the cache);
* the Hub is unreachable but the model is in the local Hugging Face cache: load it from
  the cache without calling out (``local_files_only=True``);
* the Hub is unreachable and the model is not cached: `ModelUnavailableError` at once,
  naming the model and the fix (a local folder).
"""

from __future__ import annotations

import os
import socket
import urllib.parse
from typing import Any

__all__ = ["ModelUnavailableError", "hub_reachable", "prepare_hub_load"]


class ModelUnavailableError(OSError):
    """A model named by its hub id cannot load here: not a local folder, not in the local
    Hugging Face cache, and the Hub cannot be reached."""


def hub_reachable(endpoint: str | None = None) -> bool:
    """Whether the Hugging Face Hub's host (``HF_ENDPOINT``, default huggingface.co)
    resolves to an address: a DNS answer, not a download (a blocked network answers "no"
    in milliseconds; an allowed one is trusted to the loader's own error handling)."""
    endpoint = endpoint or os.environ.get("HF_ENDPOINT") or "https://huggingface.co"
    host = urllib.parse.urlsplit(endpoint).hostname
    if not host:
        return False
    try:
        socket.getaddrinfo(host, 443)
    except (OSError, UnicodeError):
        return False
    return True


def _offline_mode() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def _in_local_cache(name: str) -> bool:
    """Whether the hub model ``name`` has files in the local Hugging Face cache."""
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:  # pragma: no cover - sentence-transformers depends on it
        return False
    for filename in ("config.json", "modules.json", "config_sentence_transformers.json"):
        try:
            found = try_to_load_from_cache(name, filename)
        except Exception:  # a name that is not a valid repo id: not cached
            return False
        if isinstance(found, str):
            return True
    return False


def prepare_hub_load(name: str | None, model_kwargs: dict[str, Any], *, what: str) -> None:
    """Check that ``name`` can load before the loader is called (see the module doc);
    may set ``model_kwargs["local_files_only"] = True``.

    Args:
        name: the model name or path given to a wrapper (``None``: a loaded instance).
        model_kwargs: the keyword arguments the loader will get (changed in place).
        what: the wrapper, for the message (``"SentenceTransformerEmbedder"``...).

    Raises:
        ModelUnavailableError: the name is not a local folder, the model is not cached
            and the Hub is unreachable.
    """
    if name is None or os.path.exists(os.path.expanduser(name)) or _offline_mode() \
            or model_kwargs.get("local_files_only"):
        return
    if hub_reachable():
        return
    if _in_local_cache(name):
        model_kwargs["local_files_only"] = True
        return
    raise ModelUnavailableError(
        f"{what}: cannot load model {name!r}: it is not a local folder, it is not in the "
        "local Hugging Face cache, and the Hugging Face Hub cannot be reached from this "
        "machine. Pass the path of a model folder (one saved with save() / "
        "save_pretrained(), or copied from a machine that has the Hub), or run where the "
        "Hub is reachable."
    )
