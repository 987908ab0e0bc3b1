"""hybrid-retrievers' LlamaIndex rerankers under LlamaIndex's integration path.

``from llama_index.postprocessor.hybrid import CrossEncoderRerank, LLMListwiseRerank,
LLMRerank, MMRPostprocessor, SentenceTransformerRerank, SourceCapPostprocessor`` gives the
classes of ``llama_index_hybrid_retrievers`` (``llama_index.postprocessor`` is a namespace
package shared with the other postprocessor integrations).
"""

from llama_index_hybrid_retrievers import (
    CrossEncoderRerank,
    LLMListwiseRerank,
    LLMRerank,
    MMRPostprocessor,
    SentenceTransformerRerank,
    SourceCapPostprocessor,
    __version__,
)

__all__ = ["CrossEncoderRerank", "LLMListwiseRerank", "LLMRerank", "MMRPostprocessor",
           "SentenceTransformerRerank", "SourceCapPostprocessor", "__version__"]
