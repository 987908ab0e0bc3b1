"""The one LlamaIndex LLM wrapper (`llama_index_hybrid_retrievers._llm`) shared by HyDE and
`LLMListwiseRerank`."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from llama_index.core.llms import MockLLM

from llama_index_hybrid_retrievers import hyde
from llama_index_hybrid_retrievers._llm import LlamaIndexGenerator, as_text_generator, llm_name


async def test_wrapper_sync_and_async() -> None:
    generator = as_text_generator(MockLLM())
    assert isinstance(generator, LlamaIndexGenerator)
    assert generator("echo") == "echo" and await generator.agenerate("echo") == "echo"


def test_complete_only_objects_have_no_agenerate() -> None:
    class CompleteOnly:
        def complete(self, prompt: str) -> Any:
            return SimpleNamespace(text=prompt.upper())

    generator = as_text_generator(CompleteOnly())
    assert generator("abc") == "ABC" and generator.agenerate is None
    assert llm_name(CompleteOnly()) == "CompleteOnly"


def test_plain_callables_pass_through_and_others_are_refused() -> None:
    def fn(prompt: str) -> str:
        return prompt

    assert as_text_generator(fn) is fn and llm_name(fn) == "fn"
    with pytest.raises(TypeError, match="llm must be"):
        as_text_generator(3)
    assert hyde.as_text_generator is as_text_generator
    assert hyde.LlamaIndexGenerator is LlamaIndexGenerator
