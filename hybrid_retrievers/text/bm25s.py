"""The ``bm25s`` library's tokenizer options as an `Analyzer`.

``bm25s`` (and the retrievers wrapping it, such as llama-index-retrievers-bm25) spell the
analysis as ``language`` (stopwords and stemmer language), ``stemmer`` (a PyStemmer
``Stemmer.Stemmer`` object, or a callable) and ``skip_stemming``. `analyzer_from_bm25s`
maps them onto one `Analyzer`, which is saved with the index and used for documents and
queries alike. A PyStemmer object is accepted only when it stems like the Snowball
stemmer of ``language`` (the analyzer uses that one, so the index can be saved).
"""

from __future__ import annotations

from typing import Any

from .analyzer import Analyzer

__all__ = ["analyzer_from_bm25s"]

_PROBE = ["running", "connections", "generously", "nations", "happiness"]


def analyzer_from_bm25s(analyzer: Analyzer | None, language: str | None, stemmer: Any,
                        skip_stemming: bool) -> Analyzer | None:
    """``analyzer``, or the `Analyzer` of the bm25s options (``None`` when none is given).

    Raises:
        ValueError: for ``analyzer`` together with a bm25s option, ``stemmer`` together
            with ``skip_stemming``, or a PyStemmer stemmer that does not stem like
            Snowball ``language`` (default English).
    """
    if language is None and stemmer is None and not skip_stemming:
        return analyzer
    if analyzer is not None:
        raise ValueError("pass analyzer= or language= / stemmer= / skip_stemming=, not both")
    if skip_stemming and stemmer is not None:
        raise ValueError("pass stemmer= or skip_stemming=True, not both")
    lang = "english" if language is None else language
    spec: Any = "default"
    if skip_stemming:
        spec = None
    elif callable(getattr(stemmer, "stemWords", None)):  # a PyStemmer Stemmer object
        reference = Analyzer(lang, stopwords=None)
        if [reference.tokenize(w)[0] for w in _PROBE] != list(stemmer.stemWords(_PROBE)):
            raise ValueError(
                f"the PyStemmer stemmer given does not stem like Snowball {lang!r}; pass "
                "language= matching it (it sets the Snowball stemmer and stopwords)"
            )
    elif stemmer is not None:
        spec = stemmer
    return Analyzer(lang, stemmer=spec)
