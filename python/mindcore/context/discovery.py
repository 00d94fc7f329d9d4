"""Tool discovery: the tools of a dataset at one version, indexed and ranked by the Rust kernels.

Scores, as the agentified server computes them:

- ``bm25``: Okapi BM25 (k1 0.9, b 0.4; tokens lower-cased and split on non-alphanumerics) over each
  candidate's :meth:`~mindcore.context.Tool.document`, the corpus being the candidates; scores are
  min-max normalised over the candidates (all equal: all 0).
- ``semantic``: ``Σ wᵢ·cos(query, fieldᵢ) / Σ wᵢ`` over the embedded fields a tool has (name,
  description, input schema, output schema). Field vectors are unit length, so this is the dot
  product of the query with one combined vector per tool: one pass of ``hybrid_topk``.
- ``hybrid``: ``0.7·semantic + 0.3·bm25``, the same pass with the BM25 scores as its extra term;
  with ``fusion="zscore"``, ``0.7·z(semantic) + 0.3·z(bm25)``, each standardised over the candidates.

Ties keep registration order. Graph expansion then appends, with score 0, up to
``ceil(0.6·limit)`` candidates whose ``metadata.provides`` covers most of what the ranked tools'
``metadata.requires`` name.
"""

from __future__ import annotations

import json
import math
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from mindcore.context.types import Fusion, SearchStrategy, Tool, ToolFields
from mindcore.kernels import BM25Index, hybrid_topk

if TYPE_CHECKING:
    from mindcore.store.cache import CacheEntry

__all__ = ["BM25_B", "BM25_K1", "HYBRID_BM25", "HYBRID_SEMANTIC", "Catalog"]

BM25_K1 = 0.9
BM25_B = 0.4
HYBRID_SEMANTIC = 0.7
HYBRID_BM25 = 0.3
# Expansion adds at most this share of `limit` providers.
EXPANSION_SHARE = 0.6
# Indexes over candidate sets that leave tools out (exclusions), kept per catalog.
_SUBSET_INDEXES = 16

#: Embeds texts to unit rows: ``texts -> float32 (n, dim)``.
VectorSource = Callable[[list[str]], np.ndarray]


def _standardised(q: np.ndarray, matrix: np.ndarray, candidates: np.ndarray, bm25: np.ndarray,
                  n: int) -> dict[str, Any]:
    """``hybrid_topk`` arguments scoring ``0.7·z(semantic) + 0.3·z(bm25)``, each score standardised
    over the candidates (a side that does not vary adds 0). Standardising the semantic side is
    affine, so the kernel still computes it: its weight is ``0.7/std`` and ``-0.7·mean/std`` joins the
    extra term."""
    semantic = matrix[candidates] @ q
    mean, spread = float(semantic.mean()), float(semantic.std())
    w_sim = HYBRID_SEMANTIC / spread if spread > 0 else 0.0
    lexical_spread = float(bm25.std())
    lexical = (bm25 - bm25.mean()) / lexical_spread if lexical_spread > 0 else np.zeros_like(bm25)
    extra = np.zeros(n, dtype=np.float32)
    extra[candidates] = HYBRID_BM25 * lexical - w_sim * mean
    return {"w_sim": w_sim, "w_extra": 1.0, "extra": extra}


def _unit_rows(m: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(m.astype(np.float64), axis=1)
    norms[norms == 0.0] = 1.0
    return np.ascontiguousarray(m / norms[:, None], dtype=np.float32)


class FieldVectors:
    """Unit vectors of every tool's embedded fields (zeros where a tool has no such field)."""

    def __init__(self, name: np.ndarray, description: np.ndarray, inputs: np.ndarray, has_input: np.ndarray,
                 outputs: np.ndarray, has_output: np.ndarray) -> None:
        self.name, self.description = name, description
        self.inputs, self.has_input = inputs, has_input
        self.outputs, self.has_output = outputs, has_output
        self._combined: OrderedDict[tuple[float, ...], np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def combined(self, weights: tuple[float, float, float, float]) -> np.ndarray:
        """One ``(n, dim)`` matrix whose dot product with a unit query is the weighted score."""
        with self._lock:
            got = self._combined.get(weights)
        if got is not None:
            return got
        wn, wd, wi, wo = weights
        denom = wn + wd + wi * self.has_input + wo * self.has_output
        total = wn * self.name + wd * self.description + wi * self.inputs + wo * self.outputs
        safe = np.where(denom > 0, denom, 1.0)
        matrix = np.ascontiguousarray(np.where((denom > 0)[:, None], total / safe[:, None], 0.0), dtype=np.float32)
        with self._lock:
            self._combined[weights] = matrix
            while len(self._combined) > 4:
                self._combined.popitem(last=False)
        return matrix


class Catalog:
    """The tools of one dataset at one version of the tools table.

    Built from the store's cached namespace; the BM25 index is built on first use and the field
    vectors on the first semantic query. :meth:`tool` materialises a row as a :class:`Tool`.
    """

    def __init__(self, entry: CacheEntry) -> None:
        self.serial = entry.serial
        self._entry = entry
        cols = entry.scalars
        self.n = entry.n
        self.names: list[str] = [str(v) for v in cols.column("name").to_pylist()] if self.n else []
        self.position: dict[str, int] = {name: i for i, name in enumerate(self.names)}
        always = cols.column("always_include").to_pylist() if self.n else []
        self.always = np.asarray([bool(a) for a in always], dtype=bool)
        #: Rows that discovery ranks (every tool but the always-included ones), in row order.
        self.rankable = np.flatnonzero(~self.always).astype(np.int64)
        self._tools: list[Tool | None] = [None] * self.n
        self._index: BM25Index | None = None
        self._subsets: OrderedDict[bytes, BM25Index] = OrderedDict()
        self._metadata: list[Any] | None = None
        self._providers: list[tuple[int, frozenset[str]]] | None = None
        self._vectors: tuple[str, FieldVectors] | None = None
        # Guards the lazily built parts: concurrent requests (the server's threads) build each once.
        self._lock = threading.RLock()
        # Apart from the BM25 lock: ranking by BM25 never waits for tools being embedded.
        self._vectors_lock = threading.Lock()

    # -- rows -----------------------------------------------------------------------------------

    def tool(self, row: int) -> Tool:
        tool = self._tools[row]
        if tool is None:
            r = self._entry.rows(np.array([row], dtype=np.int64))[0]
            fields = r.get("fields")
            tool = Tool._trusted(
                name=r["name"], description=r["description"] or "", parameters=json.loads(r["parameters"] or "{}"),
                handler=None, always_include=bool(r["always_include"]), metadata=r.get("metadata"),
                fields=None if fields is None else ToolFields.of(json.loads(fields)),
                type=r["type"] or "backend", server_uri=r.get("server_uri"),
            )
            self._tools[row] = tool
        return tool

    def tools(self) -> list[Tool]:
        return [self.tool(i) for i in range(self.n)]

    def rows_of(self, names: Sequence[str]) -> list[int]:
        """The rows of the registered tools among ``names``, in order, without repeats."""
        return list(dict.fromkeys(self.position[n] for n in names if n in self.position))

    # -- ranking --------------------------------------------------------------------------------

    def candidates(self, excluded: Sequence[int]) -> np.ndarray:
        """The rankable rows not in ``excluded`` (row order)."""
        if not excluded:
            return self.rankable
        keep = np.ones(self.n, dtype=bool)
        keep[np.asarray(list(excluded), dtype=np.int64)] = False
        keep &= ~self.always
        return np.flatnonzero(keep).astype(np.int64)

    def bm25(self, query: str, candidates: np.ndarray) -> np.ndarray:
        """Min-max normalised BM25 scores of ``candidates`` (float32, in their order), the corpus
        being the candidates themselves."""
        raw = self._index_for(candidates).scores(query)
        if raw.shape[0] == 0:
            return raw
        lo, hi = float(raw.min()), float(raw.max())
        if hi - lo <= 0.0:
            return np.zeros_like(raw)
        return ((raw - np.float32(lo)) / np.float32(hi - lo)).astype(np.float32, copy=False)

    def _index_for(self, candidates: np.ndarray) -> BM25Index:
        with self._lock:
            return self._index_locked(candidates)

    def _index_locked(self, candidates: np.ndarray) -> BM25Index:
        if candidates.shape[0] == self.rankable.shape[0]:
            if self._index is None:
                self._index = self._build(self.rankable)
            return self._index
        key = candidates.tobytes()
        index = self._subsets.get(key)
        if index is None:
            index = self._subsets[key] = self._build(candidates)
            while len(self._subsets) > _SUBSET_INDEXES:
                self._subsets.popitem(last=False)
        else:
            self._subsets.move_to_end(key)
        return index

    def _build(self, rows: np.ndarray) -> BM25Index:
        docs = self._entry.scalars.column("document")
        texts = docs.take(rows).to_pylist() if rows.shape[0] else []
        return BM25Index([t or "" for t in texts], k1=BM25_K1, b=BM25_B)

    def rank(
        self,
        query: str,
        candidates: np.ndarray,
        *,
        strategy: SearchStrategy,
        limit: int,
        query_vector: Callable[[], np.ndarray] | None = None,
        vectors: Callable[[], FieldVectors] | None = None,
        weights: tuple[float, float, float, float] = (0.1, 0.5, 0.3, 0.1),
        fusion: Fusion = "weighted",
    ) -> list[tuple[int, float]]:
        """The best ``limit`` candidates as ``(row, score)``, best first."""
        k = min(limit, int(candidates.shape[0]))
        if k <= 0:
            return []
        if strategy == "bm25":
            scores = self.bm25(query, candidates)
            order = np.argsort(-scores, kind="stable")[:k]
            return [(int(candidates[i]), float(scores[i])) for i in order]
        assert query_vector is not None and vectors is not None
        q = query_vector()
        matrix = vectors().combined(weights)
        mask = np.zeros(self.n, dtype=bool)
        mask[candidates] = True
        kwargs: dict[str, Any] = {}
        if strategy == "hybrid" and fusion == "zscore":
            kwargs = _standardised(q, matrix, candidates, self.bm25(query, candidates), self.n)
        elif strategy == "hybrid":
            extra = np.zeros(self.n, dtype=np.float32)
            extra[candidates] = self.bm25(query, candidates)
            kwargs = {"w_sim": HYBRID_SEMANTIC, "w_extra": HYBRID_BM25, "extra": extra}
        top = hybrid_topk(q, matrix, k=k, metric="dot", mask=None if mask.all() else mask, **kwargs)
        return [(int(i), float(s)) for i, s in zip(top.indices, top.scores, strict=True) if i >= 0]

    # -- semantic -------------------------------------------------------------------------------

    def has_field_vectors(self, model_id: str) -> bool:
        """Whether :meth:`field_vectors` for ``model_id`` would answer at once (nothing to fetch or embed)."""
        held = self._vectors
        return self.n == 0 or (held is not None and held[0] == model_id)

    def field_vectors(self, model_id: str, source: Callable[[list[str]], np.ndarray]) -> FieldVectors:
        """The unit field vectors of every tool for embedding model ``model_id``, fetched (or
        embedded) once per catalog and model; ``source(texts)`` returns their vectors."""
        with self._vectors_lock:
            return self._field_vectors_locked(model_id, source)

    def _field_vectors_locked(self, model_id: str, source: Callable[[list[str]], np.ndarray]) -> FieldVectors:
        if self._vectors is not None and self._vectors[0] == model_id:
            return self._vectors[1]
        texts = [self.tool(i).embedding_texts() for i in range(self.n)]
        flat: list[str] = []
        for name, description, inp, out in texts:
            flat += [name, description] + [t for t in (inp, out) if t is not None]
        stacked = _unit_rows(source(flat)) if flat else np.zeros((0, 0), dtype=np.float32)
        dim = stacked.shape[1] if stacked.ndim == 2 else 0
        name_m = np.zeros((self.n, dim), dtype=np.float32)
        desc_m, in_m, out_m = np.zeros_like(name_m), np.zeros_like(name_m), np.zeros_like(name_m)
        has_in = np.zeros(self.n, dtype=np.float32)
        has_out = np.zeros(self.n, dtype=np.float32)
        at = 0
        for row, (_, _, inp, out) in enumerate(texts):
            name_m[row], desc_m[row] = stacked[at], stacked[at + 1]
            at += 2
            if inp is not None:
                in_m[row], has_in[row] = stacked[at], 1.0
                at += 1
            if out is not None:
                out_m[row], has_out[row] = stacked[at], 1.0
                at += 1
        vectors = FieldVectors(name_m, desc_m, in_m, has_in, out_m, has_out)
        self._vectors = (model_id, vectors)
        return vectors

    # -- graph expansion ------------------------------------------------------------------------

    def _meta(self, row: int) -> Any:
        metadata = self._metadata
        if metadata is None:
            raw = self._entry.scalars.column("metadata").to_pylist() if self.n else []
            metadata = self._metadata = [None if m is None else json.loads(m) for m in raw]
        return metadata[row]

    def expand(self, ranked: Sequence[int], candidates: np.ndarray, limit: int) -> list[int]:
        """Up to ``ceil(0.6·limit)`` candidates not in ``ranked`` that provide what the ranked
        tools require, most covered requirements first (ties in row order)."""
        required: set[str] = set()
        for row in ranked:
            required |= _strings(self._meta(row), "requires")
        if not required:
            return []
        providers = self._providers
        if providers is None:
            providers = self._providers = [
                (row, frozenset(p)) for row in range(self.n) if (p := _strings(self._meta(row), "provides"))]
        taken = set(ranked)
        allowed = set(candidates.tolist())
        found = [(len(p & required), row) for row, p in providers
                 if row in allowed and row not in taken and p & required]
        found.sort(key=lambda c: -c[0])  # stable: row order among equals
        return [row for _, row in found[: math.ceil(limit * EXPANSION_SHARE)]]


def _strings(metadata: Any, key: str) -> set[str]:
    values = metadata.get(key) if isinstance(metadata, dict) else None
    return {v for v in values if isinstance(v, str)} if isinstance(values, list) else set()
