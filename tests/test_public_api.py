"""The public faces, pinned: a name joins or leaves a face only through a reviewed diff here.

Each list is the package's ``__all__``, sorted, as langchain-chroma's ``test_imports.py``
pins its one name. The root keeps the names a first task needs; everything else lives on
its subpackage's face (``hybrid_retrievers.fusion.lexical_boost_rule``,
``hybrid_retrievers.text.SentenceSplitter``...). Every listed name must import.
"""

from __future__ import annotations

import importlib

import pytest

FACES = {
    # Fusion: ranked lists fused (modes, plan, runner, rules), FusionSearcher and the
    # multimodal searcher (text and image queries over every route).
    "hybrid_retrievers.fusion": [
        "CallRunner",
        "Combination",
        "DEFAULT_K_RRF",
        "DEFAULT_MIN_FETCH_K",
        "DEFAULT_QUERY_GEN_PROMPT",
        "Dedup",
        "EXACT_MATCH_PATTERN",
        "FilteredSource",
        "FusionCall",
        "FusionMode",
        "FusionPlan",
        "FusionSearcher",
        "IMAGE_ROUTES",
        "ImageQuery",
        "LEG_FAMILIES",
        "LexicalBoostRule",
        "MULTIMODAL_ROUTES",
        "MultimodalSearcher",
        "Normalization",
        "QueryVariants",
        "VISUAL_WORDS",
        "VisualIntentRule",
        "agenerate_query_variants",
        "check_query_prompt",
        "combine_filters",
        "default_fetch_k",
        "default_multimodal_rule",
        "dist_based_normalize",
        "fuse",
        "gather_calls",
        "generate_query_variants",
        "hybrid_mode",
        "hybrid_weights",
        "lexical_boost_rule",
        "min_max_normalize",
        "normalize_scores",
        "normalized_text_hash",
        "parse_query_variants",
        "reciprocal_rank_fusion",
        "run_calls",
        "score_fusion",
        "visual_intent_rule",
        "z_score_normalize",
    ],
    # Images: loading, descriptions, RAG context (a leaf below the indexes).
    "hybrid_retrievers.images": [
        "CAPTION_KEYS",
        "DEFAULT_DESCRIPTION_PROMPT",
        "DEFAULT_MAX_BYTES",
        "DEFAULT_MAX_PIXELS",
        "Describer",
        "DescriptionCache",
        "DescriptionError",
        "DescriptionReport",
        "IMAGE_SUFFIXES",
        "ImageError",
        "ImageInput",
        "LoadedImage",
        "SUPPORTED_FORMATS",
        "SkippedImage",
        "describe_image",
        "describe_images",
        "describe_images_report",
        "describer_name",
        "find_image_files",
        "format_context",
        "image_id",
        "image_metadata",
        "load_image",
        "load_images",
    ],
    # Ingestion: files -> structure -> chunks -> incremental plan -> a folder index on disk.
    "hybrid_retrievers.ingest": [
        "COMPRESSED_SUFFIXES",
        "Chunk",
        "DEFAULT_CHUNK_OVERLAP",
        "DEFAULT_CHUNK_SIZE",
        "DOCUMENT_SUFFIXES",
        "END_INDEX_KEY",
        "FILE_HASH_KEY",
        "FILE_KEY",
        "FolderIndex",
        "FolderResult",
        "IndexReport",
        "MAX_CHARS_PER_TOKEN",
        "MAX_DECOMPRESSED_BYTES",
        "ParsedDocument",
        "SECTION_KEY",
        "Section",
        "SourceError",
        "StructuredChunker",
        "SyncPlan",
        "TokenCounter",
        "approximate_tokens",
        "decode_html",
        "decode_text",
        "document_chunks",
        "html_structure",
        "indexed_files",
        "markdown_structure",
        "parents_from_chunks",
        "plain_structure",
        "plan_sync",
        "read_document",
        "renamed_id",
        "rst_structure",
        "sections_from_headings",
        "token_counter",
    ],
    # Models: the adapters of sentence-transformers checkpoints (loaded on first use) and fakes.
    "hybrid_retrievers.models": [
        "ClipEmbedder",
        "CrossEncoderScorer",
        "DEFAULT_CLIP_MODEL",
        "DEFAULT_CROSS_ENCODER",
        "DEFAULT_EMBEDDING_MODEL",
        "DEFAULT_SPARSE_MODEL",
        "EmbedderAdapter",
        "HashingEmbedder",
        "HashingSparseEmbedder",
        "ModelUnavailableError",
        "SentenceTransformerEmbedder",
        "SpladeEncoder",
        "adapt_embedder",
        "local_minilm_path",
        "local_splade_path",
        "model_name",
    ],
    # Training: fine-tuning a bi-encoder on a corpus, measured before and after (above models).
    "hybrid_retrievers.training": [
        "FineTuneResult",
        "TrainingPair",
        "fine_tune_embedder",
        "mine_pairs",
        "split_queries",
    ],
    # Learned sparse retrieval: the index on the inverted engine, its explanations and cache.
    "hybrid_retrievers.sparse": [
        "FORMAT_VERSION",
        "SparseEmbeddingCache",
        "SparseExplanation",
        "SparseIndex",
        "SparseTermContribution",
    ],
    # The other subpackage faces and the shared types, each as its package exports it.
    "hybrid_retrievers.bm25": [
        "BM25Explanation",
        "BM25Index",
        "BM25Method",
        "BM25Params",
        "CollectionStats",
        "FORMAT_VERSION",
        "TermContribution",
    ],
    "hybrid_retrievers.cli": [
        "main",
    ],
    "hybrid_retrievers.datasets": [
        "BeirDataset",
        "available_datasets",
        "load_beir",
        "load_dataset",
    ],
    "hybrid_retrievers.distributed": [
        "EncodedCorpus",
        "PartialHits",
        "PartialResultsWarning",
        "ShardHit",
        "ShardServer",
        "ShardTimeoutError",
        "ShardUnavailableError",
        "ShardedManifest",
        "ShardedSearcher",
        "build_bm25_shards",
        "build_sparse_shards",
        "build_vector_shards",
        "encode_corpus",
        "merge_top_k",
        "plan_shards",
        "shard_of",
    ],
    "hybrid_retrievers.evaluation": [
        "BeirDataset",
        "DEFAULT_METRICS",
        "EvaluationReport",
        "FoldChoice",
        "MetricSpec",
        "Qrels",
        "QueryDiff",
        "Ranking",
        "RankingCallable",
        "Run",
        "SIGNIFICANCE_TESTS",
        "SPACE_KEYS",
        "Significance",
        "TABLE_METRICS",
        "TuningResult",
        "cross_validate",
        "evaluate",
        "evaluate_run",
        "hits_to_run",
        "load_beir",
        "paired_test",
        "parse_metric",
        "per_query_metrics",
        "tune",
    ],
    "hybrid_retrievers.hyde": [
        "HYDE_OPTIONS",
        "HYDE_PROMPTS",
        "HyDE",
        "HyDEResult",
        "HyDESearcher",
        "PassageCache",
        "render_prompt",
    ],
    "hybrid_retrievers.inverted": [
        "Backend",
        "BackendName",
        "ImpactScorer",
        "Scorer",
        "Variant",
    ],
    "hybrid_retrievers.parent": [
        "ParentChildSearcher",
        "ParentGroup",
        "ParentStore",
        "ParentStoreLike",
        "SOURCE_ID_KEY",
        "UnmergedChild",
        "default_child_index",
        "default_parent_fetch_k",
        "split_into_parents",
    ],
    "hybrid_retrievers.persistence": [
        "AtomicSave",
        "FORMAT_NAME",
        "IndexFormatError",
        "IndexReader",
        "IndexWriter",
        "LAYOUT_VERSION",
        "LOCK",
        "LOCK_TIMEOUT",
        "MANIFEST",
        "atomic_index_dir",
        "check_path",
        "current_files",
        "index_kind",
        "read_index",
    ],
    "hybrid_retrievers.rerank": [
        "ChoiceSelectReranker",
        "DEFAULT_CHOICE_SELECT_PROMPT",
        "DEFAULT_LLM_RERANK_PROMPT",
        "LLMReranker",
        "MMRReranker",
        "RERANK_KEY",
        "RankingParse",
        "RerankInput",
        "RerankItem",
        "Reranker",
        "RerankingSearcher",
        "SourceCap",
        "as_pair_scorer",
        "format_choice_batch",
        "parse_choice_select_answer",
        "parse_ranking",
    ],
    "hybrid_retrievers.text": [
        "ANALYZER_CONFIG_VERSION",
        "Analyzer",
        "BUILTIN_TOKENIZERS",
        "CHILD_INDEX_KEY",
        "PARENT_ID_KEY",
        "START_INDEX_KEY",
        "SentenceSplitter",
        "Splitter",
        "UnknownTokenizerError",
        "as_splitter",
        "available_languages",
        "available_stopword_languages",
        "available_tokenizers",
        "child_id",
        "cjk_bigrams",
        "load_stopwords",
        "register_tokenizer",
        "split_parents",
        "stopwords_source",
        "unregister_tokenizer",
    ],
    "hybrid_retrievers.types": [
        "Doc",
        "Embedder",
        "Hit",
        "MetadataFilter",
        "PairScorer",
        "Searcher",
        "SparseEmbedder",
        "TextGenerator",
    ],
    "hybrid_retrievers.vector": [
        "DEFAULT_BATCH_SIZE",
        "EmbeddingCache",
        "FORMAT_VERSION",
        "FaissHNSW",
        "HNSWConfig",
        "METRICS",
        "VectorIndex",
        "embed_texts",
        "embedder_identity",
        "text_key",
    ],
    # The integrator's kit: what a framework adapter may use beyond the faces.
    "hybrid_retrievers.integration": [
        "CallRunner",
        "DEFAULT_LLM_TIMEOUT",
        "EmbedderAdapter",
        "FUSION_KEYWORDS",
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
    ],
    "hybrid_retrievers": [
        "Analyzer",
        "BM25Index",
        "Doc",
        "Embedder",
        "FusionMode",
        "FusionSearcher",
        "Hit",
        "HyDESearcher",
        "IndexFormatError",
        "LLMReranker",
        "MetadataFilter",
        "PairScorer",
        "ParentChildSearcher",
        "Query",
        "Reranker",
        "RerankingSearcher",
        "Searcher",
        "SparseIndex",
        "TextGenerator",
        "VectorIndex",
        "__version__",
        "reciprocal_rank_fusion",
    ],
    "langchain_hybrid_retrievers": [
        "BM25Retriever",
        "ChatModelDescriber",
        "ClipEmbeddings",
        "CrossEncoderReranker",
        "DenseRetriever",
        "FusionRetriever",
        "HyDERetriever",
        "HybridRetriever",
        "HypotheticalDocumentEmbedder",
        "ImageRetriever",
        "LLMChoiceRerankCompressor",
        "LLMRerankCompressor",
        "LangChainEmbedder",
        "LangChainParentStore",
        "MMRCompressor",
        "MultiVectorRetriever",
        "MultimodalRetriever",
        "ParentDocumentRetriever",
        "RerankingRetriever",
        "ScoredVectorStoreRetriever",
        "SearcherRetriever",
        "SourceCapCompressor",
        "SparseRetriever",
        "__version__",
        "as_eval_callable",
    ],
    "llama_index_hybrid_retrievers": [
        "BM25Retriever",
        "ClipEmbedding",
        "CrossEncoderRerank",
        "DenseRetriever",
        "FusionRetriever",
        "HyDEQueryTransform",
        "HyDERetriever",
        "HybridRetriever",
        "LLMListwiseRerank",
        "LLMRerank",
        "LlamaIndexEmbedder",
        "MMRPostprocessor",
        "MultiModalLLMDescriber",
        "MultimodalRetriever",
        "ParentDocumentRetriever",
        "SearcherRetriever",
        "SentenceTransformerRerank",
        "SourceCapPostprocessor",
        "SparseRetriever",
        "__version__",
        "as_eval_callable",
    ],
    # LlamaIndex's integration paths: the same classes as llama_index_hybrid_retrievers.
    "llama_index.retrievers.hybrid": [
        "BM25Retriever",
        "ClipEmbedding",
        "DenseRetriever",
        "FusionRetriever",
        "HyDERetriever",
        "HybridRetriever",
        "LlamaIndexEmbedder",
        "MultiModalLLMDescriber",
        "MultimodalRetriever",
        "ParentDocumentRetriever",
        "SearcherRetriever",
        "SparseRetriever",
        "__version__",
    ],
    "llama_index.postprocessor.hybrid": [
        "CrossEncoderRerank",
        "LLMListwiseRerank",
        "LLMRerank",
        "MMRPostprocessor",
        "SentenceTransformerRerank",
        "SourceCapPostprocessor",
        "__version__",
    ],
}


FRAMEWORK = {"langchain_hybrid_retrievers": "langchain_core",
             "llama_index_hybrid_retrievers": "llama_index.core",
             "llama_index.retrievers.hybrid": "llama_index.core",
             "llama_index.postprocessor.hybrid": "llama_index.core"}
"""The framework each adapter face needs (the test is skipped without it)."""


def _face(module: str) -> object:
    if module in FRAMEWORK:
        pytest.importorskip(FRAMEWORK[module])
    return importlib.import_module(module)


@pytest.mark.parametrize("module", sorted(FACES))
def test_all_is_pinned(module: str) -> None:
    assert sorted(_face(module).__all__) == FACES[module]  # type: ignore[attr-defined]


@pytest.mark.parametrize("module", sorted(FACES))
def test_every_name_in_all_imports(module: str) -> None:
    face = _face(module)
    missing = [name for name in face.__all__ if not hasattr(face, name)]  # type: ignore[attr-defined]
    assert not missing, f"{module}.__all__ names what it does not define: {missing}"


@pytest.mark.parametrize("module", ["llama_index.retrievers.hybrid",
                                    "llama_index.postprocessor.hybrid"])
def test_llama_index_paths_give_the_package_classes(module: str) -> None:
    face = _face(module)
    package = importlib.import_module("llama_index_hybrid_retrievers")
    assert all(getattr(face, name) is getattr(package, name)
               for name in face.__all__)  # type: ignore[attr-defined]


def test_every_subpackage_face_is_pinned() -> None:
    """A new subpackage's ``__all__`` is a public face too: it joins FACES when it appears."""
    import pkgutil

    import hybrid_retrievers

    packages = {f"hybrid_retrievers.{m.name}"
                for m in pkgutil.iter_modules(hybrid_retrievers.__path__)
                if m.ispkg and not m.name.startswith("_")}
    unpinned = sorted(p for p in packages
                      if hasattr(importlib.import_module(p), "__all__") and p not in FACES)
    assert not unpinned, f"pin these faces in FACES: {unpinned}"


def test_private_modules_carry_no_all() -> None:
    """``__all__`` marks a public face; a private module (``_x.py``) has none to mark."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    files = [p for folder in ("hybrid_retrievers", "integrations")
             for p in (root / folder).rglob("_*.py") if not p.name.startswith("__")]
    marked = sorted(str(p.relative_to(root)) for p in files
                    if any(isinstance(node, ast.Assign)
                           and any(getattr(t, "id", None) == "__all__" for t in node.targets)
                           for node in ast.parse(p.read_text(encoding="utf-8")).body))
    assert files and not marked, f"private modules with __all__: {marked}"
