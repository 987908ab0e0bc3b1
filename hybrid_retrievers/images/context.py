"""The context a RAG prompt receives from multimodal results, with image results marked.

A language model that reads an image's description as if it were a paragraph will quote
it as text ("the document says a diagram shows..."). Marking each passage as ``[IMAGE]``
or ``[TEXT]``, with its source, lets the prompt tell the model what it is reading and
ask it to say what an image shows and cite it: the lesson's ``generate_answer`` step
(module 6, "[IMAGEN]" / "[TEXTO]").

`format_context` takes what any retriever returns: core `Hit` or `Doc` objects,
LangChain ``Document`` objects (``page_content``) or LlamaIndex nodes (``get_content()``),
with or without a score wrapper (``NodeWithScore``'s ``node``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["format_context"]


def format_context(
    results: Iterable[Any],
    *,
    image_marker: str = "[IMAGE]",
    text_marker: str = "[TEXT]",
    source_keys: tuple[str, ...] = ("image", "source", "file"),
    separator: str = "\n\n---\n\n",
) -> str:
    """One string of passages, each headed by its marker and source, for a RAG prompt.

    A result is an image when its metadata ``type`` is ``"image"``; its source is the
    first of ``source_keys`` in its metadata (the image path for an image).

    Example:
        >>> from hybrid_retrievers import Doc
        >>> print(format_context([
        ...     Doc("t1", "Services talk through a queue.", {"source": "notes.md"}),
        ...     Doc("i1", "A diagram of two services and a queue.",
        ...         {"type": "image", "image": "arch.png"}),
        ... ]))
        [TEXT] (source: notes.md)
        Services talk through a queue.
        <BLANKLINE>
        ---
        <BLANKLINE>
        [IMAGE] (source: arch.png)
        A diagram of two services and a queue.
    """
    parts = []
    for i, result in enumerate(results):
        text, metadata = _text_and_metadata(result, i)
        marker = image_marker if metadata.get("type") == "image" else text_marker
        source = next((str(metadata[k]) for k in source_keys if metadata.get(k)), None)
        head = marker if source is None else f"{marker} (source: {source})"
        parts.append(f"{head}\n{text}")
    return separator.join(parts)


def _text_and_metadata(result: Any, i: int) -> tuple[str, Mapping[str, Any]]:
    result = getattr(result, "doc", None) or getattr(result, "node", None) or result
    metadata = getattr(result, "metadata", None)
    if not isinstance(metadata, Mapping):
        metadata = {}
    for attr in ("page_content", "text"):
        value = getattr(result, attr, None)
        if isinstance(value, str):
            return value, metadata
    get_content = getattr(result, "get_content", None)
    if callable(get_content):
        return str(get_content()), metadata
    raise TypeError(
        f"results[{i}] has no text: expected a Hit, Doc, LangChain Document or LlamaIndex "
        f"node, got {type(result).__name__}"
    )
