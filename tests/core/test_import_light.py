"""The core imports without torch or any framework, quickly."""

from __future__ import annotations

import subprocess
import sys


def test_core_import_loads_no_heavy_dependency() -> None:
    code = (
        "import sys, time; t=time.perf_counter(); import hybrid_retrievers; "
        "import hybrid_retrievers.evaluation, hybrid_retrievers.datasets; "
        "dt=time.perf_counter()-t; "
        "heavy=[m for m in ('torch','sentence_transformers','transformers','langchain_core',"
        "'llama_index','bm25s','rank_bm25','tqdm','matplotlib') if m in sys.modules]; "
        "print(heavy, dt)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    heavy, seconds = out.stdout.rsplit(" ", 1)
    assert heavy == "[]", heavy
    assert float(seconds) < 2.0
