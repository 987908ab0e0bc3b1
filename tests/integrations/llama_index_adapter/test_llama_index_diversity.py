"""`MMRPostprocessor` and `SourceCapPostprocessor`: the core's diversity stages for LlamaIndex."""

from __future__ import annotations

import asyncio

from llama_index.core.schema import NodeWithScore, TextNode

from llama_index.postprocessor.hybrid import MMRPostprocessor, SourceCapPostprocessor


def nodes(embeddings: bool = False) -> list[NodeWithScore]:
    rows = [("a", "wing lift at low speed", "x.md", 3.0, [1.0, 0.0]),
            ("b", "wing lift at low speed!", "x.md", 2.9, [1.0, 0.01]),
            ("c", "drag of a flat plate", "y.md", 1.0, [0.0, 1.0])]
    return [NodeWithScore(node=TextNode(id_=i, text=t, metadata={"file_path": f},
                                        embedding=e if embeddings else None), score=s)
            for i, t, f, s, e in rows]


def test_mmr_uses_the_scores_and_the_nodes_own_embeddings() -> None:
    given = nodes(embeddings=True)
    out = MMRPostprocessor(top_n=3).postprocess_nodes(given, query_str="wing lift")
    assert [n.node.node_id for n in out] == ["a", "c", "b"]
    assert out[0].score == 0.5 and out[0].node.metadata["retrieval_score"] == 3.0
    assert "retrieval_score" not in given[0].node.metadata  # copies, not edits
    again = asyncio.run(MMRPostprocessor(top_n=3).apostprocess_nodes(given,
                                                                     query_str="wing lift"))
    assert [n.node.node_id for n in again] == ["a", "c", "b"]


def test_mmr_lexical_fallback_without_embeddings() -> None:
    out = MMRPostprocessor(top_n=2).postprocess_nodes(nodes(), query_str="wing lift")
    assert [n.node.node_id for n in out] == ["a", "c"]


def test_source_cap_keeps_the_nodes_scores() -> None:
    out = SourceCapPostprocessor().postprocess_nodes(nodes(), query_str="q")
    assert [(n.node.node_id, n.score) for n in out] == [("a", 3.0), ("c", 1.0)]
    two = SourceCapPostprocessor(max_per_source=2, top_n=2).postprocess_nodes(
        nodes(), query_str="q")
    assert [n.node.node_id for n in two] == ["a", "b"]
