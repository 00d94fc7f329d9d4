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
# --- bm25 ---
# --- hashing ---

__all__: list[str] = []
