"""Constructor argument checks shared by the LangChain classes, written once.

LangChain's ``BaseRetriever`` silently drops unknown constructor arguments; ours refuse
them (`check_arguments`, naming the equivalent of a LangChain community argument from
`ARGUMENT_HINTS`). `refuse_unknown` and `count_validator` make the pydantic validators
every class uses; `pop_options` takes a part's options out of a recipe's keyword arguments.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import ValidationInfo, field_validator, model_validator

from hybrid_retrievers.integration import check_k

__all__ = ["ARGUMENT_HINTS", "check_arguments", "count_validator", "pop_options",
           "refuse_unknown"]

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
    "top_n": (
        "a retriever's number of documents to return is k, as on every retriever here "
        "(top_n is the compressors' spelling: CrossEncoderReranker, LLMRerankCompressor)"
    ),
    "search_kwargs": (
        "search_kwargs belongs to a vector store's as_retriever(); here pass k=, filter= "
        "(and fetch_k= where the class has it) directly"
    ),
    "child_retriever": (
        "the child store is vectorstore=, as in LangChain's ParentDocumentRetriever (a "
        "vector store, its as_retriever(), or any editable retriever)"
    ),
    "docs": "pass documents with from_documents(documents, ...) (or texts with from_texts)",
    "vectorizer": "BM25 needs no vectorizer; BM25 parameters are k1=, b=, method=, delta=",
    "weights_key": "weights are given as weights=[...] (or a callable of the query)",
}
"""Arguments of LangChain community classes with a different spelling here, and the hint."""


def check_arguments(cls: type, values: Any, hints: Mapping[str, str] = ARGUMENT_HINTS) -> Any:
    """Refuse constructor keywords that are not fields of ``cls``: `TypeError` naming each
    one (with its community equivalent from ``hints``) and the accepted names."""
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


def refuse_unknown() -> Any:
    """A pydantic "before" model validator running `check_arguments` for its class."""
    def check(cls: type, values: Any) -> Any:
        return check_arguments(cls, values)
    return model_validator(mode="before")(classmethod(check))  # type: ignore[arg-type]


def count_validator(*fields: str, optional: bool = False) -> Any:
    """A pydantic "before" validator: each field is a count >= 1 (`check_k`, named by the
    field); ``None`` passes when ``optional`` (``fetch_k=None`` means "the default")."""
    def check(cls: type, value: Any, info: ValidationInfo) -> int | None:
        return None if optional and value is None else check_k(value, name=info.field_name)
    return field_validator(*fields, mode="before")(classmethod(check))  # type: ignore[arg-type]


def pop_options(kwargs: dict[str, Any], names: Iterable[str]) -> dict[str, Any]:
    """Remove the keys ``names`` from ``kwargs`` and return them (a part's options)."""
    return {name: kwargs.pop(name) for name in names if name in kwargs}
