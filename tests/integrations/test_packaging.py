"""The wheel, the namespace import paths and the extras, as a user installs them."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _run(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, env={**os.environ, **env})


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("hatchling")
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps",
                    "--no-build-isolation", "-q", "-w", str(out)], check=True, timeout=300)
    (found,) = out.glob("hybrid_retrievers-*.whl")
    return found


def test_wheel_ships_llama_index_namespace_packages(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "llama_index/retrievers/hybrid/__init__.py" in names
    assert "llama_index/postprocessor/hybrid/__init__.py" in names
    # llama_index, llama_index.retrievers and .postprocessor are shared namespace packages:
    # an __init__.py there would shadow llama-index-core and every other integration.
    for shared in ("llama_index/__init__.py", "llama_index/retrievers/__init__.py",
                   "llama_index/postprocessor/__init__.py"):
        assert shared not in names
    assert {"hybrid_retrievers/__init__.py", "langchain_hybrid_retrievers/__init__.py",
            "llama_index_hybrid_retrievers/__init__.py"} <= names


def test_installed_wheel_imports_from_llama_index_paths(wheel: Path, tmp_path: Path) -> None:
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target",
                    str(target), str(wheel)], check=True, timeout=300)
    # -S: no site hooks, so neither the editable install nor the repository is on the path;
    # the framework comes from site-packages, our code only from the installed wheel.
    code = (
        "import llama_index.retrievers.hybrid as r, llama_index.postprocessor.hybrid as p\n"
        "import llama_index.core, llama_index_hybrid_retrievers as ours\n"
        f"assert r.__file__.startswith({str(target)!r}), r.__file__\n"
        "assert r.BM25Retriever is ours.BM25Retriever and p.LLMRerank is ours.LLMRerank\n"
        "assert r.HybridRetriever and p.CrossEncoderRerank\n"
        "print(len(llama_index.__path__))\n"
    )
    site = sysconfig.get_paths()["purelib"]
    done = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join([str(target), site])})
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) >= 2  # our portion beside llama-index-core's


def test_source_tree_imports_from_llama_index_paths() -> None:
    from llama_index.postprocessor.hybrid import CrossEncoderRerank, LLMRerank
    from llama_index.retrievers.hybrid import BM25Retriever, HybridRetriever

    import llama_index_hybrid_retrievers as ours

    assert (BM25Retriever, HybridRetriever, CrossEncoderRerank, LLMRerank) == (
        ours.BM25Retriever, ours.HybridRetriever, ours.CrossEncoderRerank, ours.LLMRerank)
    for shared in ("llama_index", "llama_index/retrievers", "llama_index/postprocessor"):
        assert not (ROOT / "integrations" / shared / "__init__.py").exists()


_BLOCK = """
import importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == {blocked!r} or name.startswith({blocked!r} + "."):
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None
sys.meta_path.insert(0, Block())
try:
    import {module}
except ImportError as exc:
    print(type(exc).__name__, exc)
else:
    print("imported")
"""


@pytest.mark.parametrize(("blocked", "module", "extra"), [
    ("langchain_core", "langchain_hybrid_retrievers", "langchain"),
    ("llama_index.core", "llama_index_hybrid_retrievers", "llama-index"),
    ("llama_index.core", "llama_index.retrievers.hybrid", "llama-index"),
])
def test_missing_framework_names_the_extra(blocked: str, module: str, extra: str) -> None:
    done = _run(_BLOCK.format(blocked=blocked, module=module))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ImportError"), done.stdout
    assert f"pip install 'hybrid-retrievers[{extra}]'" in done.stdout


def test_framework_extras_pull_pystemmer() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    for name, framework in (("langchain", "langchain-core"), ("llama-index", "llama-index-core")):
        names = [r.split(">")[0].split("=")[0].strip().lower() for r in extras[name]]
        assert framework in names and "pystemmer" in names, extras[name]
