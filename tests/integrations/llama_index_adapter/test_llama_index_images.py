"""`MultiModalLLMDescriber`: a LlamaIndex multimodal LLM describing images for
`describe_images`.

The LLM here is a `CustomLLM` whose ``chat`` decodes the `ImageBlock` it receives and
describes what it finds (format, size, colour), so the tests fail if the image's bytes or
MIME type do not reach the model intact.
"""

from __future__ import annotations

import base64
import threading
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("PIL.Image")

from llama_index.core.base.llms.types import ImageBlock, TextBlock  # noqa: E402
from llama_index.core.llms import (  # noqa: E402
    ChatMessage,
    ChatResponse,
    CompletionResponse,
    CustomLLM,
    LLMMetadata,
    MockLLM,
)
from llama_index.core.llms.callbacks import llm_chat_callback  # noqa: E402
from llama_index.core.schema import TextNode  # noqa: E402

from hybrid_retrievers.images import (  # noqa: E402
    DEFAULT_DESCRIPTION_PROMPT,
    DescriptionCache,
    describe_image,
    describe_images,
    load_image,
)
from llama_index_hybrid_retrievers import BM25Retriever, MultiModalLLMDescriber  # noqa: E402

from drawn_images import red_and_blue_charts, seen_chart  # noqa: E402


class SeeingLLM(CustomLLM):
    """A vision LLM: ``chat`` decodes the image block of the one message and describes it."""

    seen: list = []
    hang_on: str | None = None
    release: Any = None

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="seeing-vlm", is_chat_model=True)

    @llm_chat_callback()
    def chat(self, messages: Any, **kwargs: Any) -> ChatResponse:
        self.seen.append(messages)
        (message,) = messages
        text, block = message.blocks
        assert isinstance(text, TextBlock) and isinstance(block, ImageBlock)
        if block.image_mimetype == self.hang_on:
            self.release.wait(30)
        answer = seen_chart(base64.b64decode(block.image), block.image_mimetype)
        return ChatResponse(message=ChatMessage(role="assistant", content=answer))

    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        raise AssertionError("images go through chat(), not complete()")

    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
        raise AssertionError("images go through chat(), not stream_complete()")


@pytest.fixture
def images(tmp_path: Path) -> list[Path]:
    return red_and_blue_charts(tmp_path)


def test_the_message_holds_a_text_block_and_an_image_block(images) -> None:
    loaded = load_image(images[1])
    message = MultiModalLLMDescriber.message(loaded, "What is it?")
    text, block = message.blocks
    assert message.role == "user" and text.text == "What is it?"
    assert base64.b64decode(block.image) == loaded.data
    assert block.image_mimetype == "image/jpeg"
    assert block.inline_url() == loaded.data_uri()


def test_describe_images_through_a_multimodal_llm(images) -> None:
    llm = SeeingLLM(seen=[])
    docs = describe_images(images, MultiModalLLMDescriber(llm))
    assert [d.text for d in docs] == ["A red png chart, 40 by 30 pixels.",
                                      "A blue jpeg chart, 24 by 16 pixels."]
    assert {d.metadata["describer"] for d in docs} == {"seeing-vlm"}
    assert [m[0].blocks[0].text for m in llm.seen] == [DEFAULT_DESCRIPTION_PROMPT] * 2
    assert MultiModalLLMDescriber(llm, name="gpt-4o").name == "gpt-4o"
    # MockLLM takes the blocks too (it echoes the text part).
    assert describe_image(images[0], MultiModalLLMDescriber(MockLLM()), prompt="Hi.") == (
        "user: Hi.\nassistant:")


def test_a_warm_cache_never_calls_the_llm(images, tmp_path) -> None:
    llm = SeeingLLM(seen=[])
    cache = DescriptionCache(tmp_path / "descriptions")
    describe_images(images, MultiModalLLMDescriber(llm), cache=cache)
    cache.save()
    docs = describe_images(images, MultiModalLLMDescriber(llm),
                           cache=DescriptionCache.load(tmp_path / "descriptions"))
    assert len(llm.seen) == 2
    assert [d.metadata["description_source"] for d in docs] == ["cache", "cache"]


def test_a_hung_llm_times_out_and_the_other_image_is_kept(images) -> None:
    release = threading.Event()
    llm = SeeingLLM(seen=[], hang_on="image/jpeg", release=release)
    try:
        with pytest.warns(UserWarning, match="blue.jpg.*no answer within 1 s"):
            docs = describe_images(images, MultiModalLLMDescriber(llm), timeout=1.0)
    finally:
        release.set()
    assert [d.metadata["image"] for d in docs] == [str(images[0])]


def test_described_images_are_retrieved_next_to_text(images) -> None:
    docs = describe_images(images, MultiModalLLMDescriber(SeeingLLM(seen=[])))
    nodes = [TextNode(id_="t1", text="Our revenue grew in the north."),
             TextNode(id_="t2", text="The team met on Tuesday.")]
    nodes += [TextNode(id_=d.id, text=d.text, metadata=dict(d.metadata)) for d in docs]
    (hit,) = BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=1).retrieve(
        "blue jpeg chart")
    assert hit.node.node_id == docs[1].id and hit.node.metadata["type"] == "image"


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(TypeError, match="llm must be a llama_index LLM"):
        MultiModalLLMDescriber("gpt-4o")
    with pytest.raises(TypeError, match="name must be a non-empty str"):
        MultiModalLLMDescriber(MockLLM(), name=" ")
