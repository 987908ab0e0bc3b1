"""A CrossEncoder look-alike whose ``predict`` returns non-numbers gets a clear error."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from hybrid_retrievers import Doc, Reranker  # noqa: E402
from hybrid_retrievers.models import CrossEncoderScorer  # noqa: E402


class StringPredictor:
    def predict(self, pairs, batch_size=32, show_progress_bar=False, convert_to_numpy=True):
        return ["high"] * len(pairs)


def test_predict_returning_strings_names_the_model() -> None:
    scorer = CrossEncoderScorer(StringPredictor())
    with pytest.raises(TypeError, match="StringPredictor.predict must return numeric logits"):
        scorer.score([("q", "p"), ("q", "r")])
    with pytest.raises(TypeError, match="numeric logits"):
        Reranker(scorer).rerank("q", [Doc("a", "p"), Doc("b", "r")])
