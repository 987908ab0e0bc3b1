"""`index` exports the query encoders after it encodes the documents (issue 45).

Before, the export ran first and the encoding peaked on top of what the exporter and
ONNX Runtime left resident (a first three-leg ``index`` of docs/: 1.30 GB; exporting
after: 1.15 GB). The models are `HashingEmbedder` objects and the export is a recording
stand-in, so nothing is loaded.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hybrid_retrievers.ingest import FolderIndex
from hybrid_retrievers.models import HashingEmbedder, onnx_query


class _Recording(HashingEmbedder):
    def __init__(self, events: list[str]) -> None:
        super().__init__(32)
        self.events = events

    def embed_documents(self, texts):
        self.events.append("encode")
        return super().embed_documents(texts)


def test_the_query_encoders_are_exported_after_the_encoding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    events: list[str] = []

    def export(encoders, previous=None, *, log=print, cache_dir=None):
        events.append("export")
        assert set(encoders) == {"dense", "sparse"} and encoders["dense"] is model
        return {}

    monkeypatch.setattr(onnx_query, "export_query_encoders", export)
    src = tmp_path / "notes"
    src.mkdir()
    (src / "a.txt").write_text("Wings generate lift at low speed.\n", encoding="utf-8")
    model = _Recording(events)
    FolderIndex.build(src, tmp_path / "idx", model=model, sparse=False, cache=False)
    assert events == ["encode", "export"]
    (src / "b.txt").write_text("Yeast makes bread rise.\n", encoding="utf-8")
    events.clear()
    FolderIndex.build(src, tmp_path / "idx", model=model, sparse=False, cache=False)  # update
    assert events == ["encode", "export"]
