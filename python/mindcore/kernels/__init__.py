"""The Rust kernels behind every capability, with validated, documented Python signatures.

Nothing above this package reimplements scoring, token counting, secret scanning, packing,
BM25 or hashing embeddings: call these.
"""

from __future__ import annotations

# Each kernel module re-exports its public names here, one block per module.
# --- scoring ---
from mindcore.kernels.scoring import Metric as Metric
from mindcore.kernels.scoring import TopK as TopK
from mindcore.kernels.scoring import hybrid_topk as hybrid_topk

# --- dedupe ---
from mindcore.kernels.dedupe import dedupe_within as dedupe_within
from mindcore.kernels.dedupe import near_duplicates as near_duplicates

# --- tokens ---
# --- secrets ---
# --- packing ---
# --- bm25 ---
# --- hashing ---

__all__: list[str] = []
