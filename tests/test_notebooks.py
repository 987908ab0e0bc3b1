"""The notebooks in examples/notebooks are committed with their outputs, and still execute.

`make notebooks` (examples/notebooks/_refresh.py) refreshes the committed outputs; this
test runs every notebook again top to bottom in a fresh kernel, and checks that it prints
results without warnings on stderr (such as tqdm's "IProgress not found").
"""

from __future__ import annotations

from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

NOTEBOOKS = sorted((Path(__file__).parent.parent / "examples" / "notebooks").glob("*.ipynb"))


def _outputs(nb, kind: str | None = None) -> list:
    return [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
            if kind is None or o.get("output_type") == kind]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_committed_with_outputs_and_runs(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    assert _outputs(nb, "stream"), f"{path.name} has no outputs: run `make notebooks`"
    client = nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                                     resources={"metadata": {"path": str(path.parent)}})
    client.execute()
    printed = "".join(o.get("text", "") for o in _outputs(nb, "stream") if o.get("name") == "stdout")
    assert printed.strip()
    stderr = "".join(o.get("text", "") for o in _outputs(nb, "stream") if o.get("name") == "stderr")
    assert "IProgress" not in stderr and "Warning" not in stderr, stderr[:2000]
    if path.name == "compare_stacks.ipynb":
        assert any("image/png" in o.get("data", {}) for o in _outputs(nb, "display_data"))
