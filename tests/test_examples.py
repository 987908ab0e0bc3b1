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
