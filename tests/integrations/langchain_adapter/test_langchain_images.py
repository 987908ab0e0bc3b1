"""`ChatModelDescriber`: a LangChain chat model describing images for `describe_images`.

The chat model here is a small `BaseChatModel` that decodes the image block it receives
and describes what it finds (format, size, colour), so the tests fail if the image's
bytes or MIME type do not reach the model intact.
"""

from __future__ import annotations

import base64
import threading
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("PIL.Image")

from langchain_core.callbacks import BaseCallbackHandler  # noqa: E402
from langchain_core.language_models import BaseChatModel, FakeListChatModel  # noqa: E402
from langchain_core.messages import (  # noqa: E402
    AIMessage,
    BaseMessage,
    HumanMessage,
    convert_to_openai_data_block,
    is_data_content_block,
)
from langchain_core.outputs import ChatGeneration, ChatResult  # noqa: E402
from langchain_core.runnables import RunnableLambda  # noqa: E402

from hybrid_retrievers.images import (  # noqa: E402
    DEFAULT_DESCRIPTION_PROMPT,
    DescriptionCache,
    describe_image,
    describe_images,
    load_image,
)
from langchain_hybrid_retrievers import BM25Retriever, ChatModelDescriber  # noqa: E402

from drawn_images import red_and_blue_charts, seen_chart  # noqa: E402


class SeeingChatModel(BaseChatModel):
    """Decodes the image block of the one message it gets and describes it."""

    seen: list = []

    @property
    def _llm_type(self) -> str:
        return "seeing"

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        self.seen.append(messages)
        (message,) = messages
        text, block = message.content
        assert text == {"type": "text", "text": text["text"]}
        answer = seen_chart(base64.b64decode(block["base64"]), block["mime_type"])
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=answer))])


@pytest.fixture
def images(tmp_path: Path) -> list[Path]:
    return red_and_blue_charts(tmp_path)


def test_the_message_holds_the_prompt_and_a_standard_image_block(images) -> None:
    loaded = load_image(images[1])
    message = ChatModelDescriber.message(loaded, "What is it?")
    assert isinstance(message, HumanMessage)
    text, block = message.content
    assert text == {"type": "text", "text": "What is it?"}
    assert block == {"type": "image", "base64": base64.b64encode(loaded.data).decode("ascii"),
                     "mime_type": "image/jpeg"}
    # A langchain-core 1.x standard data block, which its provider translators understand.
    assert is_data_content_block(block)
    assert convert_to_openai_data_block(block)["image_url"]["url"] == loaded.data_uri()


def test_describe_images_through_a_chat_model(images) -> None:
    model = SeeingChatModel(seen=[])
    describer = ChatModelDescriber(model)
    docs = describe_images(images, describer)
    assert [d.text for d in docs] == ["A red png chart, 40 by 30 pixels.",
                                      "A blue jpeg chart, 24 by 16 pixels."]
    assert {d.metadata["describer"] for d in docs} == {"SeeingChatModel"}
    assert [m[0].content[0]["text"] for m in model.seen] == [DEFAULT_DESCRIPTION_PROMPT] * 2
    assert ChatModelDescriber(model, name="gpt-4o-mini").name == "gpt-4o-mini"


def test_a_warm_cache_never_calls_the_chat_model(images, tmp_path) -> None:
    model = SeeingChatModel(seen=[])
    describer = ChatModelDescriber(model, name="seeing-v1")
    cache = DescriptionCache(tmp_path / "descriptions")
    describe_images(images, describer, cache=cache)
    cache.save()
    docs = describe_images(images, describer, cache=DescriptionCache(tmp_path / "descriptions"))
    assert len(model.seen) == 2 and [d.metadata["description_source"] for d in docs] == [
        "cache", "cache"]


def test_callbacks_see_the_image_message(images) -> None:
    class Starts(BaseCallbackHandler):
        def __init__(self) -> None:
            self.messages: list[Any] = []

        def on_chat_model_start(self, serialized: Any, messages: Any, **kwargs: Any) -> None:
            self.messages.extend(messages)

    handler = Starts()
    describer = ChatModelDescriber(SeeingChatModel(seen=[]), callbacks=[handler])
    assert describe_image(images[0], describer).startswith("A red png chart")
    (batch,) = handler.messages
    # (LangChain traces image blocks in OpenAI's form: the data URI is what must show.)
    assert load_image(images[0]).data_uri() in str(batch[0].content[1])


def test_a_failing_or_hung_chat_model_skips_the_image(images) -> None:
    blank = ChatModelDescriber(FakeListChatModel(responses=["  "]))
    with pytest.warns(UserWarning, match="red.png.*blank text"):
        assert describe_images(images[:1], blank) == []
    release = threading.Event()

    def slow_on_blue(messages: list[BaseMessage]) -> str:
        if messages[0].content[1]["mime_type"] == "image/jpeg":
            release.wait(30)
        return "A chart."

    try:
        with pytest.warns(UserWarning, match="blue.jpg.*no answer within 1 s"):
            docs = describe_images(images, ChatModelDescriber(RunnableLambda(slow_on_blue)),
                                   timeout=1.0)
    finally:
        release.set()
    assert [d.metadata["image"] for d in docs] == [str(images[0])]


def test_concurrent_descriptions_are_child_runs_of_the_callers_run(images) -> None:
    """With ``max_workers``, each chat-model call runs in a pool thread, in a copy of the
    caller's context: LangChain still sees it as a child of the caller's run."""

    class Runs(BaseCallbackHandler):
        def __init__(self) -> None:
            self.chains: list[Any] = []
            self.chat_parents: list[Any] = []
            self.threads: set[str] = set()

        def on_chain_start(self, serialized: Any, inputs: Any, *, run_id: Any,
                           parent_run_id: Any = None, **kwargs: Any) -> None:
            self.chains.append(run_id)

        def on_chat_model_start(self, serialized: Any, messages: Any, *, run_id: Any,
                                parent_run_id: Any = None, **kwargs: Any) -> None:
            self.chat_parents.append(parent_run_id)
            self.threads.add(threading.current_thread().name)

    handler = Runs()
    describer = ChatModelDescriber(SeeingChatModel(seen=[]))
    build = RunnableLambda(lambda paths: describe_images(paths, describer, max_workers=2))
    docs = build.invoke(images, config={"callbacks": [handler]})
    assert [d.text for d in docs] == ["A red png chart, 40 by 30 pixels.",
                                      "A blue jpeg chart, 24 by 16 pixels."]
    (outer,) = handler.chains
    assert handler.chat_parents == [outer, outer]
    assert threading.current_thread().name not in handler.threads


def test_described_images_are_retrieved_next_to_text(images) -> None:
    docs = describe_images(images, ChatModelDescriber(SeeingChatModel(seen=[])))
    texts = ["Our revenue grew in the north.", "The team met on Tuesday."]
    retriever = BM25Retriever.from_texts(
        texts + [d.text for d in docs],
        metadatas=[{"type": "text"}] * 2 + [dict(d.metadata) for d in docs],
        ids=["t1", "t2"] + [d.id for d in docs], k=1)
    (hit,) = retriever.invoke("blue jpeg chart")
    assert hit.id == docs[1].id and hit.metadata["type"] == "image"
    assert hit.metadata["image"] == str(images[1])


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(TypeError, match="chat_model must be a LangChain chat model"):
        ChatModelDescriber("gpt-4o")
    with pytest.raises(TypeError, match="name must be a non-empty str"):
        ChatModelDescriber(FakeListChatModel(responses=["x"]), name="")
