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
    # Images: loading, descriptions, visual intent, multimodal search, RAG context.
    "hybrid_retrievers.images": [
        "CAPTION_KEYS",
        "DEFAULT_DESCRIPTION_PROMPT",
        "DEFAULT_MAX_PIXELS",
        "Describer",
        "DescriptionCache",
        "DescriptionError",
        "DescriptionReport",
        "IMAGE_ROUTES",
        "IMAGE_SUFFIXES",
        "ImageError",
        "ImageInput",
        "ImageQuery",
        "LoadedImage",
        "MultimodalSearcher",
        "ROUTES",
        "SUPPORTED_FORMATS",
        "SkippedImage",
        "VISUAL_WORDS",
        "VisualIntentRule",
        "default_multimodal_rule",
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
        "visual_intent_rule",
    ],
    # Ingestion for the index command: files -> structure -> chunks -> incremental plan.
    "hybrid_retrievers.ingest": [
        "Chunk",
        "DEFAULT_CHUNK_OVERLAP",
        "DEFAULT_CHUNK_SIZE",
        "DOCUMENT_SUFFIXES",
        "END_INDEX_KEY",
        "FILE_HASH_KEY",
        "FILE_KEY",
        "MAX_CHARS_PER_TOKEN",
        "ParsedDocument",
        "SECTION_KEY",
        "Section",
        "SourceError",
        "StructuredChunker",
        "SyncPlan",
        "TokenCounter",
        "approximate_tokens",
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
        "FineTuneResult",
        "HashingEmbedder",
        "HashingSparseEmbedder",
        "SentenceTransformerEmbedder",
        "SpladeEncoder",
        "TrainingPair",
        "adapt_embedder",
        "fine_tune_embedder",
        "local_minilm_path",
        "local_splade_path",
        "mine_pairs",
        "model_name",
        "split_queries",
    ],
    # The integrator's kit: what a framework adapter may use beyond the faces.
    "hybrid_retrievers.integration": [
        "CallRunner",
        "DEFAULT_LLM_TIMEOUT",
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
        "call_with_timeout",
        "check_k",
        "check_k_rrf",
        "check_known_ids",
        "check_merge_threshold",
        "check_names",
        "check_number",
        "check_query",
        "check_threshold",
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
        "fusion_settings",
        "gather_calls",
        "input_position",
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
        "ImageRetriever",
        "LLMRerankCompressor",
        "LangChainEmbedder",
        "LangChainParentStore",
        "MMRCompressor",
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
        "HyDERetriever",
        "HybridRetriever",
        "LLMRerank",
        "LlamaIndexEmbedder",
        "MMRPostprocessor",
        "MultiModalLLMDescriber",
        "MultimodalRetriever",
        "ParentDocumentRetriever",
        "SearcherRetriever",
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
        "LLMRerank",
        "MMRPostprocessor",
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
