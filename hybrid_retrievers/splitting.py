"""Kept for compatibility: parent splitting moved to :mod:`hybrid_retrievers.text.splitting`.

``from hybrid_retrievers.splitting import SentenceSplitter`` (and every other public name
of :mod:`hybrid_retrievers.text.splitting`) keeps working.
"""

from __future__ import annotations

from .text import splitting as _moved
from .text.splitting import *  # its __all__: SentenceSplitter, split_parents, ...

__all__ = list(_moved.__all__)
