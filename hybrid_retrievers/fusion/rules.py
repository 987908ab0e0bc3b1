"""Query-dependent weights: rules that look at the query and pick the fusion weights.

A `FusionSearcher` accepts ``weights=`` as a callable ``weights(query) -> sequence``
(one weight per source). `lexical_boost_rule` is the rule shipped with the package:
exact tokens such as part numbers, error codes, identifiers, numbers and quoted
phrases are where lexical (BM25) retrieval beats dense embeddings, which smear them
into near neighbours; so for such queries the lexical source gets ``boost`` times
its base weight.

`visual_intent_rule` is its visual sibling: visual words in a query shift the fusion
weights toward image results. A user who asks "show me the architecture diagram" wants the diagram, and one who asks
"how do the services authenticate?" wants paragraphs. Image results (descriptions of
images, CLIP vectors) are short and generic next to text chunks, so in a plain fusion they
sink to the bottom of the ranking even when the user asked for them. The rule here, from
the multimodal-RAG lesson this package follows (module 6, "ponderación por tipo de
query"), looks for visual words in the query and, when it finds one, multiplies the
weights of the image sources by ``boost``; otherwise text leads.

`VisualIntentRule` has the shape of `LexicalBoostRule`: a
callable ``rule(query) -> weights``, one weight per source, that `FusionSearcher` (and
both frameworks' fusion and hybrid retrievers) accept as ``weights=``. Its
``base_weights`` may itself be a rule, so the two compose::

    visual_intent_rule(image_sources=[2], base_weights=lexical_boost_rule(
        0, base_weights=(1.0, 1.0, 0.5)))

The words come in six languages (`VISUAL_WORDS`: English, Spanish, French, German,
Portuguese, Italian), singular and plural, matched as whole words, case- and
accent-insensitively ("grafico" matches "gráfico"). Words that are mostly something
else in running text are left out: English "figure" ("figure out") and "figures"
("sales figures"); pass ``words=`` to add your own.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..validation import check_number, check_weights

__all__ = ["EXACT_MATCH_PATTERN", "VISUAL_WORDS", "LexicalBoostRule", "VisualIntentRule",
           "check_boost", "lexical_boost_rule", "visual_intent_rule"]

EXACT_MATCH_PATTERN = re.compile(
    r"""
      "[^"]+"                              # a "quoted phrase"
    | “[^”]+”                              # a “typographic quote”
    | \b\w*\d\w*(?:[-./:]\w+)*             # a token with a digit: 3.5, 1958, IPC-420, v2
    | \b[A-Za-z]+(?:[-_][A-Za-z0-9]+)*_[A-Za-z0-9_]+   # snake_case identifier
    | \b[a-z]+[A-Z][A-Za-z0-9]*            # camelCase identifier
    | \b[A-Z]{2,}(?:-[A-Z0-9]+)+\b         # CODE-WORD
    """,
    re.VERBOSE,
)
"""What `lexical_boost_rule` treats as an exact-match query: quotes, digits, identifiers."""


@dataclass(frozen=True)
class LexicalBoostRule:
    """Weights that favour the lexical source for queries with codes, numbers or quotes.

    Calling the rule with a query returns ``base_weights``, with the entry at
    ``lexical_index`` multiplied by ``boost`` when ``pattern`` finds a match in the query.

    Example:
        >>> rule = LexicalBoostRule(lexical_index=0, boost=2.0, base_weights=(1.0, 1.0))
        >>> rule("which connector does part IPC-420 use?")
        (2.0, 1.0)
        >>> rule("how do wings generate lift")
        (1.0, 1.0)
    """

    lexical_index: int = 0
    boost: float = 2.0
    base_weights: tuple[float, ...] = (1.0, 1.0)
    pattern: re.Pattern[str] = EXACT_MATCH_PATTERN

    def __post_init__(self) -> None:
        base = check_weights(self.base_weights, _len(self.base_weights), "base_weights")
        object.__setattr__(self, "base_weights", base)
        index = self.lexical_index
        if isinstance(index, bool) or not isinstance(index, int):
            raise TypeError(f"lexical_index must be an int, got {type(index).__name__}")
        if not 0 <= index < len(base):
            raise ValueError(
                f"lexical_index must point into base_weights (0..{len(base) - 1}), got {index}"
            )
        object.__setattr__(self, "boost", check_boost(self.boost))
        if isinstance(self.pattern, str):
            object.__setattr__(self, "pattern", re.compile(self.pattern))
        elif not isinstance(self.pattern, re.Pattern):
            raise TypeError(
                f"pattern must be a regex (str or re.Pattern), got {type(self.pattern).__name__}"
            )

    def matches(self, query: str) -> bool:
        """Whether ``query`` looks like an exact-match query."""
        return self.pattern.search(query) is not None

    def __call__(self, query: str) -> tuple[float, ...]:
        if not self.matches(query):
            return self.base_weights
        out = list(self.base_weights)
        out[self.lexical_index] *= self.boost
        return tuple(out)


def lexical_boost_rule(
    lexical_index: int = 0,
    boost: float = 2.0,
    *,
    base_weights: Sequence[float] = (1.0, 1.0),
    pattern: str | re.Pattern[str] | None = None,
) -> LexicalBoostRule:
    """A `LexicalBoostRule`: pass it as ``FusionSearcher(..., weights=rule)``.

    Args:
        lexical_index: the position of the lexical (BM25) source among the searchers.
        boost: the factor applied to its weight for exact-match queries.
        base_weights: the weights for every other query (one per source).
        pattern: overrides `EXACT_MATCH_PATTERN`.
    """
    base: Any = tuple(base_weights) if _is_seq(base_weights) else base_weights
    chosen: Any = EXACT_MATCH_PATTERN if pattern is None else pattern
    return LexicalBoostRule(
        lexical_index=lexical_index, boost=boost, base_weights=base, pattern=chosen
    )


def check_boost(boost: Any) -> float:
    """A query rule's ``boost`` as a float: a finite number >= 0 (shared by
    `LexicalBoostRule` and `VisualIntentRule`)."""
    return check_number(boost, "boost", low=0)


def _is_seq(value: Any) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, (str, bytes))


# ---------------------------------------------------------------- visual intent

VISUAL_WORDS: Mapping[str, frozenset[str]] = {
    "en": frozenset("""
        image images picture pictures photo photos photograph photographs diagram diagrams
        chart charts graph graphs plot plots table tables screenshot screenshots
        illustration illustrations drawing drawings sketch sketches map maps schematic
        schematics infographic infographics flowchart flowcharts visual visuals logo logos
        icon icons
        """.split()),
    "es": frozenset("""
        imagen imágenes foto fotos fotografía fotografías diagrama diagramas gráfico
        gráficos gráfica gráficas tabla tablas captura capturas pantallazo pantallazos
        figura figuras ilustración ilustraciones esquema esquemas mapa mapas dibujo dibujos
        infografía infografías visual visuales logotipo logotipos icono iconos
        """.split()),
    "fr": frozenset("""
        image images photo photos photographie photographies diagramme diagrammes schéma
        schémas graphique graphiques tableau tableaux capture captures illustration
        illustrations dessin dessins carte cartes infographie infographies visuel visuels
        logo logos icône icônes
        """.split()),
    "de": frozenset("""
        bild bilder foto fotos fotografie fotografien diagramm diagramme grafik grafiken
        tabelle tabellen abbildung abbildungen schaubild schaubilder skizze skizzen
        screenshot screenshots zeichnung zeichnungen karte karten infografik infografiken
        logo logos symbol symbole
        """.split()),
    "pt": frozenset("""
        imagem imagens foto fotos fotografia fotografias diagrama diagramas gráfico
        gráficos tabela tabelas captura capturas figura figuras ilustração ilustrações
        esquema esquemas mapa mapas desenho desenhos infográfico infográficos visual
        visuais logotipo logotipos ícone ícones
        """.split()),
    "it": frozenset("""
        immagine immagini foto fotografia fotografie diagramma diagrammi grafico grafici
        tabella tabelle schermata schermate figura illustrazione illustrazioni
        schema schemi mappa mappe disegno disegni infografica infografiche logo loghi
        icona icone
        """.split()),
}
"""Visual words per language (ISO 639-1 code), lower case, with their accents."""

_WORD = re.compile(r"\w+", re.UNICODE)


def _fold(word: str) -> str:
    """Lower case without accents: how query words and visual words are compared."""
    decomposed = unicodedata.normalize("NFKD", word.casefold())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


WeightsLike = Sequence[float] | Callable[[str], Sequence[float]]


@dataclass(frozen=True)
class VisualIntentRule:
    """Weights that favour the image sources for queries with visual words.

    Calling the rule with a query returns ``base_weights`` (or, when ``base_weights`` is
    itself a rule, its answer for the query), with the entries at ``image_sources``
    multiplied by ``boost`` when the query holds a visual word.

    Example:
        >>> rule = VisualIntentRule(image_sources=(1,), boost=4.0, base_weights=(1.0, 0.5))
        >>> rule("show me the architecture diagram")
        (1.0, 2.0)
        >>> rule("¿dónde está el diagrama de la arquitectura?")
        (1.0, 2.0)
        >>> rule("how do the services authenticate?")
        (1.0, 0.5)
        >>> rule.matched_words("la tabla y el gráfico")
        ['tabla', 'gráfico']
    """

    image_sources: tuple[int, ...] = (1,)
    boost: float = 4.0
    base_weights: Any = (1.0, 0.5)
    words: frozenset[str] = field(
        default_factory=lambda: frozenset().union(*VISUAL_WORDS.values()))

    def __post_init__(self) -> None:
        if not callable(self.base_weights):
            base = check_weights(self.base_weights, _len(self.base_weights), "base_weights")
            object.__setattr__(self, "base_weights", base)
            _check_sources(self.image_sources, len(base))
        else:
            _check_sources(self.image_sources, None)
        object.__setattr__(self, "image_sources", tuple(self.image_sources))
        object.__setattr__(self, "boost", check_boost(self.boost))
        object.__setattr__(self, "words", _folded_words(self.words))
        object.__setattr__(self, "_folded", {_fold(w) for w in self.words})

    def matched_words(self, query: str) -> list[str]:
        """The visual words of ``query``, as written there, in order (each once)."""
        if not isinstance(query, str):
            raise TypeError(f"query must be a str, got {type(query).__name__}")
        folded: set[str] = self._folded  # type: ignore[attr-defined]
        out: list[str] = []
        for word in _WORD.findall(query):
            if _fold(word) in folded and word not in out:
                out.append(word)
        return out

    def matches(self, query: str) -> bool:
        """Whether ``query`` holds a visual word."""
        return bool(self.matched_words(query))

    def __call__(self, query: str) -> tuple[float, ...]:
        base = self._base(query)
        if not self.matches(query):
            return base
        out = list(base)
        for i in self.image_sources:
            out[i] *= self.boost
        return tuple(out)

    def _base(self, query: str) -> tuple[float, ...]:
        if not callable(self.base_weights):
            return self.base_weights  # type: ignore[no-any-return]
        answer = list(self.base_weights(query))
        base = check_weights(answer, len(answer), "base_weights(query)")
        if max(self.image_sources) >= len(base):
            raise ValueError(
                f"image_sources {list(self.image_sources)} point past the {len(base)} "
                "weights the base_weights rule returned"
            )
        return tuple(base)


def visual_intent_rule(
    image_sources: Iterable[int] = (1,),
    boost: float = 4.0,
    *,
    base_weights: WeightsLike = (1.0, 0.5),
    languages: Iterable[str] | None = None,
    words: Iterable[str] | None = None,
) -> VisualIntentRule:
    """A `VisualIntentRule`: pass it as ``FusionSearcher(..., weights=rule)``.

    The defaults are the lesson's: text leads 2 : 1 (``base_weights=(1.0, 0.5)``) until
    a visual word turns it to 1 : 2 (``boost=4``); the lesson's 0.7 / 0.3 and 0.3 / 0.7
    are the same turn, 2.3 : 1 each way.

    Args:
        image_sources: the positions of the sources that return images (image
            descriptions, CLIP vectors) among the searchers.
        boost: the factor applied to their weights for visual queries.
        base_weights: one weight per source for every query, or a rule giving them
            (e.g. `lexical_boost_rule`).
        languages: which `VISUAL_WORDS` lists to use (default: all of them, since a
            user may ask in any).
        words: more visual words, added to the languages' lists.

    Raises:
        ValueError: an unknown language, an image source outside the weights, a
            negative or non-finite boost.
    """
    chosen = list(VISUAL_WORDS) if languages is None else _languages(languages)
    vocabulary = set().union(*(VISUAL_WORDS[code] for code in chosen))
    if words is not None:
        if isinstance(words, str):
            raise TypeError("words must be a list of words, got a str")
        vocabulary.update(words)
    base: Any = base_weights if callable(base_weights) else tuple(base_weights)
    return VisualIntentRule(image_sources=tuple(image_sources), boost=boost,
                            base_weights=base, words=frozenset(vocabulary))


def _languages(languages: Iterable[str]) -> list[str]:
    if isinstance(languages, str):
        languages = [languages]
    out = list(languages)
    unknown = [code for code in out if code not in VISUAL_WORDS]
    if unknown:
        raise ValueError(f"unknown languages {unknown}; known: {sorted(VISUAL_WORDS)}")
    return out


def _folded_words(words: Any) -> frozenset[str]:
    if isinstance(words, str) or not isinstance(words, Iterable):
        raise TypeError(f"words must be a set of words, got {type(words).__name__}")
    out = frozenset(words)
    bad = [w for w in out if not isinstance(w, str) or not _WORD.fullmatch(w)]
    if bad:
        raise ValueError(f"words must be single words (letters, digits), got {sorted(map(repr, bad))}")
    return out


def _check_sources(sources: Any, size: int | None) -> None:
    if isinstance(sources, (str, bytes)) or not isinstance(sources, Iterable):
        raise TypeError(f"image_sources must be a list of ints, got {type(sources).__name__}")
    sources = list(sources)
    if not sources:
        raise ValueError("image_sources must name at least one source")
    for i in sources:
        if isinstance(i, bool) or not isinstance(i, int) or i < 0:
            raise TypeError(f"image_sources must hold source positions (ints >= 0), got {i!r}")
        if size is not None and i >= size:
            raise ValueError(
                f"image_sources must point into base_weights (0..{size - 1}), got {i}"
            )


def _len(value: Any) -> int:
    try:
        return len(value)
    except TypeError:
        raise TypeError(
            f"base_weights must be a list of numbers (or, for VisualIntentRule, a rule), "
            f"got {type(value).__name__}"
        ) from None
