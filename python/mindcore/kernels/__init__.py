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
# isort: split
from mindcore.kernels.secrets import Finding as Finding
from mindcore.kernels.secrets import SecretRule as SecretRule
from mindcore.kernels.secrets import SecretScanner as SecretScanner
from mindcore.kernels.secrets import find_secrets as find_secrets
from mindcore.kernels.secrets import looks_like_secret as looks_like_secret
from mindcore.kernels.secrets import redact_secrets as redact_secrets

# --- packing ---
# --- bm25 ---
# --- hashing ---

__all__: list[str] = []
