"""The core imports without torch, scipy or any framework: numpy is its only import-time dependency.

What the import costs in time is a benchmark's business; this test pins what it loads,
which is what makes it fast and does not vary with the machine's load.
"""

from __future__ import annotations

import json
import subprocess
import sys


def test_core_import_loads_no_heavy_dependency() -> None:
    code = (
        "import json, sys; before = set(sys.modules); "
        "import hybrid_retrievers, hybrid_retrievers.evaluation, hybrid_retrievers.datasets, "
        "hybrid_retrievers.integration, hybrid_retrievers.images; "
        "new = {m.split('.')[0] for m in set(sys.modules) - before}; "
        "print(json.dumps(sorted(new - set(sys.stdlib_module_names))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    third_party = set(json.loads(out.stdout)) - {"hybrid_retrievers"}
    assert third_party == {"numpy"}, sorted(third_party)
