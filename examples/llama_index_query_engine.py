"""A LlamaIndex query engine over our hybrid retriever, with our cross-encoder postprocessor.

The cross-encoder here is MiniLM with an untrained 1-logit head, built locally because
no checkpoint can be downloaded in this environment: its scores (all about 0.5) mean
nothing. In your code pass model="cross-encoder/ms-marco-MiniLM-L-6-v2".

Run: python examples/llama_index_query_engine.py
MockLLM stands in for the LLM; swap in any LlamaIndex LLM.
"""

from __future__ import annotations

from _stand_in_models import MINILM, cross_encoder_path
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import TextNode

from hybrid_retrievers.datasets import load_dataset
from hybrid_retrievers.models import SentenceTransformerEmbedder
from llama_index_hybrid_retrievers import CrossEncoderRerank, HybridRetriever

corpus = list(load_dataset("cranfield").corpus.values())[:200]
nodes = [TextNode(text=d.text, id_=d.id, metadata={"title": d.metadata["title"]}) for d in corpus]

retriever = HybridRetriever.from_defaults(
    nodes=nodes, embed_model=SentenceTransformerEmbedder(MINILM), similarity_top_k=10
)
engine = RetrieverQueryEngine.from_args(
    retriever,
    llm=MockLLM(),
    node_postprocessors=[CrossEncoderRerank(model=cross_encoder_path(), top_n=3)],
)
response = engine.query("heat transfer in a laminar boundary layer")
for n in response.source_nodes:
    print(f"[{n.node.node_id}] {n.score:.3f} {n.node.metadata['title'][:60]}")
assert len(response.source_nodes) == 3
