"""The Rust kernels behind every capability, with validated, documented Python signatures.

Nothing above this package reimplements scoring, token counting, secret scanning, packing,
BM25 (and its text analysis) or hashing embeddings: call these. The kernels sit at the bottom of
the package: they import only ``mindcore._core`` and ``mindcore.errors``. Bad input raises
:class:`~mindcore.errors.KernelError` (a ``ValueError``), for a wrong type its subclass
:class:`~mindcore.errors.KernelTypeError` (also a ``TypeError``), both under ``MindcoreError``.
"""

from __future__ import annotations

# --- dedupe ---
from mindcore.kernels.dedupe import RowNorms as RowNorms
from mindcore.kernels.dedupe import dedupe_within as dedupe_within
from mindcore.kernels.dedupe import near_duplicates as near_duplicates
from mindcore.kernels.dedupe import near_duplicates_pruned as near_duplicates_pruned
from mindcore.kernels.dedupe import row_norms as row_norms

# Each kernel module re-exports its public names here, one block per module.
# --- scoring ---
from mindcore.kernels.scoring import SHADOW_MIN_ROWS as SHADOW_MIN_ROWS
from mindcore.kernels.scoring import Metric as Metric
from mindcore.kernels.scoring import RowShadow as RowShadow
from mindcore.kernels.scoring import SimdPath as SimdPath
from mindcore.kernels.scoring import TopK as TopK
from mindcore.kernels.scoring import hybrid_topk as hybrid_topk
from mindcore.kernels.scoring import row_shadow as row_shadow
from mindcore.kernels.scoring import simd_path as simd_path

# --- recall ---
# isort: split
from mindcore.kernels.recall import grouped_recall as grouped_recall

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
# isort: split
from mindcore.kernels.secrets import DEFAULT_PLACEHOLDER as DEFAULT_PLACEHOLDER
from mindcore.kernels.secrets import Finding as Finding
from mindcore.kernels.secrets import SecretRule as SecretRule
from mindcore.kernels.secrets import SecretScanner as SecretScanner
from mindcore.kernels.secrets import builtin_rules as builtin_rules
from mindcore.kernels.secrets import find_secrets as find_secrets
from mindcore.kernels.secrets import looks_like_secret as looks_like_secret
from mindcore.kernels.secrets import redact_secrets as redact_secrets

# --- packing ---
# isort: split
from mindcore.kernels.packing import PackMode as PackMode
from mindcore.kernels.packing import pack_budget as pack_budget

# --- bm25 ---
# isort: split
from mindcore.kernels.bm25 import ENGLISH_STOP_WORDS as ENGLISH_STOP_WORDS
from mindcore.kernels.bm25 import BM25Index as BM25Index
from mindcore.kernels.bm25 import bm25_tokenize as bm25_tokenize

# --- hashing ---
# isort: split
from mindcore.kernels.hashing import hash_embed as hash_embed

# --- JSON values ---
# isort: split
from mindcore.kernels.json_values import json_copy as json_copy
from mindcore.kernels.json_values import json_dumps as json_dumps

__all__ = [
    "DEFAULT_PLACEHOLDER",
    "ENCODINGS",
    "ENGLISH_STOP_WORDS",
    "SHADOW_MIN_ROWS",
    "BM25Index",
    "Encoding",
    "EstimateRule",
    "Finding",
    "Metric",
    "PackMode",
    "RowNorms",
    "RowShadow",
    "SecretRule",
    "SecretScanner",
    "SimdPath",
    "TopK",
    "bm25_tokenize",
    "builtin_rules",
    "count_tokens",
    "decode",
    "dedupe_within",
    "encode",
    "estimate_message_tokens",
    "estimate_tokens",
    "find_secrets",
    "grouped_recall",
    "hash_embed",
    "hybrid_topk",
    "json_copy",
    "json_dumps",
    "looks_like_secret",
    "near_duplicates",
    "near_duplicates_pruned",
    "pack_budget",
    "redact_secrets",
    "row_norms",
    "row_shadow",
    "simd_path",
]
