"""The arrows between the core and the adapters point one way, and only through public names.

* The core (``hybrid_retrievers``) never imports an adapter package or a framework.
* An adapter (``integrations/``) imports only the core's faces (the root, ``types``, each
  subpackage's ``__init__``) and the integrator's kit ``hybrid_retrievers.integration``,
  and no ``_x`` name.
* No import circles: the import graph of the core and the adapters has no cycle, counting
  imports in function bodies and behind ``TYPE_CHECKING`` (a circle marks one thing cut
  into files that still need each other). ``from package import name`` is an edge to the
  submodule ``package.name`` when that is a module, else to the package's face
  (``__init__``). Importing ``a.b.c`` also runs the faces ``a`` and ``a.b`` first, as
  Python does, so it is an edge to each face that does not enclose the importer (an import
  from inside ``a.b`` finds ``a.b`` already running). With every deferred import counted
  as an edge, no circle also means no deferred import holds one open.

The imports are read from the source with ``ast`` (nothing is executed), so a violation
anywhere, even in a function body or behind ``TYPE_CHECKING``, fails this test. Every file
is parsed once, when this module is collected (`TREES`): CPython 3.11's ``ast.parse`` can
raise a spurious ``SystemError`` ("AST constructor recursion depth mismatch") when another
thread builds an AST at the same time (cpython gh-106905), and no test threads exist yet
at collection time.
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


def _py_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts)


CORE_FILES = _py_files(CORE)
ADAPTER_FILES = _py_files(ADAPTERS)
TREES: dict[Path, ast.Module] = {
    path: ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for path in CORE_FILES + ADAPTER_FILES
}
"""Every core and adapter file, parsed once at collection time (see the module doc)."""


def _module_name(path: Path) -> str:
    """The dotted module name of ``path`` (a package's face is its ``__init__``)."""
    base = CORE.parent if path.is_relative_to(CORE) else ADAPTERS
    parts = path.relative_to(base).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> list[tuple[int, str, list[str]]]:
    """(line, absolute module, imported names) for every import in ``path``."""
    base = CORE.parent if path.is_relative_to(CORE) else ADAPTERS
    package = ".".join(path.relative_to(base).parent.parts)
    out = []
    for node in ast.walk(TREES[path]):
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


MODULES = {_module_name(path): path for path in TREES}


def _project_module(name: str) -> str | None:
    """``name`` or its nearest enclosing module of this project, or ``None``."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def package_faces(importer: str, target: str) -> list[str]:
    """The package faces Python runs before ``target`` for an import in ``importer``: each
    enclosing package of ``target`` that does not also enclose ``importer``."""
    parts = target.split(".")
    faces = (".".join(parts[:i]) for i in range(1, len(parts)))
    return [f for f in faces if f in MODULES and not f"{importer}.".startswith(f"{f}.")]


def import_graph() -> dict[str, dict[str, int]]:
    """module -> {imported project module: first line importing it}.

    ``import a.b`` is an edge to ``a.b``; ``from p import n`` to ``p.n`` when that is a
    module, else to ``p`` (a package's face is its ``__init__``); and every import is also
    an edge to the package faces Python runs on the way (`package_faces`).
    """
    graph: dict[str, dict[str, int]] = {name: {} for name in MODULES}
    for name, path in MODULES.items():
        for line, module, names in _imports(path):
            targets = [f"{module}.{n}" if f"{module}.{n}" in MODULES else module
                       for n in names] or [module]
            for target in map(_project_module, targets):
                if target is None:
                    continue
                for reached in [target, *package_faces(name, target)]:
                    if reached != name:
                        graph[name].setdefault(reached, line)
    return graph


def circles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components of ``graph`` with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def _is_private(part: str) -> bool:
    return part.startswith("_") and not (part.startswith("__") and part.endswith("__"))


def test_the_trees_are_found() -> None:
    assert len(CORE_FILES) > 20 and len(ADAPTER_FILES) > 10


@pytest.mark.parametrize("path", CORE_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_core_never_imports_an_adapter_or_a_framework(path: Path) -> None:
    bad = [f"{path.relative_to(ROOT)}:{line} imports {module}"
           for line, module, _ in _imports(path)
           if module.split(".")[0] in FRAMEWORKS]
    assert not bad, "the core must stay framework-free:\n" + "\n".join(bad)


# What an adapter may import from the core: the user's faces (the root, ``types`` and
# every subpackage's ``__init__``) and the integrator's kit, ``hybrid_retrievers.integration``.
ADAPTER_ENTRY_POINTS = (
    {"hybrid_retrievers", "hybrid_retrievers.types", "hybrid_retrievers.integration"}
    | {_module_name(path) for path in CORE_FILES if path.name == "__init__.py"}
)


@pytest.mark.parametrize("path", ADAPTER_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_adapters_import_the_core_through_its_faces_and_the_kit(path: Path) -> None:
    bad = []
    for line, module, names in _imports(path):
        if module.split(".")[0] != "hybrid_retrievers":
            continue
        private = [n for n in names if _is_private(n) and n != "__version__"]
        if module not in ADAPTER_ENTRY_POINTS or private:
            bad.append(f"{path.relative_to(ROOT)}:{line} from {module} import "
                       f"{', '.join(names) or '*'}")
    assert not bad, ("adapters import the core's faces (hybrid_retrievers, .types, a "
                     "subpackage) and the integrator's kit (hybrid_retrievers.integration) "
                     "only; add what they need to the kit:\n" + "\n".join(bad))


def test_the_import_graph_has_no_circles() -> None:
    graph = import_graph()
    report = []
    for component in circles(graph):
        members = set(component)
        edges = [f"    {src} -> {dst}  ({MODULES[src].relative_to(ROOT)}:{line})"
                 for src in component for dst, line in sorted(graph[src].items())
                 if dst in members]
        report.append(f"  circle of {len(component)}: {', '.join(component)}\n"
                      + "\n".join(edges))
    if report:
        pytest.fail(
            "modules import each other in a circle; a submodule imports a name from the "
            "module that defines it, never from its own package's face nor from a face that "
            "imports it back (merge the halves of one job, or move the shared part into a "
            "leaf module):\n" + "\n".join(report), pytrace=False)


def test_a_submodule_import_runs_the_package_faces_outside_the_importer() -> None:
    assert package_faces("hybrid_retrievers.vector.images", "hybrid_retrievers.images.loading") \
        == ["hybrid_retrievers.images"]
    assert package_faces("hybrid_retrievers.images.describe",
                         "hybrid_retrievers.images.loading") == []
    graph = import_graph()
    assert "hybrid_retrievers.images" in graph["hybrid_retrievers.vector.images"]
    assert "hybrid_retrievers.datasets" in graph["hybrid_retrievers.evaluation.runner"]


def test_the_circle_finder_sees_a_deferred_back_edge() -> None:
    graph = {"a": {"b": 1}, "b": {"c": 2}, "c": {"a": 3}, "d": {"a": 4}}
    assert circles(graph) == [["a", "b", "c"]]
    assert circles({"a": {"b": 1}, "b": {}}) == []


def _in(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def _reached_from(graph: dict[str, dict[str, int]], package: str) -> set[str]:
    """Every module the modules of ``package`` import, directly or through others."""
    seen: set[str] = set()
    todo = [m for m in graph if _in(m, package)]
    while todo:
        for target in graph[todo.pop()]:
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return seen


def test_the_engine_knows_neither_index() -> None:
    """`inverted` (the engine) reaches no module of `bm25` or `sparse`, at any depth:
    both indexes sit on it, and learned sparse runs without loading BM25's modules."""
    graph = import_graph()
    engine = "hybrid_retrievers.inverted"
    assert any(_in(m, engine) for m in graph)
    reached = _reached_from(graph, engine)
    assert not {m for m in reached
                if _in(m, "hybrid_retrievers.bm25") or _in(m, "hybrid_retrievers.sparse")}
    sparse_reaches = {m for m in _reached_from(graph, "hybrid_retrievers.sparse")
                      if _in(m, "hybrid_retrievers.bm25")}
    assert not sparse_reaches, f"sparse reaches BM25's modules: {sorted(sparse_reaches)}"
    assert "hybrid_retrievers.inverted.postings" in _reached_from(graph, "hybrid_retrievers.sparse")


def test_models_import_no_index_fusion_evaluation_or_training() -> None:
    """`models` (the encoders) sits below everything that uses them: no module of it
    imports an index, fusion, evaluation or training, not even in a function body (the
    fine-tuning loop, which needs all of them, lives in `training`, above). The one edge
    out to an index package is `SpladeEncoder`'s type hint of its `sparse` cache."""
    graph = import_graph()
    above = ("bm25", "vector", "fusion", "evaluation", "training")
    upward = {f"{m} -> {t} (line {line})" for m, targets in graph.items()
              if _in(m, "hybrid_retrievers.models")
              for t, line in targets.items()
              if any(_in(t, f"hybrid_retrievers.{p}") for p in above)}
    assert any(_in(m, "hybrid_retrievers.models") for m in graph)
    assert not upward, f"models imports from above it: {sorted(upward)}"


def test_persistence_modules_share_no_private_names() -> None:
    """The persistence package's modules (reader, writer, documents, manifest, atomic,
    safe_read) import from one another only names without a leading underscore: what
    two of them share is said to be shared, and a ``_x`` stays its module's own."""
    package = "hybrid_retrievers.persistence"
    files = [p for p in CORE_FILES if _in(_module_name(p), package)]
    assert len(files) >= 6
    bad = [f"{path.relative_to(ROOT)}:{line} from {module} import {name}"
           for path in files for line, module, names in _imports(path)
           if _in(module, package) for name in names if _is_private(name)]
    assert not bad, "private names imported across modules:\n" + "\n".join(bad)
