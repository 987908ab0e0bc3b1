"""One cache root for the package (issue 45): the vector caches and the ONNX / OpenVINO
exports both live under `user_cache_dir` (``~/.cache/hybrid-retrievers`` on Linux).

The exports used to go to ``~/.cache/hybrid_retrievers/onnx``: two spellings of one
root. Exports there are not looked for (a model missing in the new root is exported
again, once); an index whose saved record names an old query-encoder folder keeps using
it (`tests/models/test_onnx_query.py`, records kept).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hybrid_retrievers.ingest import folder_models
from hybrid_retrievers.models import export
from hybrid_retrievers.models.export import CACHE_ENV, cache_root, user_cache_dir
from hybrid_retrievers.models.onnx_backend import default_cache_dir

_VARIABLES = (CACHE_ENV, "HYBRID_RETRIEVERS_ONNX_CACHE", "HYBRID_RETRIEVERS_OPENVINO_CACHE",
              "XDG_CACHE_HOME")


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    for name in _VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setattr(export.sys, "platform", "linux")
    return monkeypatch


def _openvino() -> Path:
    return cache_root(None, "HYBRID_RETRIEVERS_OPENVINO_CACHE", "openvino")


def test_the_exports_live_under_the_vector_caches_root(env, tmp_path: Path) -> None:
    root = tmp_path / "home" / ".cache" / "hybrid-retrievers"
    assert folder_models.user_cache_dir() == user_cache_dir() == root
    assert default_cache_dir() == root / "onnx" and _openvino() == root / "openvino"
    env.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "xdg" / "hybrid-retrievers" / "onnx"


def test_one_variable_moves_the_whole_root(env, tmp_path: Path) -> None:
    env.setenv(CACHE_ENV, str(tmp_path / "elsewhere"))
    assert folder_models.user_cache_dir() == tmp_path / "elsewhere"
    assert default_cache_dir() == tmp_path / "elsewhere" / "onnx"
    assert _openvino() == tmp_path / "elsewhere" / "openvino"


def test_the_export_variables_and_argument_move_that_cache_alone(env, tmp_path: Path) -> None:
    env.setenv(CACHE_ENV, str(tmp_path / "root"))
    env.setenv("HYBRID_RETRIEVERS_ONNX_CACHE", str(tmp_path / "onnx-here"))
    assert default_cache_dir() == tmp_path / "onnx-here"
    assert _openvino() == tmp_path / "root" / "openvino"
    assert user_cache_dir() == tmp_path / "root"
    assert cache_root(tmp_path / "arg", "HYBRID_RETRIEVERS_ONNX_CACHE", "onnx") == \
        tmp_path / "arg"


@pytest.mark.parametrize("platform, base", [("darwin", "home/Library/Caches"),
                                            ("win32", "local")])
def test_other_platforms_use_their_user_cache_folder(
    env, tmp_path: Path, platform: str, base: str
) -> None:
    env.setattr(export.sys, "platform", platform)
    env.setenv("LOCALAPPDATA", str(tmp_path / "local"))
    assert default_cache_dir() == tmp_path / base / "hybrid-retrievers" / "onnx"
