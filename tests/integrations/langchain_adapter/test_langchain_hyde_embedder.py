"""`HypotheticalDocumentEmbedder` in LangChain's shape: the behaviours of LangChain's
``tests/unit_tests/chains/test_hyde.py`` (every `PROMPT_MAP` key through ``from_llm``, an
LLM with ``n`` generations), checked against langchain-classic's own class, plus our
guarantees: the timeout and the raw-query fallback, async, child runs, refused keywords."""

from __future__ import annotations

import asyncio
import doctest
import logging
import threading
from typing import Any
from uuid import UUID

import numpy as np
import pytest
from langchain_classic.chains.hyde.base import HypotheticalDocumentEmbedder as Original
from langchain_classic.chains.hyde.prompts import PROMPT_MAP as ORIGINAL_PROMPT_MAP
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import FakeListLLM
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.language_models.llms import BaseLLM
from langchain_core.outputs import Generation, LLMResult
from langchain_core.prompts import PromptTemplate
from langchain_core.runnables import RunnableLambda

from hybrid_retrievers.models import HashingEmbedder
from langchain_hybrid_retrievers import DenseRetriever, HypotheticalDocumentEmbedder
from langchain_hybrid_retrievers import hyde as hyde_module
from langchain_hybrid_retrievers.hyde import PROMPT_MAP

from corpora import CORPUS

ANSWER = "The lift of a wing depends on the angle of attack and the airspeed."
OTHER = "Flaps and slats increase the lift coefficient of a wing at low speeds."


class Hashing(Embeddings):
    """LangChain `Embeddings` over `HashingEmbedder` (word overlap: real text ranks)."""

    def __init__(self) -> None:
        self.inner = HashingEmbedder(dimension=256)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.inner.embed_documents(texts).tolist()  # type: ignore[no-any-return]

    def embed_query(self, text: str) -> list[float]:
        return self.inner.embed_query(text).tolist()  # type: ignore[no-any-return]


_LOCK = threading.Lock()


class ListLLM(BaseLLM):
    """Answers in turn from ``responses`` (thread-safe, for concurrent generations) and
    records the prompts; ``n`` generations per prompt, as LangChain's test LLM."""

    responses: list[str]
    n: int = 1
    prompts: list[str] = []

    def _generate(self, prompts: list[str], stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> LLMResult:
        with _LOCK:
            self.prompts.extend(prompts)
            text = self.responses[(len(self.prompts) - 1) % len(self.responses)]
        return LLMResult(generations=[[Generation(text=text) for _ in range(self.n)]])

    @property
    def _llm_type(self) -> str:
        return "list"


@pytest.fixture
def release() -> Any:
    event = threading.Event()
    yield event
    event.set()


def _vector(texts: list[str]) -> list[float]:
    return np.mean(Hashing().embed_documents(texts), axis=0).tolist()  # type: ignore[no-any-return]


# ------------------------------------------------ the behaviours of LangChain's tests


def test_prompt_map_has_langchains_keys_and_instructions() -> None:
    assert list(PROMPT_MAP) == list(ORIGINAL_PROMPT_MAP)
    for key, prompt in PROMPT_MAP.items():
        original = ORIGINAL_PROMPT_MAP[key]
        assert prompt.input_variables == original.input_variables, key
        # Same instruction (first line) as LangChain's, up to a final full stop.
        ours = prompt.template.splitlines()[0].rstrip(".")
        theirs = original.template.splitlines()[0].rstrip(".")
        assert ours == theirs or key == "mr_tydi", key
    assert "language of the question" in PROMPT_MAP["mr_tydi"].template


@pytest.mark.parametrize("key", list(ORIGINAL_PROMPT_MAP))
def test_from_llm_with_every_prompt_key_embeds_the_generation(key: str) -> None:
    llm = ListLLM(responses=[ANSWER])
    hyde = HypotheticalDocumentEmbedder.from_llm(llm, Hashing(), key)
    assert hyde.embed_query("how do wings lift?") == pytest.approx(_vector([ANSWER]))
    assert llm.prompts == [PROMPT_MAP[key].format(**{hyde.input_keys[0]: "how do wings lift?"})]
    original = Original.from_llm(ListLLM(responses=[ANSWER]), Hashing(), key)
    assert hyde.input_keys == original.input_keys
    assert hyde.embed_query("how do wings lift?") == pytest.approx(
        [float(x) for x in original.embed_query("how do wings lift?")])


def test_an_llm_with_several_generations_per_call_counts_once_as_there() -> None:
    # LangChain's chain keeps the first generation of the call (StrOutputParser).
    llm = ListLLM(responses=[ANSWER], n=8)
    hyde = HypotheticalDocumentEmbedder.from_llm(llm, Hashing(), "web_search")
    original = Original.from_llm(ListLLM(responses=[ANSWER], n=8), Hashing(), "web_search")
    assert hyde.embed_query("q") == pytest.approx([float(x) for x in original.embed_query("q")])


def test_n_generations_are_separate_calls_averaged() -> None:
    llm = ListLLM(responses=[ANSWER, OTHER])
    hyde = HypotheticalDocumentEmbedder.from_llm(llm, Hashing(), "web_search", n=2)
    vector, result = hyde.embed_query_with_result("wing lift")
    assert len(llm.prompts) == 2 and sorted(result.passages) == sorted([ANSWER, OTHER])
    assert vector == pytest.approx(_vector([ANSWER, OTHER]))


def test_include_query_averages_the_query_vector_in() -> None:
    hyde = HypotheticalDocumentEmbedder.from_llm(FakeListLLM(responses=[ANSWER]), Hashing(),
                                                 "web_search", include_query=True)
    query = Hashing().embed_query("wing lift")
    expected = np.mean([Hashing().embed_documents([ANSWER])[0], query], axis=0)
    assert hyde.embed_query("wing lift") == pytest.approx(expected.tolist())


def test_chat_model_and_custom_prompt() -> None:
    seen: list[str] = []
    chat = FakeListChatModel(responses=[ANSWER])
    prompt = PromptTemplate.from_template("Write an encyclopedia passage on: {question}")
    hyde = HypotheticalDocumentEmbedder.from_llm(
        RunnableLambda(lambda p: seen.append(p.to_string()) or p) | chat, Hashing(),
        custom_prompt=prompt)
    assert hyde.input_keys == ["question"]
    assert hyde.embed_query("wings") == pytest.approx(_vector([ANSWER]))
    assert seen == ["Write an encyclopedia passage on: wings"]


def test_embed_documents_and_combine_are_the_originals() -> None:
    base = Hashing()
    hyde = HypotheticalDocumentEmbedder.from_llm(FakeListLLM(responses=["x"]), base,
                                                 "fiqa")
    assert hyde.embed_documents(["a b", "c"]) == base.embed_documents(["a b", "c"])
    assert asyncio.run(hyde.aembed_documents(["a b"])) == base.embed_documents(["a b"])
    assert hyde.combine_embeddings([[1.0, 2.0], [3.0, 5.0]]) == [2.0, 3.5]
    with pytest.raises(ValueError, match="shape"):
        hyde.combine_embeddings([])
    with pytest.raises(ValueError, match="one dimension"):
        hyde.combine_embeddings([[1.0, 2.0], [3.0]])


def test_constructed_directly_with_an_llm_chain() -> None:
    chain = PROMPT_MAP["trec_news"] | FakeListLLM(responses=[ANSWER])
    hyde = HypotheticalDocumentEmbedder(base_embeddings=Hashing(), llm_chain=chain)
    assert hyde.input_keys == ["TOPIC"]
    assert hyde.embed_query("aviation") == pytest.approx(_vector([ANSWER]))


# ------------------------------------------------------------ our guarantees


def test_failed_llm_embeds_the_raw_query_with_a_warning(
        caplog: pytest.LogCaptureFixture) -> None:
    def broken(prompt: Any) -> str:
        raise ConnectionError("LLM unreachable")

    hyde = HypotheticalDocumentEmbedder.from_llm(RunnableLambda(broken), Hashing(),
                                                 "web_search")
    with caplog.at_level(logging.WARNING, logger="hybrid_retrievers.hyde"):
        vector, result = hyde.embed_query_with_result("wing lift")
    assert vector == Hashing().embed_query("wing lift")
    assert result.fallback and "ConnectionError: LLM unreachable" in str(result.error)
    assert "falling back to the raw query" in caplog.text
    assert hyde.embed_query("wing lift") == Hashing().embed_query("wing lift")


def test_hung_llm_times_out_to_the_raw_query(release: threading.Event) -> None:
    hung = RunnableLambda(lambda p: release.wait(60) and ANSWER)
    hyde = HypotheticalDocumentEmbedder.from_llm(hung, Hashing(), "web_search", timeout=0.2)
    vector, result = hyde.embed_query_with_result("wing lift")
    assert result.fallback and "no answer within 0.2 s" in str(result.error)
    assert vector == Hashing().embed_query("wing lift")


async def test_async_hung_llm_times_out_to_the_raw_query(release: threading.Event) -> None:
    async def hung(prompt: Any) -> str:
        await asyncio.sleep(60)
        return ANSWER

    hyde = HypotheticalDocumentEmbedder.from_llm(RunnableLambda(lambda p: ANSWER, afunc=hung),
                                                 Hashing(), "web_search", timeout=0.2)
    vector, result = await hyde.aembed_query_with_result("wing lift")
    assert result.fallback and vector == Hashing().embed_query("wing lift")


async def test_aembed_query_awaits_the_llm_and_matches_the_sync_vector() -> None:
    calls: list[str] = []

    async def answer(prompt: Any) -> str:
        calls.append("async")
        return ANSWER

    hyde = HypotheticalDocumentEmbedder.from_llm(
        RunnableLambda(lambda p: ANSWER, afunc=answer), Hashing(), "web_search", n=2)
    assert await hyde.aembed_query("wing lift") == pytest.approx(_vector([ANSWER]))
    assert calls == ["async", "async"]


def test_default_timeout_and_checked_settings() -> None:
    hyde = HypotheticalDocumentEmbedder.from_llm(FakeListLLM(responses=["x"]), Hashing(),
                                                 "web_search")
    assert hyde.timeout == 30.0 and hyde.n == 1 and hyde.include_query is False
    with pytest.raises(ValueError, match="timeout must be > 0"):
        hyde.timeout = 0
    with pytest.raises(ValueError, match="n must be between 1 and 8"):
        HypotheticalDocumentEmbedder.from_llm(FakeListLLM(responses=["x"]), Hashing(),
                                              "web_search", n=9)
    with pytest.raises(TypeError, match="include_query must be a bool"):
        HypotheticalDocumentEmbedder.from_llm(FakeListLLM(responses=["x"]), Hashing(),
                                              "web_search", include_query="yes")
    hyde.n = 3  # settings assigned later are checked and used
    assert hyde.embed_query_with_result("q")[1].passages == ("x", "x", "x")


def test_bad_arguments_name_the_fix() -> None:
    llm = FakeListLLM(responses=["x"])
    with pytest.raises(ValueError, match="Must specify prompt_key.*web_search"):
        HypotheticalDocumentEmbedder.from_llm(llm, Hashing())
    with pytest.raises(ValueError, match="did you mean 'sci_fact'"):
        HypotheticalDocumentEmbedder.from_llm(llm, Hashing(), "sci_fac")
    with pytest.raises(TypeError, match="'prompt_kye' .did you mean prompt_key=.*"):
        HypotheticalDocumentEmbedder.from_llm(llm, Hashing(), prompt_kye="fiqa")
    with pytest.raises(TypeError, match="'timout' .did you mean timeout=.*"):
        HypotheticalDocumentEmbedder(base_embeddings=Hashing(), llm_chain=PROMPT_MAP["fiqa"] | llm,
                                     timout=3)
    with pytest.raises(TypeError, match="custom_prompt must be a LangChain prompt template"):
        HypotheticalDocumentEmbedder.from_llm(llm, Hashing(), custom_prompt="Answer {q}")
    with pytest.raises(TypeError, match="llm must be a LangChain LLM"):
        HypotheticalDocumentEmbedder.from_llm("gpt", Hashing(), "fiqa")
    with pytest.raises(ValueError, match="empty or blank"):
        HypotheticalDocumentEmbedder.from_llm(llm, Hashing(), "fiqa").embed_query(" ")
    two = PromptTemplate.from_template("{question} in {language}")
    with pytest.raises(ValueError, match="exactly one input variable"):
        HypotheticalDocumentEmbedder.from_llm(llm, Hashing(), custom_prompt=two)


# ---------------------------------------------------------------- end to end


def _documents() -> list[Document]:
    return [Document(id=i, page_content=t, metadata=dict(m)) for i, t, m in CORPUS]


def test_dense_retriever_with_hyde_finds_what_the_raw_query_misses() -> None:
    query = "why do airplanes stay up?"  # no word in common with the aero documents
    plain = DenseRetriever.from_documents(_documents(), embedding=Hashing(), k=1)
    hyde = HypotheticalDocumentEmbedder.from_llm(FakeListLLM(responses=[ANSWER]), Hashing(),
                                                 "web_search")
    retriever = DenseRetriever.from_documents(_documents(), embedding=hyde, k=1)
    assert plain.invoke(query)[0].id != "aero-1"
    assert retriever.invoke(query)[0].id == "aero-1"
    assert asyncio.run(retriever.ainvoke(query))[0].id == "aero-1"


class Runs(BaseCallbackHandler):
    """Records each run's parent: retriever, chain and LLM runs."""

    def __init__(self) -> None:
        self.parents: dict[str, UUID | None] = {}
        self.ids: dict[str, UUID] = {}

    def on_retriever_start(self, serialized: Any, query: str, *, run_id: UUID,
                           parent_run_id: UUID | None = None, **kwargs: Any) -> None:
        self.ids["retriever"] = run_id

    def on_chain_start(self, serialized: Any, inputs: Any, *, run_id: UUID,
                       parent_run_id: UUID | None = None, **kwargs: Any) -> None:
        self.ids.setdefault(kwargs.get("name") or "chain", run_id)
        self.parents.setdefault(kwargs.get("name") or "chain", parent_run_id)

    def on_llm_start(self, serialized: Any, prompts: list[str], *, run_id: UUID,
                     parent_run_id: UUID | None = None, **kwargs: Any) -> None:
        self.parents["llm"] = parent_run_id


def test_the_llm_call_is_a_child_run_of_our_retriever_and_of_a_calling_runnable() -> None:
    hyde = HypotheticalDocumentEmbedder.from_llm(FakeListLLM(responses=[ANSWER]), Hashing(),
                                                 "web_search")
    retriever = DenseRetriever.from_documents(_documents(), embedding=hyde, k=1)
    runs = Runs()
    retriever.invoke("wing", config={"callbacks": [runs]})
    # the LLM chain (prompt | llm | parser) is a child of the retriever's run
    assert runs.parents["RunnableSequence"] == runs.ids["retriever"]

    runs = Runs()
    RunnableLambda(hyde.embed_query, name="embed").invoke("wing", config={"callbacks": [runs]})
    assert runs.parents["RunnableSequence"] == runs.ids["embed"]


def test_docstring_examples_run() -> None:
    assert doctest.testmod(hyde_module).failed == 0
