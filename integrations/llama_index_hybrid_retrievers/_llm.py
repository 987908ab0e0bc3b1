"""The one LLM wrapper of the LlamaIndex adapters: a LlamaIndex LLM as a core generator.

Every adapter that takes an ``llm`` (`HyDERetriever`, `LLMListwiseRerank`) turns it into the
core's `hybrid_retrievers.TextGenerator` with `as_text_generator`: a LlamaIndex `LLM` (any
object with ``complete(prompt)``) is wrapped in `LlamaIndexGenerator`, a plain callable
``prompt -> str`` is used as it is. `llm_name` is the model's name for provenance.
"""

from __future__ import annotations

from typing import Any

from ._convert import type_error


def llm_name(llm: Any) -> str:
    """The model's name for provenance: ``llm.metadata.model_name`` (unless
    ``"unknown"``), else ``class_name()``, else the callable's ``__name__`` or class name."""
    metadata = getattr(llm, "metadata", None)
    name = getattr(metadata, "model_name", None)
    if isinstance(name, str) and name.strip() and name != "unknown":
        return name
    if hasattr(llm, "class_name") and callable(llm.class_name):
        return str(llm.class_name())
    return getattr(llm, "__name__", None) or type(llm).__name__


def _completes(llm: Any) -> bool:
    return callable(getattr(llm, "complete", None))


def _not_an_llm(llm: Any) -> TypeError:
    return type_error("llm must be a llama_index LLM (with complete()) or a callable "
                      "prompt -> str", llm)


class LlamaIndexGenerator:
    """A LlamaIndex `LLM` as the core's text generator: ``__call__`` is
    ``complete(prompt).text``; ``agenerate`` awaits ``acomplete`` when the model has it
    (else it is ``None`` and the core runs ``complete`` in a worker thread).

    Example:
        >>> from llama_index.core.llms import MockLLM
        >>> LlamaIndexGenerator(MockLLM())("echo me")
        'echo me'
    """

    def __init__(self, llm: Any) -> None:
        if not _completes(llm):
            raise _not_an_llm(llm)
        self.llm = llm
        self.agenerate = self._acomplete if callable(getattr(llm, "acomplete", None)) else None

    @property
    def name(self) -> str:
        """The model's name (`llm_name`)."""
        return llm_name(self.llm)

    def __call__(self, prompt: str) -> str:
        return self.llm.complete(prompt).text  # type: ignore[no-any-return]

    async def _acomplete(self, prompt: str) -> str:
        return (await self.llm.acomplete(prompt)).text  # type: ignore[no-any-return]

    def __repr__(self) -> str:
        return f"LlamaIndexGenerator({type(self.llm).__name__})"


def as_text_generator(llm: Any) -> Any:
    """``llm`` as a core generator: LLMs are wrapped, plain callables pass through;
    TypeError for anything else."""
    if _completes(llm):
        return LlamaIndexGenerator(llm)
    if callable(llm):
        return llm
    raise _not_an_llm(llm)
