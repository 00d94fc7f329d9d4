"""The Rust kernels behind every capability, with validated, documented Python signatures.

Nothing above this package reimplements scoring, token counting, secret scanning, packing,
BM25 or hashing embeddings: call these.
"""

from __future__ import annotations

# Each kernel module re-exports its public names here, one block per module.
# --- scoring ---
# --- dedupe ---
# --- tokens ---
# --- secrets ---
# --- packing ---
# isort: split
from mindcore.kernels.packing import PackMode as PackMode
from mindcore.kernels.packing import pack_budget as pack_budget

# --- bm25 ---
# isort: split
from mindcore.kernels.bm25 import BM25Index as BM25Index
from mindcore.kernels.bm25 import bm25_tokenize as bm25_tokenize

# --- hashing ---
# isort: split
from mindcore.kernels.hashing import hash_embed as hash_embed

__all__: list[str] = []
