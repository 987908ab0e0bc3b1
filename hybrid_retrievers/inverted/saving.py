"""The engine's half of the on-disk format: one snapshot's documents, vocabulary and postings.

`write_postings` writes, into an `IndexWriter`'s directory, the documents
(`hybrid_retrievers.persistence.documents`),
``vocabulary.json`` (terms in term-id order) and the postings as ``.npy`` arrays
(``postings_indptr``, ``postings_docs``, the posting values and ``doc_lengths``), and
returns the counts the manifest records; `read_postings` reads them back, checked. The
manifests, and what else an index keeps, are the indexes' own
(`hybrid_retrievers.bm25.saving`, ``kind="bm25"``; `hybrid_retrievers.sparse.saving`,
``kind="sparse"``).
"""

from __future__ import annotations

import numpy as np

from .._integrity import check_offsets, check_postings
from ..persistence import IndexFormatError, IndexReader, IndexWriter
from ..persistence.documents import read_documents, write_documents
from .postings import Snapshot
from .scorer import MAX_IMPACT

__all__ = ["write_postings", "read_postings"]


def write_postings(w: IndexWriter, st: Snapshot, values: str = "postings_tf") -> dict[str, object]:
    """Write a snapshot's documents, vocabulary and postings; the manifest's counts back.

    ``values`` names the file of the posting values (BM25's term frequencies, or a
    sparse index's float32 weights).
    """
    terms = [""] * len(st.vocab)
    for t, i in st.vocab.items():
        terms[i] = t
    layout = write_documents(w, st.docs)  # first: it is what refuses bad metadata
    w.json("vocabulary", terms)
    w.array("postings_indptr", st.indptr)
    w.array("postings_docs", st.post_docs)
    w.array(values, st.post_tf)
    w.array("doc_lengths", st.doc_len)
    return {"n_docs": len(st.docs), "vocabulary_size": len(terms),
            "n_postings": int(st.post_docs.size), **layout}


def read_postings(r: IndexReader, *, mmap: bool = False, verify: bool = False,
                  values: str = "postings_tf") -> Snapshot:
    """The snapshot `write_postings` wrote, checked for structure.

    Document ids in range, each term's documents strictly increasing, and the values:
    term frequencies >= 1 and document lengths equal to their postings' token counts,
    or (``values`` of float kind, a sparse index) weights > 0 and at most `MAX_IMPACT`,
    and document lengths equal to their numbers of postings. With ``mmap`` the posting documents and
    values are memory-mapped; their checksums and the per-posting checks are skipped
    unless ``verify``.
    """
    where = r.where()
    n_docs = r.count("n_docs")
    vocabulary_size = r.count("vocabulary_size")
    indptr = r.array("postings_indptr", dtype_kind="i", ndim=1, length=vocabulary_size + 1)
    check_offsets(indptr, where=where)
    n_postings = int(indptr[-1])
    post_docs = r.array("postings_docs", dtype_kind="i", ndim=1, length=n_postings,
                        mmap=mmap, verify=verify)
    impacts = values != "postings_tf"
    post_tf = r.array(values, dtype_kind="f" if impacts else "u", ndim=1, length=n_postings,
                      mmap=mmap, verify=verify)
    doc_len = r.array("doc_lengths", dtype_kind="i", ndim=1, length=n_docs)
    check_postings(indptr, post_docs, post_tf, doc_len, where=where, full=not mmap or verify,
                   impacts=impacts, max_impact=MAX_IMPACT)
    if "n_postings" in r.manifest and r.manifest["n_postings"] != n_postings:
        raise IndexFormatError(
            f"{where}: manifest says {r.manifest['n_postings']!r} postings, "
            f"postings_indptr ends at {n_postings}"
        )
    terms = r.json("vocabulary")
    if (
        not isinstance(terms, list)
        or len(terms) != vocabulary_size
        or not all(isinstance(t, str) for t in terms)
        or len(set(terms)) != len(terms)
    ):
        raise IndexFormatError(f"{where}/vocabulary.json must list {vocabulary_size} distinct terms")
    docs = read_documents(r, n_docs, mmap=mmap, verify=verify)
    return Snapshot(
        docs, {t: i for i, t in enumerate(terms)}, indptr.astype(np.int64),
        post_docs if post_docs.dtype == np.int32 else post_docs.astype(np.int32),
        post_tf, doc_len.astype(np.int32),
    )
