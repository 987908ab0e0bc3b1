"""Constructor keyword checks for the LangChain retrievers.

LangChain's ``BaseRetriever`` silently drops unknown constructor arguments; the
retrievers here refuse them (`check_arguments`, run by `StrictRetriever` before
validation), and name the equivalent here when the argument comes from a LangChain
community class (`ARGUMENT_HINTS`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["ARGUMENT_HINTS", "check_arguments"]

ARGUMENT_HINTS: Mapping[str, str] = {
    "preprocess_func": (
        "LangChain community's preprocess_func (a custom tokenizer) is not an argument "
        "here: pass analyzer=hybrid_retrievers.Analyzer(...) with the tokenizer hook "
        "instead, so the same tokenizer is saved and used for documents and queries"
    ),
    "bm25_params": (
        "LangChain community's bm25_params dict is spelled as separate arguments here: "
        "k1=..., b=... (and method=..., delta=...)"
    ),
    "c": "EnsembleRetriever's RRF constant c is called k_rrf here (default 60)",
    "id_key": (
        "id_key is not needed here: documents are identified by Document.id (set it on "
        "your documents; dedup='content' also merges equal texts under different ids), "
        "and ParentDocumentRetriever links each child to its parent under the metadata "
        "key 'parent_id' itself"
    ),
    "top_k": "the number of documents to return is k (top_n on rerankers)",
    "search_kwargs": (
        "search_kwargs belongs to a vector store's as_retriever(); here pass k=, filter= "
        "(and fetch_k= where the class has it) directly"
    ),
    "docs": "pass documents with from_documents(documents, ...) (or texts with from_texts)",
    "vectorizer": "BM25 needs no vectorizer; BM25 parameters are k1=, b=, method=, delta=",
    "weights_key": "weights are given as weights=[...] (or a callable of the query)",
}
"""Arguments of LangChain community classes with a different spelling here, and the hint."""


def check_arguments(cls: type, values: Any, hints: Mapping[str, str] = ARGUMENT_HINTS) -> Any:
    """Refuse constructor keywords that are not fields of ``cls`` (pydantic "before" step).

    Raises:
        TypeError: naming every unknown argument, the community equivalent when there is
            one, and the accepted names.
    """
    if not isinstance(values, Mapping):
        return values
    fields = getattr(cls, "model_fields", {})
    known = set(fields) | {f.alias for f in fields.values() if f.alias}
    unknown = [key for key in values if key not in known]
    if not unknown:
        return values
    parts = []
    for key in unknown:
        hint = hints.get(key)
        parts.append(f"{key!r} ({hint})" if hint else repr(key))
    raise TypeError(
        f"{cls.__name__} got unexpected argument(s) {', '.join(parts)}; accepted: "
        f"{', '.join(sorted(k for k in fields if not k.startswith('_')))}"
    )
