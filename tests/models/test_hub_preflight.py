"""Offline, a model named by its hub id fails at once with the fix, instead of after a
minute of huggingface_hub retries; a cached copy loads without calling out; a local folder
is never checked."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from hybrid_retrievers.models import (
    CrossEncoderScorer,
    ModelUnavailableError,
    SentenceTransformerEmbedder,
    SpladeEncoder,
)
from hybrid_retrievers.models import hub

pytest.importorskip("sentence_transformers")


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """No DNS answer for any host (as on a machine that reaches only a package mirror);
    records the hosts asked, and fails the test if anything tries to connect."""
    asked: list[str] = []

    def no_dns(host, *args, **kwargs):  # type: ignore[no-untyped-def]
        asked.append(host)
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    def no_connect(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise AssertionError("a connection was attempted")

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_ENDPOINT", raising=False)
    monkeypatch.setattr(socket, "getaddrinfo", no_dns)
    monkeypatch.setattr(socket, "create_connection", no_connect)
    return asked


@pytest.mark.parametrize("wrapper", [SentenceTransformerEmbedder, CrossEncoderScorer,
                                     SpladeEncoder])
def test_an_uncached_hub_name_fails_at_once_naming_the_model_and_the_fix(
        wrapper: type, offline: list[str]) -> None:
    model = wrapper("nobody-here/no-such-model-xyz")
    with pytest.raises(ModelUnavailableError) as caught:
        model.warm_up()
    message = str(caught.value)
    assert "'nobody-here/no-such-model-xyz'" in message and wrapper.__name__ in message
    assert "local folder" in message and "cannot be reached" in message
    assert offline == ["huggingface.co"]
    assert isinstance(caught.value, OSError)  # what loaders raise for a missing model


def test_hf_endpoint_is_the_host_asked(offline: list[str],
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_ENDPOINT", "https://hub.example.internal:8443")
    assert hub.hub_reachable() is False
    assert offline == ["hub.example.internal"]


def test_a_local_folder_loads_offline_without_asking(offline: list[str],
                                                     tmp_path: Path) -> None:
    from tiny_cross_encoder import SAMPLE_PAIRS, build_tiny_cross_encoder

    folder = build_tiny_cross_encoder(tmp_path / "ce")
    scores = CrossEncoderScorer(str(folder)).score(SAMPLE_PAIRS[:2])
    assert len(scores) == 2 and offline == []


def test_a_cached_hub_model_loads_from_the_cache_only(offline: list[str], tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The model is in the Hugging Face cache layout (models--org--name/snapshots/rev):
    offline it is loaded with local_files_only=True, so nothing calls out."""
    from huggingface_hub import constants

    snapshot = tmp_path / "models--someone--tiny" / "snapshots" / "0123abc"
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text("{}")
    (tmp_path / "models--someone--tiny" / "refs").mkdir()
    (tmp_path / "models--someone--tiny" / "refs" / "main").write_text("0123abc")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path))
    kwargs: dict = {}
    hub.prepare_hub_load("someone/tiny", kwargs, what="X")
    assert kwargs == {"local_files_only": True}
    with pytest.raises(ModelUnavailableError):
        hub.prepare_hub_load("someone/not-cached", {}, what="X")


def test_reachable_hub_or_offline_mode_leave_loading_as_asked(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(hub, "hub_reachable", lambda endpoint=None: True)
    kwargs: dict = {}
    hub.prepare_hub_load("org/model", kwargs, what="X")
    assert kwargs == {}
    monkeypatch.setattr(hub, "hub_reachable", lambda endpoint=None: False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # huggingface_hub itself never calls out then
    hub.prepare_hub_load("org/model", kwargs, what="X")
    assert kwargs == {}


def test_the_cli_names_the_model_and_the_fix_at_once(offline: list[str], tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    from hybrid_retrievers.cli import main

    src = tmp_path / "docs"
    src.mkdir()
    (src / "a.md").write_text("Lift grows with the angle of attack.\n", encoding="utf-8")
    assert main(["index", str(src), "--out", str(tmp_path / "idx"), "--bm25-only"]) == 0
    capsys.readouterr()
    code = main(["search", str(tmp_path / "idx"), "lift", "--rerank",
                 "cross-encoder/ms-marco-MiniLM-L-6-v2"])
    err = capsys.readouterr().err
    assert code != 0
    assert "cannot load model 'cross-encoder/ms-marco-MiniLM-L-6-v2'" in err
    assert "Traceback" not in err
