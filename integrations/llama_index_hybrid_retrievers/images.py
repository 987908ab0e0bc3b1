"""A LlamaIndex multimodal LLM as an image describer (the description route of issue 31).

`MultiModalLLMDescriber` turns any vision-capable LlamaIndex LLM (``OpenAI`` with a
vision model, ``Anthropic``, ``Gemini``, ``Ollama`` with a vision model...) into the
core's `hybrid_retrievers.images.Describer`, so `describe_images` makes searchable
description documents with its cache, timeout and fallback.

llama-index-core 0.14 gives chat messages content *blocks*: the describer sends one user
`ChatMessage` with a `TextBlock` (the prompt) and an `ImageBlock` (the image's bytes and
MIME type) through ``llm.chat``, which is how every multimodal LLM of that version takes
images (the older ``MultiModalLLM.complete(prompt, image_documents)`` is the deprecated
form).
"""

from __future__ import annotations

import base64
from typing import Any

from llama_index.core.base.llms.types import ChatMessage, ImageBlock, MessageRole, TextBlock

from hybrid_retrievers.images import DEFAULT_DESCRIPTION_PROMPT, ImageInput, load_image

from ._base import checks_keywords
from ._convert import type_error
from ._llm import llm_name

__all__ = ["MultiModalLLMDescriber"]


class MultiModalLLMDescriber:
    """A LlamaIndex LLM that takes image blocks, as a `Describer`.

    Calling it sends ``llm.chat([ChatMessage(role="user", blocks=[TextBlock(prompt),
    ImageBlock(image, image_mimetype)])])`` and returns the answer's text.

    Args:
        llm: a vision-capable LlamaIndex LLM (anything with ``chat(messages)``).
        name: the describer's name in provenance and the description cache (default:
            the model's name, ``llm.metadata.model_name``, else its class name). Give
            each model (and each setting that changes its answers) its own name.

    Example:
        >>> from llama_index.core.llms import MockLLM
        >>> from PIL import Image
        >>> from hybrid_retrievers.images import describe_images
        >>> describer = MultiModalLLMDescriber(MockLLM(), name="mock")
        >>> doc, = describe_images([Image.new("RGB", (4, 4))], describer, prompt="Describe it.")
        >>> doc.text, doc.metadata["describer"]  # MockLLM echoes the text it was sent
        ('user: Describe it.\\nassistant:', 'mock')
    """

    @checks_keywords()
    def __init__(self, llm: Any, *, name: str | None = None) -> None:
        if not callable(getattr(llm, "chat", None)):
            raise type_error("llm must be a llama_index LLM that takes image blocks (with "
                             "chat(messages))", llm)
        if name is not None and (not isinstance(name, str) or not name.strip()):
            raise TypeError(f"name must be a non-empty str or None, got {name!r:.80}")
        self.llm = llm
        self._name = name

    @property
    def name(self) -> str:
        """The describer's name (``name=``, else the model's name)."""
        return self._name or llm_name(self.llm)

    @staticmethod
    def message(image: ImageInput, prompt: str = DEFAULT_DESCRIPTION_PROMPT) -> ChatMessage:
        """The message sent for ``image``: the prompt, then the image block."""
        loaded = load_image(image)
        # Base64 given explicitly: ImageBlock would otherwise guess whether raw bytes
        # are already base64.
        return ChatMessage(role=MessageRole.USER, blocks=[
            TextBlock(text=prompt),
            ImageBlock(image=base64.b64encode(loaded.data), image_mimetype=loaded.mime_type),
        ])

    def __call__(self, image: ImageInput, prompt: str = DEFAULT_DESCRIPTION_PROMPT) -> str:
        """The model's description of ``image`` (a `LoadedImage`, or anything
        `load_image` takes)."""
        response = self.llm.chat([self.message(image, prompt)])
        return response.message.content or ""

    def __repr__(self) -> str:
        return f"MultiModalLLMDescriber({type(self.llm).__name__}, name={self.name!r})"
