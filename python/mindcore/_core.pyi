# Stubs for the native module mindcore._core (rust/python). Checked against the built module by
# tests/test_stubs.py (mypy.stubtest). Each kernel keeps its own section.

from typing import final

import numpy as np
from numpy.typing import NDArray

__version__: str

# --- scoring ---

# --- dedupe ---

# --- tokens ---

# --- secrets ---

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
@final
class BM25Index:
    def __new__(cls, k1: float, b: float) -> BM25Index: ...
    @property
    def k1(self) -> float: ...
    @property
    def b(self) -> float: ...
    @property
    def vocabulary_size(self) -> int: ...
    def __len__(self) -> int: ...
    def add(self, documents: list[str]) -> None: ...
    def scores(self, query: str) -> NDArray[np.float32]: ...
    def top_k(
        self, query: str, k: int, normalize: bool
    ) -> tuple[NDArray[np.int64], NDArray[np.float32]]: ...

def bm25_tokenize(text: str) -> list[str]: ...

# --- hashing ---
def hash_embed(
    texts: list[str], dim: int, ngram_min: int, ngram_max: int, seed: int
) -> NDArray[np.float32]: ...
