"""What a framework adapter may use from the core: the integrator's kit, in one place.

Users import searchers from the package root and the subpackage faces
(`hybrid_retrievers.fusion`, `hybrid_retrievers.vector`...). An adapter (our LangChain and
LlamaIndex packages, or a third framework's) needs more: building documents the way every
index does, copying metadata, all-or-nothing edits over several indexes, the fusion
planner and its concurrent runner, the halves of a fusion save, the checks with their
error messages, async query embedding. Those are gathered here, so "what may an adapter
rely on" has one answer; `tests/test_architecture.py` holds the adapters to it (they
import only the root, `hybrid_retrievers.types`, this module and the subpackage faces).

Example:
    >>> from hybrid_retrievers.integration import check_k, copy_metadata
    >>> check_k(3), copy_metadata({"source": "a.md"})
    (3, {'source': 'a.md'})
"""

from __future__ import annotations

from .bm25.fields import query_field_weights
from .documents import make_docs
from .fusion.concurrency import CallRunner, gather_calls
from .fusion.plan import FusionCall, FusionPlan, Weights
from .fusion.saving import child_kind, core_index_dir, read_fusion, save_fusion
from .fusion.searcher import FUSION_SETTINGS
from .ids import content_id, is_content_id
from .metadata import copy_metadata, copy_metadatas
from .models.framework import EmbedderAdapter, adapt_embedder
from .multi_index import add_to_all, apply_to_all, check_known_ids, delete_from_all
from .optional import require
from .parent.leaves import child_leaves
from .persistence import IndexReader, IndexWriter, atomic_index_dir, current_files, read_index
from .persistence.composite import check_weights_restorable, fusion_settings, load_children
from .rerank.inputs import input_position, pair_reranker, positional_docs
from .timeout import DEFAULT_LLM_TIMEOUT, check_timeout
from .validation import (
    check_k,
    check_k_rrf,
    check_keywords,
    check_merge_threshold,
    check_names,
    check_query,
    check_threshold,
    field_names,
    keyword_checked,
    keyword_names,
    parse_enum,
)
from .vector.queries import aembed_queries, coroutine_method, embed_queries, mean_vector

__all__ = [
    "FUSION_KEYWORDS",
    "DEFAULT_LLM_TIMEOUT",
    "CallRunner",
    "EmbedderAdapter",
    "FusionCall",
    "FusionPlan",
    "IndexReader",
    "IndexWriter",
    "Weights",
    "adapt_embedder",
    "add_to_all",
    "aembed_queries",
    "apply_to_all",
    "atomic_index_dir",
    "check_k",
    "check_k_rrf",
    "check_keywords",
    "check_known_ids",
    "check_merge_threshold",
    "check_names",
    "check_query",
    "check_threshold",
    "check_timeout",
    "check_weights_restorable",
    "child_kind",
    "child_leaves",
    "content_id",
    "copy_metadata",
    "copy_metadatas",
    "core_index_dir",
    "coroutine_method",
    "current_files",
    "delete_from_all",
    "embed_queries",
    "field_names",
    "fusion_settings",
    "gather_calls",
    "input_position",
    "is_content_id",
    "keyword_checked",
    "keyword_names",
    "load_children",
    "make_docs",
    "mean_vector",
    "pair_reranker",
    "parse_enum",
    "positional_docs",
    "query_field_weights",
    "read_fusion",
    "read_index",
    "require",
    "save_fusion",
]

FUSION_KEYWORDS = frozenset(FUSION_SETTINGS)
"""The keywords a `FusionSearcher` takes besides its searchers (``mode``, ``weights``,
``k_rrf``...): what the adapters' hybrid factories hand on in their ``**fusion``."""
