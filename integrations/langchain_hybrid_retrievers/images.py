"""A LangChain chat model as an image describer (the description route of issue 31).

`ChatModelDescriber` turns any vision-capable LangChain chat model (``ChatOpenAI``,
``ChatAnthropic``, ``ChatGoogleGenerativeAI``, ``ChatOllama`` with a vision model...) into
the core's `hybrid_retrievers.images.Describer`: `describe_images` then makes searchable
description documents, with its cache, timeout and fallback.

The image goes as a LangChain v1 *standard* content block,
``{"type": "image", "base64": ..., "mime_type": ...}``, next to a text block holding the
prompt, in one `HumanMessage`. langchain-core 1.x defines this block
(`langchain_core.messages.ImageContentBlock`) as the provider-agnostic form that every
1.x chat-model integration translates into its own API's shape; the OpenAI-style
``{"type": "image_url", "image_url": {"url": "data:..."}}`` block is the older, one
provider's format that other integrations accept only by conversion.
"""

from __future__ import annotations

import base64

from langchain_core.callbacks import Callbacks
from langchain_core.messages import HumanMessage
from langchain_core.runnables import Runnable, RunnableConfig

from hybrid_retrievers.images import DEFAULT_DESCRIPTION_PROMPT, ImageInput, load_image

from ._base import checks_keywords, core_call_config
from ._llm import llm_name, message_text

__all__ = ["ChatModelDescriber"]


class ChatModelDescriber:
    """A LangChain chat model (or any `Runnable` taking messages) as a `Describer`.

    Calling it sends one `HumanMessage` whose content is a text block with the prompt
    and an image block with the image's bytes (base64) and MIME type, and returns the
    answer's text.

    Args:
        chat_model: a vision-capable chat model, or a `Runnable` that takes a list of
            messages and returns a message or a str.
        name: the describer's name in provenance and the description cache (default:
            the model's name, `llm_name`: e.g. ``"gpt-4o"``). Give each model (and each
            setting that changes its answers) its own name.
        callbacks: LangChain callbacks for its calls (default: inside one of this
            package's retriever calls, a child run of it).

    Example:
        >>> from langchain_core.language_models import FakeListChatModel
        >>> from PIL import Image
        >>> from hybrid_retrievers.images import describe_images
        >>> describer = ChatModelDescriber(FakeListChatModel(responses=["A bar chart."]))
        >>> [doc.text for doc in describe_images([Image.new("RGB", (4, 4))], describer)]
        ['A bar chart.']
    """

    @checks_keywords()
    def __init__(
        self, chat_model: Runnable, *, name: str | None = None, callbacks: Callbacks = None
    ) -> None:
        if not isinstance(chat_model, Runnable):
            raise TypeError(
                "chat_model must be a LangChain chat model (or a Runnable taking messages), "
                f"got {type(chat_model).__name__}: {chat_model!r:.80}"
            )
        if name is not None and (not isinstance(name, str) or not name.strip()):
            raise TypeError(f"name must be a non-empty str or None, got {name!r:.80}")
        self.chat_model = chat_model
        self.callbacks = callbacks
        self._name = name

    @property
    def name(self) -> str:
        """The describer's name (``name=``, else the model's name)."""
        return self._name or llm_name(self.chat_model)

    @staticmethod
    def message(image: ImageInput, prompt: str = DEFAULT_DESCRIPTION_PROMPT) -> HumanMessage:
        """The message sent for ``image``: the prompt, then the image as a standard block."""
        loaded = load_image(image)
        return HumanMessage(content=[
            {"type": "text", "text": prompt},
            {"type": "image", "base64": base64.b64encode(loaded.data).decode("ascii"),
             "mime_type": loaded.mime_type},
        ])

    def _config(self) -> RunnableConfig | None:
        if self.callbacks is not None:
            return {"callbacks": self.callbacks}
        return core_call_config()

    def __call__(self, image: ImageInput, prompt: str = DEFAULT_DESCRIPTION_PROMPT) -> str:
        """The model's description of ``image`` (a `LoadedImage`, or anything
        `load_image` takes)."""
        return message_text(self.chat_model.invoke([self.message(image, prompt)],
                                                   self._config()))

    def __repr__(self) -> str:
        return f"ChatModelDescriber({type(self.chat_model).__name__}, name={self.name!r})"
