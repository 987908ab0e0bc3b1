"""Where a LlamaIndex retriever's nodes and filter come from: the ``from_defaults`` rules.

``from_defaults`` takes its corpus from exactly one of several sources (``nodes=``,
``docstore=``, a LlamaIndex index, ...: `one_source`, `source_nodes`) and its filter as
``filter=`` or LlamaIndex's spelling ``filters=`` (`one_filter`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from llama_index.core.schema import BaseNode
from llama_index.core.storage.docstore.types import BaseDocumentStore

from ._convert import as_node_list

__all__ = ["one_filter", "one_source", "source_nodes"]


def one_filter(filter: Any, filters: Any) -> Any:
    """``filter`` or LlamaIndex's spelling ``filters`` (``VectorIndexRetriever``'s), not both."""
    if filter is not None and filters is not None:
        raise ValueError("pass filter= or filters= (the same), not both")
    return filters if filter is None else filter


def one_source(note: str = "", **sources: Any) -> str:
    """The name of the one source given (not ``None``) among ``sources``.

    Raises:
        ValueError: naming the choices (and ``note``) unless exactly one is given.
    """
    given = [name for name, value in sources.items() if value is not None]
    if len(given) != 1:
        names = [f"{name}=" for name in sources]
        if len(sources) == 2:
            got = "both" if given else "neither"
        else:
            got = str(len(given)) if given else "none"
        raise ValueError(
            f"pass exactly one of {', '.join(names[:-1])} or {names[-1]}, got {got}{note}")
    return given[0]


def source_nodes(nodes: Iterable[BaseNode] | None,
                 docstore: BaseDocumentStore | None = None) -> list[BaseNode]:
    """The nodes given, or every node of ``docstore`` when it is given instead.

    Raises:
        TypeError: for a docstore that is not a LlamaIndex one, or a single node.
    """
    if docstore is not None:
        if not isinstance(docstore, BaseDocumentStore):
            raise TypeError(
                f"docstore must be a llama_index BaseDocumentStore, got {type(docstore).__name__}"
            )
        return list(docstore.docs.values())
    return as_node_list(nodes or ())
