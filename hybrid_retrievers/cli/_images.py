"""``--describer MODULE:ATTR``: the vision model ``index`` and ``search`` describe images with.

How images are indexed (descriptions in the text legs, CLIP vectors beside) is
`hybrid_retrievers.ingest.folder_images`; this module only finds the describer a flag
names.

The describer: ``MODULE:ATTR`` names an attribute of an importable module (the current
folder is searched after the installed packages). It is the describer itself,
``describer(image: LoadedImage, prompt: str) -> str``, unless it is a class or a callable
that takes no arguments: then it is a factory, called once to make the describer. A
module of one's own can so build any vision model, e.g. LangChain's::

    # my_describers.py
    def gpt4o():
        from langchain_openai import ChatOpenAI
        from langchain_hybrid_retrievers import ChatModelDescriber
        return ChatModelDescriber(ChatOpenAI(model="gpt-4o-mini"))

    hybrid-retrievers index notes/ --out idx --describer my_describers:gpt4o
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
from typing import Any


def load_describer(spec: str) -> Any:
    """The describer named by ``--describer MODULE:ATTR`` (see the module doc).

    Raises:
        ValueError: a malformed spec, a module that cannot be imported, a missing
            attribute, or something that is not a describer; each names ``--describer``.
    """
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name.strip() or not attr.strip():
        raise ValueError(f"--describer expects MODULE:ATTR (e.g. my_describers:vlm), got {spec!r}")
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.append(cwd)  # after the installed packages: a local file cannot shadow one
    try:
        target: Any = importlib.import_module(module_name.strip())
    except ImportError as exc:
        raise ValueError(f"--describer {spec}: cannot import module {module_name!r} ({exc})") \
            from None
    for part in attr.strip().split("."):
        if not hasattr(target, part):
            raise ValueError(f"--describer {spec}: {module_name!r} has no attribute {attr!r}")
        target = getattr(target, part)
    if _is_factory(target):
        try:
            target = target()
        except Exception as exc:  # the user's factory: say whose failure it is
            raise ValueError(f"--describer {spec}: the factory raised "
                             f"{type(exc).__name__}: {exc}") from exc
    if not callable(target):
        raise ValueError(f"--describer {spec} is a {type(target).__name__}, not a describer "
                         "(a callable (image, prompt) -> str, or a factory returning one)")
    return target


def _is_factory(target: Any) -> bool:
    """A class, or a callable that takes no arguments and cannot take two."""
    if inspect.isclass(target):
        return True
    if not callable(target):
        return False
    try:
        sig = inspect.signature(target)
    except (TypeError, ValueError):  # a builtin without a signature: call it as a describer
        return False
    try:
        sig.bind(None, None)
    except TypeError:
        pass
    else:
        return False
    try:
        sig.bind()
    except TypeError:
        return False
    return True
