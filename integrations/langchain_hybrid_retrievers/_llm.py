"""The one LLM wrapper of the LangChain adapters: any LangChain model as a core generator.

Every adapter that takes an ``llm`` (`HyDERetriever`, `LLMRerankCompressor`) turns it into a core
`hybrid_retrievers.TextGenerator` with `as_text_generator`: a LangChain LLM, chat model or
any `Runnable` is wrapped in `LangChainGenerator`, a plain callable ``prompt -> str`` is
used as it is; `llm_name` is the model's name in provenance. A wrapper bound to callbacks
(`LangChainGenerator.with_callbacks`) reports to them; otherwise, inside one of this
package's retriever calls, the model runs as a child run of it (`core_calls_as_children`).
"""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import Callbacks
from langchain_core.messages import BaseMessage
from langchain_core.runnables import Runnable, RunnableConfig

from ._base import core_call_config


def message_text(output: Any) -> str:
    """The text of a model's output: a str as it is, a message's text content
    (`TypeError` for anything else: a custom `Runnable` should end with a parser)."""
    if isinstance(output, str):
        return output
    if isinstance(output, BaseMessage):
        text = output.text  # a str-like property in langchain-core >= 1.0, a method before
        return str(text) if isinstance(text, str) else str(text())
    raise TypeError(
        f"the LLM returned a {type(output).__name__}; expected a str or a message "
        "(end a custom Runnable with StrOutputParser())"
    )


def llm_name(llm: Any) -> str:
    """The model's name for provenance: ``model_name`` / ``model`` / ``model_id``, else
    the runnable's name, else the callable's ``__name__`` or class name."""
    for attr in ("model_name", "model", "model_id"):
        value = getattr(llm, attr, None)
        if isinstance(value, str) and value.strip():
            return value
    if isinstance(llm, Runnable):
        return llm.get_name()
    return getattr(llm, "__name__", None) or type(llm).__name__


class LangChainGenerator:
    """A LangChain LLM, chat model or `Runnable` as the core's text generator:
    ``__call__`` runs ``invoke(prompt)``, ``agenerate`` awaits ``ainvoke(prompt)``, and a
    message becomes its text. With ``input_key`` the runnable is a chain that formats its
    own prompt: it receives ``{input_key: text}``.

    Example:
        >>> from langchain_core.language_models import FakeListLLM
        >>> LangChainGenerator(FakeListLLM(responses=["Wings make lift."]))("Why?")
        'Wings make lift.'
    """

    def __init__(self, runnable: Runnable, *, callbacks: Callbacks = None,
                 input_key: str | None = None) -> None:
        if not isinstance(runnable, Runnable):
            raise _not_an_llm(runnable)
        self.runnable = runnable
        self.callbacks = callbacks
        self.input_key = input_key

    @property
    def name(self) -> str:
        """The model's name (`llm_name`)."""
        return llm_name(self.runnable)

    def with_callbacks(self, callbacks: Callbacks) -> LangChainGenerator:
        """The same model, its calls reported to ``callbacks`` (``None``: as the context)."""
        return LangChainGenerator(self.runnable, callbacks=callbacks, input_key=self.input_key)

    def _config(self) -> RunnableConfig | None:
        if self.callbacks is not None:
            return {"callbacks": self.callbacks}
        return core_call_config()

    def _input(self, prompt: str) -> Any:
        return prompt if self.input_key is None else {self.input_key: prompt}

    def __call__(self, prompt: str) -> str:
        return message_text(self.runnable.invoke(self._input(prompt), self._config()))

    async def agenerate(self, prompt: str) -> str:
        return message_text(await self.runnable.ainvoke(self._input(prompt), self._config()))

    def __repr__(self) -> str:
        return f"LangChainGenerator({type(self.runnable).__name__})"


def as_text_generator(llm: Any) -> Any:
    """``llm`` as a core generator: Runnables are wrapped, plain callables pass through
    (`TypeError` for anything else)."""
    if isinstance(llm, Runnable):
        return LangChainGenerator(llm)
    if callable(llm):
        return llm
    raise _not_an_llm(llm)


def _not_an_llm(value: Any) -> TypeError:
    return TypeError("llm must be a LangChain LLM, chat model or Runnable, or a callable "
                     f"prompt -> str, got {type(value).__name__}: {value!r:.80}")
