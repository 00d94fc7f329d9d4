# Stubs for the native module mindcore._core (rust/python). Checked against the built module by
# tests/test_stubs.py (mypy.stubtest). Each kernel keeps its own section.

from collections.abc import Sequence
from typing import Any, Literal, final

import numpy as np
from numpy.typing import NDArray

__version__: str

# --- scoring ---
def _hybrid_topk(
    query: NDArray[np.float32],
    matrix: NDArray[np.float32],
    *,
    k: int,
    metric: str = "cosine",
    w_sim: float = 1.0,
    w_rec: float = 0.0,
    w_extra: float = 0.0,
    timestamps: NDArray[np.int64] | None = None,
    now_ms: int = 0,
    half_life_ms: float | None = None,
    tau_ms: float | None = None,
    extra: NDArray[np.float32] | None = None,
    mask: NDArray[np.bool_] | None = None,
    min_score: float | None = None,
    inv_norms: NDArray[np.float32] | None = None,
    normalized: bool = False,
    shadow: tuple[NDArray[np.int8], NDArray[np.float32]] | None = None,
) -> tuple[NDArray[np.int64], NDArray[np.float32], NDArray[np.float32]]: ...
def _simd_path() -> Literal["avx512", "avx2", "neon", "portable"]: ...
def _row_shadow(matrix: NDArray[np.float32]) -> tuple[NDArray[np.int8], NDArray[np.float32]]: ...

# --- recall ---
def _grouped_recall(
    queries: NDArray[np.float32],
    query_group: NDArray[np.int64],
    matrix: NDArray[np.float32],
    group_offsets: NDArray[np.int64],
    timestamps: NDArray[np.int64],
    importance: NDArray[np.float32],
    *,
    k: int,
    w_sim: float,
    w_rec: float,
    w_importance: float,
    w_lexical: float,
    half_life_ms: float,
    now_ms: int,
    lexical_floor: float = 2.0,
    k1: float = 0.9,
    b: float = 0.4,
    query_texts: tuple[NDArray[np.int64], NDArray[np.uint8]] | None = None,
    terms: tuple[NDArray[np.int64], NDArray[np.uint8]] | None = None,
    has_vector: NDArray[np.bool_] | None = None,
    eligible: NDArray[np.bool_] | None = None,
) -> tuple[NDArray[np.int64], NDArray[np.float32], NDArray[np.float32]]: ...

# --- dedupe ---
def _near_duplicates(
    new: NDArray[np.float32], existing: NDArray[np.float32], *, threshold: float, metric: str = "cosine"
) -> tuple[NDArray[np.int64], NDArray[np.float32]]: ...
def _dedupe_within(
    vectors: NDArray[np.float32], *, threshold: float, metric: str = "cosine"
) -> NDArray[np.bool_]: ...
def _row_norms(existing: NDArray[np.float32], *, head: int) -> tuple[NDArray[np.float32], NDArray[np.float32]]: ...
def _near_duplicates_pruned(
    new: NDArray[np.float32],
    existing: NDArray[np.float32],
    inv_norms: NDArray[np.float32],
    tail_norms: NDArray[np.float32],
    *,
    head: int,
    threshold: float,
) -> tuple[NDArray[np.int64], NDArray[np.float32]]: ...

# --- tokens ---
def count_tokens(text: str, encoding: str) -> int: ...
def count_tokens_batch(texts: object, encoding: str) -> list[int]: ...
def encode_tokens(text: str, encoding: str) -> list[int]: ...
def decode_tokens(ids: object, encoding: str) -> str: ...
def token_ranks(encoding: str) -> list[bytes]: ...
def split_tokens(text: str, encoding: str) -> list[str]: ...
def estimate_tokens(text: str, rule: str) -> int: ...
def estimate_tokens_batch(texts: object, rule: str) -> list[int]: ...
def estimate_message_tokens(texts: object) -> int: ...

# --- secrets ---
@final
class SecretScanner:
    def __new__(
        cls,
        rules: list[tuple[str, str]],
        builtin: bool,
        enable: list[str] = ...,
        disable: list[str] = ...,
    ) -> SecretScanner: ...
    @property
    def rule_ids(self) -> list[str]: ...
    def scan(self, text: str) -> list[tuple[str, int, int]]: ...
    def scan_batch(self, texts: list[str]) -> list[list[tuple[str, int, int]]]: ...
    def contains(self, text: str) -> bool: ...
    def contains_batch(self, texts: list[str]) -> list[bool]: ...
    def contains_batch_decoded(self, texts: list[str], max_chars: int, max_runs: int) -> list[bool]: ...
    def first_flagged_json(self, texts: list[str], max_chars: int, max_runs: int) -> int | None: ...
    def redact(self, text: str, placeholder: str) -> str: ...
    def redact_batch(self, texts: list[str], placeholder: str) -> list[str]: ...

def secret_builtin_rules(
    include_off: bool = False,
) -> list[tuple[str, str, str, str, int, int, str, bool]]: ...

# --- packing ---
def pack_budget(
    costs: object,
    budget: int,
    sections: object | None,
    scores: object | None,
    section_budgets: object | None,
    section_max_items: object | None,
    mode: str,
) -> list[int]: ...

# --- bm25 ---
ENGLISH_STOP_WORDS: frozenset[str]

@final
class BM25Index:
    def __new__(
        cls, k1: float, b: float, stem: bool = False, stop_words: str | Sequence[str] | None = None
    ) -> BM25Index: ...
    @property
    def k1(self) -> float: ...
    @property
    def b(self) -> float: ...
    @property
    def stem(self) -> bool: ...
    @property
    def stop_words(self) -> list[str]: ...
    @property
    def vocabulary_size(self) -> int: ...
    def __len__(self) -> int: ...
    def add(self, documents: list[str], analyzed: bool = False) -> None: ...
    def remove(self, ids: NDArray[np.int64]) -> None: ...
    def scores(self, query: str) -> NDArray[np.float32]: ...
    def top_k(
        self, query: str, k: int, normalize: bool
    ) -> tuple[NDArray[np.int64], NDArray[np.float32]]: ...

def bm25_tokenize(
    text: str, stem: bool = False, stop_words: str | Sequence[str] | None = None
) -> list[str]: ...

# --- json values ---
def json_dumps(value: Any) -> str: ...
def json_copy(value: Any) -> Any: ...

# --- hashing ---
def hash_embed(
    texts: list[str], dim: int, ngram_min: int, ngram_max: int, seed: int
) -> NDArray[np.float32]: ...
