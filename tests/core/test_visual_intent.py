"""`visual_intent_rule`: visual words in six languages shift the weights toward image sources."""

from __future__ import annotations

import pytest

from hybrid_retrievers import BM25Index, FusionSearcher
from hybrid_retrievers.fusion import FilteredSource, lexical_boost_rule
from hybrid_retrievers.fusion import VISUAL_WORDS, VisualIntentRule, visual_intent_rule


@pytest.mark.parametrize("query", [
    "show me the architecture diagram",
    "is there a chart of the latency?",
    "¿Dónde está el diagrama de la arquitectura?",
    "muestra la tabla de precios",
    "una foto del prototipo",
    "el GRAFICO de ventas",           # no accent, upper case
    "les schémas du réseau",
    "zeige mir die Abbildung",
    "a imagem do painel",
    "le immagini del prodotto",
])
def test_visual_queries_boost_the_image_sources(query: str) -> None:
    assert visual_intent_rule()(query) == (1.0, 2.0)


@pytest.mark.parametrize("query", [
    "how do the services authenticate?",
    "política de devoluciones",
    "figure out the lift of a wing",   # 'figure' is left out on purpose
    "diagrammatic reasoning",          # whole words only
    "",
])
def test_other_queries_keep_the_base_weights(query: str) -> None:
    assert visual_intent_rule()(query) == (1.0, 0.5)


def test_matched_words_are_reported_as_written() -> None:
    rule = visual_intent_rule()
    assert rule.matched_words("Diagrama y diagrama, y las Imágenes") == ["Diagrama", "diagrama",
                                                                        "Imágenes"]


def test_languages_and_extra_words() -> None:
    english = visual_intent_rule(languages=["en"])
    assert english.matches("the chart") and not english.matches("el diagrama")
    assert visual_intent_rule(words=["blueprint"]).matches("the blueprint of the wing")
    with pytest.raises(ValueError, match="unknown languages"):
        visual_intent_rule(languages=["xx"])
    assert set(VISUAL_WORDS) == {"en", "es", "fr", "de", "pt", "it"}


def test_it_composes_with_the_lexical_boost_rule() -> None:
    rule = visual_intent_rule(image_sources=[2], base_weights=lexical_boost_rule(
        0, base_weights=(1.0, 1.0, 0.5)))
    assert rule("chart of error E-42") == (2.0, 1.0, 2.0)
    assert rule("chart of the errors") == (1.0, 1.0, 2.0)
    assert rule("wing lift") == (1.0, 1.0, 0.5)


def test_bad_arguments_are_named() -> None:
    with pytest.raises(ValueError, match="image_sources must point into base_weights"):
        visual_intent_rule(image_sources=[3])
    with pytest.raises(ValueError, match="boost must be >= 0, got -1"):
        visual_intent_rule(boost=-1)
    with pytest.raises(ValueError, match="at least one source"):
        VisualIntentRule(image_sources=())
    with pytest.raises(TypeError, match="words must be a list"):
        visual_intent_rule(words="chart")
    with pytest.raises(ValueError, match="single words"):
        visual_intent_rule(words=["bar chart"])
    with pytest.raises(TypeError, match="query must be a str"):
        visual_intent_rule().matches(None)  # type: ignore[arg-type]


def test_fusion_searcher_takes_the_rule_and_shows_the_weights() -> None:
    index = BM25Index.from_texts(
        ["the services connect through a message queue",
         "a diagram of the services and the message queue",
         "the queue retries failed messages"],
        ids=["t1", "img", "t2"],
        metadatas=[{"type": "text"}, {"type": "image"}, {"type": "text"}])
    text = FilteredSource(index, lambda d: d.metadata["type"] != "image", name="text")
    images = FilteredSource(index, {"type": "image"}, name="images")
    fusion = FusionSearcher([text, images], weights=visual_intent_rule())
    plain = fusion.search("how do the services connect to the queue", k=3)
    visual = fusion.search("diagram of how the services connect to the queue", k=3)
    assert plain[0].id == "t1" and visual[0].id == "img"
    source = visual[0].explanation["fusion"]["sources"][0]
    assert (source["source"], source["weight"]) == ("images", 2.0)


def test_the_images_modules_examples_run() -> None:
    import doctest

    from hybrid_retrievers.fusion import rules
    from hybrid_retrievers.images import loading

    assert sum(doctest.testmod(m).failed for m in (rules, loading)) == 0
