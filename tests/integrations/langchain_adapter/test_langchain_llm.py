"""The one LangChain LLM wrapper (`langchain_hybrid_retrievers._llm`) shared by HyDE and
the listwise reranker."""

from __future__ import annotations

import inspect
from typing import Any

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models import FakeListChatModel, FakeListLLM
from langchain_core.runnables import RunnableLambda

from hybrid_retrievers.hyde import HYDE_OPTIONS, HyDESearcher
from langchain_hybrid_retrievers import hyde
from langchain_hybrid_retrievers._llm import (
    LangChainGenerator,
    as_text_generator,
    llm_name,
    message_text,
)


class Starts(BaseCallbackHandler):
    def __init__(self) -> None:
        self.starts = 0

    def on_chat_model_start(self, *args: Any, **kwargs: Any) -> None:
        self.starts += 1


async def test_wrapper_sync_async_and_callbacks() -> None:
    chat = FakeListChatModel(responses=["lift"])
    generator = as_text_generator(chat)
    assert isinstance(generator, LangChainGenerator)
    assert generator("q") == "lift" and await generator.agenerate("q") == "lift"
    handler = Starts()
    bound = generator.with_callbacks([handler])
    assert bound("q") == "lift" and handler.starts == 1
    assert generator.callbacks is None  # binding returns a new wrapper


def test_plain_callables_pass_through_and_others_are_refused() -> None:
    def fn(prompt: str) -> str:
        return prompt

    assert as_text_generator(fn) is fn
    with pytest.raises(TypeError, match="llm must be"):
        as_text_generator(42)
    with pytest.raises(TypeError, match="expected a str or a message"):
        message_text({"text": "x"})


def test_names_and_the_hyde_module_face() -> None:
    assert llm_name(FakeListLLM(responses=["x"])) == "FakeListLLM"
    assert llm_name(RunnableLambda(lambda p: p, name="mine")) == "mine"
    assert hyde.as_text_generator is as_text_generator
    assert hyde.LangChainGenerator is LangChainGenerator


def test_hyde_options_are_the_recipe_keywords() -> None:
    params = inspect.signature(HyDESearcher.from_index).parameters
    assert set(HYDE_OPTIONS) == set(params) - {"index", "generate", "embedder"}
