"""Execute the notebooks in place, so they are committed with their outputs (`make notebooks`).

Each notebook runs top to bottom in a fresh kernel from its own folder; outputs (tables,
printed results, the comparison plot) are stored in the file, so a code host shows them
without running anything. Volatile metadata (execution timestamps) is dropped to keep
diffs to what changed. tests/test_notebooks.py executes them again, in memory.

Run: python examples/notebooks/_refresh.py [NOTEBOOK ...]
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbclient
import nbformat

HERE = Path(__file__).resolve().parent


def execute(path: Path) -> nbformat.NotebookNode:
    """Run ``path`` in a fresh kernel (cwd: its folder) and return it with outputs."""
    nb = nbformat.read(path, as_version=4)
    nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}}).execute()
    return nb


def strip_volatile(nb: nbformat.NotebookNode) -> None:
    for cell in nb.cells:
        cell.get("metadata", {}).pop("execution", None)


def main(argv: list[str]) -> int:
    paths = [Path(a) for a in argv] or sorted(HERE.glob("*.ipynb"))
    for path in paths:
        nb = execute(path)
        strip_volatile(nb)
        nbformat.write(nb, path)
        print(f"refreshed {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
