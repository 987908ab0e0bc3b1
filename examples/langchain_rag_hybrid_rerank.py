"""A LangChain RAG chain (LCEL): hybrid BM25 + dense retrieval, cross-encoder rerank, an LLM.

The cross-encoder here is MiniLM with an untrained 1-logit head, built locally because
no checkpoint can be downloaded in this environment: its scores (all about 0.5) mean
nothing. In your code pass model="cross-encoder/ms-marco-MiniLM-L-6-v2".

Run: python examples/langchain_rag_hybrid_rerank.py
A fake chat model stands in for the LLM; swap in any LangChain chat model.
"""

from __future__ import annotations

from _stand_in_models import MINILM, cross_encoder_path
from langchain_core.documents import Document
from langchain_core.language_models import FakeListChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnablePassthrough

from hybrid_retrievers.datasets import load_dataset
from hybrid_retrievers.models import SentenceTransformerEmbedder
from langchain_hybrid_retrievers import CrossEncoderReranker, HybridRetriever, RerankingRetriever

corpus = list(load_dataset("cranfield").corpus.values())[:200]  # a subset: CPU encoding is slow
documents = [Document(page_content=d.text, metadata=dict(d.metadata), id=d.id) for d in corpus]

hybrid = HybridRetriever.from_documents(documents, embedding=SentenceTransformerEmbedder(MINILM), k=10)
retriever = RerankingRetriever(
    base_retriever=hybrid,
    reranker=CrossEncoderReranker(model=cross_encoder_path(), top_n=3),
    fetch_k=20,
    k=3,
)

question = "how does a propeller slipstream change the lift of a wing?"
for doc in retriever.invoke(question):
    sources = {s["source"]: s["rank"] for s in doc.metadata["fusion"]["sources"]}
    print(f"[{doc.id}] rerank={doc.metadata['relevance_score']:.3f} fused ranks={sources} "
          f"{doc.metadata['title'][:60]}")

prompt = ChatPromptTemplate.from_template(
    "Answer from the context only.\n\n{context}\n\nQuestion: {question}"
)
chain = (
    {"context": retriever | (lambda docs: "\n\n".join(d.page_content for d in docs)),
     "question": RunnablePassthrough()}
    | prompt
    | FakeListChatModel(responses=["The slipstream raises the lift over the immersed span."])
    | StrOutputParser()
)
print("answer:", chain.invoke(question))
