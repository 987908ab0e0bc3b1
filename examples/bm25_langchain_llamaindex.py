"""BM25 on the bundled Cranfield collection, through the core, LangChain and LlamaIndex.

Run: python examples/bm25_langchain_llamaindex.py
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from hybrid_retrievers import BM25Index
from hybrid_retrievers.datasets import load_dataset

ds = load_dataset("cranfield")
docs = list(ds.corpus.values())
query = "boundary layer transition at supersonic speeds"

# Core: build, search with explanations, save and load (JSON + .npy, no pickle).
index = BM25Index.from_docs(docs)
best = index.search(query, k=3)
for hit in best:
    print(f"{hit.rank}. [{hit.id}] {hit.score:.3f} {hit.doc.metadata['title'][:60]}")
print(index.explain(query, best[0].id))
with tempfile.TemporaryDirectory() as tmp:
    index.save(Path(tmp) / "cranfield-bm25")
    assert BM25Index.load(Path(tmp) / "cranfield-bm25").search(query, k=3) == best

# LangChain: a BaseRetriever inside an LCEL chain, with a fake chat model.
from langchain_core.documents import Document  # noqa: E402
from langchain_core.language_models import FakeListChatModel  # noqa: E402
from langchain_core.output_parsers import StrOutputParser  # noqa: E402
from langchain_core.prompts import ChatPromptTemplate  # noqa: E402
from langchain_core.runnables import RunnablePassthrough  # noqa: E402

from langchain_hybrid_retrievers import BM25Retriever  # noqa: E402

lc_docs = [Document(page_content=d.text, metadata=dict(d.metadata), id=d.id) for d in docs]
retriever = BM25Retriever.from_documents(lc_docs, k=4)
found = retriever.invoke(query, k=2)
print([(d.id, round(d.metadata["score"], 3)) for d in found])
prompt = ChatPromptTemplate.from_template("Answer from the context.\n{context}\n\nQ: {question}")
chain = (
    {"context": retriever | (lambda ds: "\n".join(d.page_content for d in ds)),
     "question": RunnablePassthrough()}
    | prompt
    | FakeListChatModel(responses=["(a real LLM answers here)"])
    | StrOutputParser()
)
print(chain.invoke(query))

# LlamaIndex: a retriever inside a RetrieverQueryEngine, with MockLLM.
from llama_index.core.llms import MockLLM  # noqa: E402
from llama_index.core.query_engine import RetrieverQueryEngine  # noqa: E402
from llama_index.core.schema import TextNode  # noqa: E402

from llama_index_hybrid_retrievers import BM25Retriever as LlamaBM25Retriever  # noqa: E402

nodes = [TextNode(text=d.text, id_=d.id, metadata=dict(d.metadata)) for d in docs]
# The loader's text already starts with the title (also in metadata["title"]): index the
# text alone, as the core index above does (the default, MetadataMode.EMBED, adds the
# metadata to the indexed text, as LlamaIndex's own BM25Retriever does).
li_retriever = LlamaBM25Retriever.from_defaults(nodes=nodes, similarity_top_k=3,
                                                metadata_mode="none")
engine = RetrieverQueryEngine.from_args(li_retriever, llm=MockLLM())
response = engine.query(query)
print([(n.node.node_id, round(n.score or 0.0, 3)) for n in response.source_nodes])
assert [n.node.node_id for n in response.source_nodes] == [h.id for h in best]
