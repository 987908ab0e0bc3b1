"""The arrows between the core and the adapters point one way, and only through public names.

* The core (``hybrid_retrievers``) never imports an adapter package or a framework.
* An adapter (``integrations/``) imports only public core modules and public names: no
  ``hybrid_retrievers._x`` module and no ``_x`` name from any core module.
* Modules stay small (core <= 450 lines, adapters <= 250): one job each.

The imports are read from the source with ``ast`` (nothing is executed), so a violation
anywhere, even in a function body or behind ``TYPE_CHECKING``, fails this test.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CORE = ROOT / "hybrid_retrievers"
ADAPTERS = ROOT / "integrations"
FRAMEWORKS = ("langchain", "langchain_core", "langchain_community", "llama_index",
              "langchain_hybrid_retrievers", "llama_index_hybrid_retrievers")


def _imports(path: Path) -> list[tuple[int, str, list[str]]]:
    """(line, absolute module, imported names) for every import in ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    base = CORE.parent if path.is_relative_to(CORE) else ADAPTERS
    package = ".".join(path.relative_to(base).parent.parts)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.extend((node.lineno, alias.name, []) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                module = ".".join(base + ([module] if module else []))
            out.append((node.lineno, module, [a.name for a in node.names]))
    return out


def _py_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts)


def _is_private(part: str) -> bool:
    return part.startswith("_") and not (part.startswith("__") and part.endswith("__"))


def test_the_trees_are_found() -> None:
    assert len(_py_files(CORE)) > 20 and len(_py_files(ADAPTERS)) > 10


@pytest.mark.parametrize("path", _py_files(CORE), ids=lambda p: str(p.relative_to(ROOT)))
def test_core_never_imports_an_adapter_or_a_framework(path: Path) -> None:
    bad = [f"{path.relative_to(ROOT)}:{line} imports {module}"
           for line, module, _ in _imports(path)
           if module.split(".")[0] in FRAMEWORKS]
    assert not bad, "the core must stay framework-free:\n" + "\n".join(bad)


@pytest.mark.parametrize("path", _py_files(ADAPTERS), ids=lambda p: str(p.relative_to(ROOT)))
def test_adapters_import_only_public_core_names(path: Path) -> None:
    bad = []
    for line, module, names in _imports(path):
        parts = module.split(".")
        if parts[0] != "hybrid_retrievers":
            continue
        private = [p for p in parts[1:] if _is_private(p)] + [n for n in names if _is_private(n)]
        if private:
            bad.append(f"{path.relative_to(ROOT)}:{line} from {module} import "
                       f"{', '.join(names) or '*'} (private: {', '.join(private)})")
    assert not bad, ("adapters use the core's public API only; make what they need public "
                     "(hybrid_retrievers.validation, ...):\n" + "\n".join(bad))


CORE_MODULE_LINES = 450
ADAPTER_MODULE_LINES = 250


@pytest.mark.parametrize("path", _py_files(CORE) + _py_files(ADAPTERS),
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_modules_stay_small(path: Path) -> None:
    # One job per module: a core module past 450 lines, or an adapter past 250, is doing
    # several (split it along a real seam, as bm25/, vector/ and persistence/ are).
    limit = CORE_MODULE_LINES if path.is_relative_to(CORE) else ADAPTER_MODULE_LINES
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= limit, f"{path.relative_to(ROOT)} has {lines} lines (limit {limit})"
