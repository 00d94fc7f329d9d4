"""The Rust kernels behind every capability, with validated, documented Python signatures.

Nothing above this package reimplements scoring, token counting, secret scanning, packing,
BM25 or hashing embeddings: call these.
"""

from __future__ import annotations

# Each kernel module re-exports its public names here, one block per module.
# --- scoring ---
# --- dedupe ---
# --- tokens ---
# isort: split
from mindcore.kernels.tokens import ENCODINGS as ENCODINGS
from mindcore.kernels.tokens import Encoding as Encoding
from mindcore.kernels.tokens import EstimateRule as EstimateRule
from mindcore.kernels.tokens import count_tokens as count_tokens
from mindcore.kernels.tokens import decode as decode
from mindcore.kernels.tokens import encode as encode
from mindcore.kernels.tokens import estimate_message_tokens as estimate_message_tokens
from mindcore.kernels.tokens import estimate_tokens as estimate_tokens

# --- secrets ---
# --- packing ---
# --- bm25 ---
# --- hashing ---

__all__: list[str] = []
