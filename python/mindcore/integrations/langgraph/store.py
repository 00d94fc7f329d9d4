"""A LangGraph long-term memory store (``BaseStore``) on a mindcore store.

Each LangGraph namespace (``("users", "42", "memories")``) is one namespace of the table
``langgraph_store`` (its labels joined by ``.``, which LangGraph forbids inside a label), so a
namespace's items are read with one scan, held in memory by the store's cache and listed without
reading any item. An item keeps its value as JSON, its ``created_at`` across updates, and, when the
store has an ``index``, the vectors of its indexed fields.

Search ranks through mindcore's hybrid recall: a query is embedded (with the ``index``'s model) and
each item scored by ``0.7 * cosine + 0.3 * BM25`` (its best field's similarity; BM25 over its
indexed texts, scaled so the best match gets 1) in one ``hybrid_topk`` pass; without an index the
ranking is BM25 alone. Without a query, the most recently updated items come first.
"""

from __future__ import annotations

import asyncio
import json
import math
import time
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pyarrow as pa
from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    ensure_embeddings,
    get_text_at_path,
    tokenize_path,
    validate_op_namespace,
)

from mindcore.errors import InvalidInputError, InvalidTypeError
from mindcore.kernels import BM25Index, hybrid_topk
from mindcore.policy import SecretPolicy
from mindcore.store import Store, Table
from mindcore.store import open as open_store
from mindcore.validation import check_id

__all__ = ["MindcoreStore"]

DEFAULT_TABLE = "langgraph_store"
#: Weights of the hybrid score (similarity, BM25).
W_SIM, W_LEXICAL = 0.7, 0.3

_COLUMNS: dict[str, pa.DataType] = {
    "value": pa.string(),  # the item's value, JSON
    "changed_at": pa.int64(),  # unix ms the value was last put (a TTL refresh is not a change)
    "expires_at": pa.int64(),  # unix ms; null: never
    "ttl_minutes": pa.float64(),  # the item's TTL, for refreshes on read
    "texts": pa.list_(pa.string()),  # its indexed texts
    "vectors": pa.binary(),  # float32 (len(texts), dims) of those texts
}


def _ns_name(namespace: tuple[str, ...]) -> str:
    return ".".join(namespace)


def _ns_tuple(name: str) -> tuple[str, ...]:
    return tuple(name.split("."))


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _when(ms: int | None) -> datetime:
    return datetime.fromtimestamp((ms or 0) / 1000, tz=UTC)


class MindcoreStore(BaseStore):
    """LangGraph's ``BaseStore`` (``put``/``get``/``delete``/``search``/``list_namespaces``,
    ``batch``/``abatch``) on a mindcore :class:`~mindcore.store.Store`.

    ``store``: an open store (never closed by this one) or where to open one (a folder,
    ``s3://...`` with ``storage_options``, ``memory://name``). ``index``: LangGraph's
    ``{"dims", "embed", "fields"}`` (``embed`` a LangChain ``Embeddings``, a function of a list of
    texts, or a mindcore embedder); without it search is lexical. ``ttl``: LangGraph's
    ``{"default_ttl", "refresh_on_read"}`` (minutes); expired items are never returned and
    :meth:`sweep_ttl` deletes them. ``secrets``: the policy every key, namespace label and string
    of a value goes through (refused: :class:`~mindcore.errors.SecretRefusedError`, nothing of
    that batch written).

    >>> store = MindcoreStore.open("memory://langgraph-store-doc")
    >>> store.put(("users", "ada"), "prefs", {"theme": "dark", "text": "likes short answers"})
    >>> store.get(("users", "ada"), "prefs").value["theme"]
    'dark'
    >>> [i.key for i in store.search(("users",), query="short answers")], store.list_namespaces(prefix=("users",))
    (['prefs'], [('users', 'ada')])
    """

    supports_ttl = True

    def __init__(
        self,
        store: Store | str,
        *,
        storage_options: dict[str, str] | None = None,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        secrets: SecretPolicy | None = None,
        table: str = DEFAULT_TABLE,
    ) -> None:
        if isinstance(store, Store):
            self._store, self._owns_store = store, False
        elif isinstance(store, str):
            self._store, self._owns_store = open_store(store, storage_options=storage_options), True
        else:
            raise InvalidTypeError(f"store: expected a mindcore Store or its address, got {type(store).__name__}")
        if secrets is not None and not isinstance(secrets, SecretPolicy):
            raise InvalidTypeError(f"secrets: expected a SecretPolicy, got {type(secrets).__name__}")
        self.secrets = secrets or SecretPolicy()
        self.ttl_config = ttl
        self.index_config = index
        self._embed_documents: Callable[[list[str]], np.ndarray] | None = None
        self._embed_query: Callable[[str], np.ndarray] | None = None
        self._fields: list[tuple[str, Any]] = []
        if index is not None:
            self._setup_index(index)
        self._table_name = check_id(table, "table")
        self._table: Table | None = None

    @classmethod
    def open(cls, uri: str, **kwargs: Any) -> MindcoreStore:
        """A store on the mindcore store at ``uri`` (opened, and closed with this one)."""
        return cls(uri, **kwargs)

    def _setup_index(self, index: IndexConfig) -> None:
        dims = index.get("dims")
        if isinstance(dims, bool) or not isinstance(dims, int) or dims < 1:
            raise InvalidInputError(f"index: 'dims' must be a positive int, got {dims!r}")
        embed = index.get("embed")
        if hasattr(embed, "embed") and hasattr(embed, "dim"):  # a mindcore embedder
            model: Any = embed
            self._embed_documents = lambda texts: np.asarray(model.embed(texts), dtype=np.float32)
            self._embed_query = lambda text: np.asarray(model.embed([text]), dtype=np.float32)[0]
        else:
            embeddings = ensure_embeddings(embed)
            self._embed_documents = lambda texts: np.asarray(embeddings.embed_documents(texts), dtype=np.float32)
            self._embed_query = lambda text: np.asarray(embeddings.embed_query(text), dtype=np.float32)
        self._fields = [(f, tokenize_path(f) if f != "$" else f) for f in (index.get("fields") or ["$"])]

    @property
    def store(self) -> Store:
        return self._store

    @property
    def table(self) -> Table:
        """The store table holding every item (one namespace per LangGraph namespace)."""
        if self._table is None:
            self._table = self._store.table(self._table_name, _COLUMNS)
        return self._table

    def close(self) -> None:
        """Close the mindcore store if this one opened it (idempotent)."""
        if self._owns_store:
            self._store.close()

    def __enter__(self) -> MindcoreStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the batch -----------------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops``: reads first, against the store as it stands, then the puts (the last put
        of a key wins), as LangGraph's stores do. Results are in the order of ``ops``."""
        given = list(ops)
        for op in given:
            if not isinstance(op, GetOp | SearchOp | ListNamespacesOp | PutOp):
                raise InvalidTypeError(f"ops: unknown operation {type(op).__name__}")
            validate_op_namespace(op)
        puts: dict[tuple[tuple[str, ...], str], PutOp] = {}
        for op in given:
            if isinstance(op, PutOp):
                puts[(tuple(op.namespace), op.key)] = op
        rows = self._prepare_puts(list(puts.values()))  # everything checked before anything is read
        now = _now_ms()
        results: list[Result] = []
        refresh: dict[str, dict[str, float]] = {}
        for op in given:
            if isinstance(op, GetOp):
                results.append(self._get(op, now, refresh))
            elif isinstance(op, SearchOp):
                results.append(self._search(op, now, refresh))
            elif isinstance(op, ListNamespacesOp):
                results.append(self._list_namespaces(op, now))
            else:
                results.append(None)
        self._refresh(refresh, now)
        self._write(rows)
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        given = list(ops)
        return await asyncio.to_thread(self.batch, given)

    def sweep_ttl(self) -> int:
        """Delete every expired item; returns how many went."""
        now = _now_ms()
        gone = 0
        for name in self.table.namespaces():
            rows = self.table.cached(name).scalars
            expires = rows.column("expires_at").to_pylist()
            ids = [str(i) for i, at in zip(rows.column("id").to_pylist(), expires, strict=True)
                   if at is not None and at <= now]
            if ids:
                gone += self.table.delete(name, ids=ids).deleted
        return gone

    # -- reads ---------------------------------------------------------------------------------

    def _live(self, name: str, now: int) -> list[dict[str, Any]]:
        """The namespace's items that have not expired, as rows."""
        rows = self.table.cached(name).scalars
        wanted = ["id", "value", "created_at", "changed_at", "expires_at", "ttl_minutes", "texts", "vectors"]
        return [r for r in rows.select(wanted).to_pylist() if r["expires_at"] is None or r["expires_at"] > now]

    def _item(self, name: str, row: Mapping[str, Any]) -> Item:
        return Item(value=json.loads(row["value"]), key=row["id"], namespace=_ns_tuple(name),
                    created_at=_when(row["created_at"]), updated_at=_when(row["changed_at"]))

    def _search_item(self, name: str, row: Mapping[str, Any], score: float | None) -> SearchItem:
        return SearchItem(_ns_tuple(name), row["id"], json.loads(row["value"]), _when(row["created_at"]),
                          _when(row["changed_at"]), score)

    def _note_read(self, refresh: dict[str, dict[str, float]], name: str, row: Mapping[str, Any], wanted: bool) -> None:
        if wanted and row["ttl_minutes"] is not None:
            refresh.setdefault(name, {})[row["id"]] = row["ttl_minutes"]

    def _get(self, op: GetOp, now: int, refresh: dict[str, dict[str, float]]) -> Item | None:
        name = _ns_name(tuple(op.namespace))
        if not name:
            return None
        got = self.table.get(name, [op.key])
        if not got or (got[0]["expires_at"] is not None and got[0]["expires_at"] <= now):
            return None
        self._note_read(refresh, name, got[0], op.refresh_ttl)
        return self._item(name, got[0])

    def _namespaces(self) -> list[str]:
        return [name for name in self.table.namespaces() if name]

    def _search(self, op: SearchOp, now: int, refresh: dict[str, dict[str, float]]) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        names = [n for n in self._namespaces() if _ns_tuple(n)[: len(prefix)] == prefix]
        candidates = [(n, r) for n in names for r in self._live(n, now)
                      if not op.filter or _matches(json.loads(r["value"]), op.filter)]
        if op.limit < 0 or op.offset < 0:
            raise InvalidInputError("search: limit and offset must not be negative")
        ranked: list[tuple[str, dict[str, Any], float | None]]
        if op.query and candidates:
            ranked = list(self._rank(op.query, candidates))
        else:
            newest = sorted(candidates, key=lambda c: (-(c[1]["changed_at"] or 0), c[1]["id"]))
            ranked = [(n, r, None) for n, r in newest]
        page = ranked[op.offset: op.offset + op.limit]
        for name, row, _ in page:
            self._note_read(refresh, name, row, op.refresh_ttl)
        return [self._search_item(n, r, s) for n, r, s in page]

    def _rank(self, query: str, candidates: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, dict[str, Any], float]]:
        """Candidates best first by the hybrid score (see the module docstring)."""
        texts = [" ".join(r["texts"] or [json.dumps(json.loads(r["value"]), ensure_ascii=False)]) for _, r in candidates]
        index = BM25Index(stem=True, stop_words="english")
        index.add(texts)
        lexical = np.asarray(index.scores(query), dtype=np.float32)
        lexical = lexical / max(float(lexical.max(initial=0.0)), 1e-9)
        if self._embed_query is None:
            order = sorted(range(len(candidates)), key=lambda i: -float(lexical[i]))
            return [(*candidates[i], float(lexical[i])) for i in order]
        dims = int(self.index_config["dims"]) if self.index_config else 0
        owners: list[int] = []
        blocks: list[np.ndarray] = []
        for i, (_, row) in enumerate(candidates):
            if row["vectors"]:
                block = np.frombuffer(row["vectors"], dtype=np.float32).reshape(-1, dims)
                blocks.append(block)
                owners += [i] * block.shape[0]
        scored: dict[int, float] = {}
        if blocks:
            matrix = np.ascontiguousarray(np.concatenate(blocks))
            extra = np.ascontiguousarray(W_LEXICAL * lexical[owners], dtype=np.float32)
            query_vector = np.ascontiguousarray(self._embed_query(query), dtype=np.float32)
            top = hybrid_topk(query_vector, matrix, k=matrix.shape[0], w_sim=W_SIM, w_extra=1.0, extra=extra)
            for row_index, score in zip(top.indices.tolist(), top.scores.tolist(), strict=True):
                scored.setdefault(owners[row_index], float(score))  # an item's best field
        for i in range(len(candidates)):  # items without a vector rank by BM25 alone
            scored.setdefault(i, W_LEXICAL * float(lexical[i]))
        order = sorted(scored, key=lambda i: -scored[i])
        return [(*candidates[i], scored[i]) for i in order]

    def _list_namespaces(self, op: ListNamespacesOp, now: int) -> list[tuple[str, ...]]:
        found = [_ns_tuple(n) for n in self._namespaces() if self._live(n, now)]
        if op.match_conditions:
            found = [ns for ns in found if all(_does_match(c, ns) for c in op.match_conditions)]
        found = sorted({ns[: op.max_depth] for ns in found}) if op.max_depth is not None else sorted(found)
        return found[op.offset: op.offset + op.limit]

    # -- writes --------------------------------------------------------------------------------

    def _prepare_puts(self, puts: list[PutOp]) -> list[tuple[str, str, dict[str, Any] | None]]:
        """Each put checked and screened, as ``(namespace, key, row or None for a delete)``."""
        out: list[tuple[str, str, dict[str, Any] | None]] = []
        values: list[Any] = []
        for op in puts:
            if not op.namespace:
                raise InvalidInputError("put: the namespace cannot be empty")
            for label in op.namespace:
                self.secrets.screen_identifier(label, "namespace")
            if not isinstance(op.key, str) or not op.key:
                raise InvalidInputError(f"put: the key must be a non-empty str, got {op.key!r}")
            self.secrets.screen_identifier(op.key, "key")
            name = _ns_name(tuple(op.namespace))
            if op.value is None:
                out.append((name, op.key, None))
                continue
            if not isinstance(op.value, Mapping):
                raise InvalidTypeError(f"put: the value must be a dict, got {type(op.value).__name__}")
            try:
                text = json.dumps(dict(op.value), ensure_ascii=False, allow_nan=False)
            except (TypeError, ValueError) as e:
                raise InvalidInputError(f"put {op.key!r}: the value must be JSON ({e})") from None
            if op.ttl is not None and (not isinstance(op.ttl, int | float) or not math.isfinite(op.ttl) or op.ttl <= 0):
                raise InvalidInputError(f"put {op.key!r}: ttl must be a positive number of minutes, got {op.ttl!r}")
            values.append(op.value)
            out.append((name, op.key, {"id": op.key, "value": text, "ttl_minutes": op.ttl,
                                       "texts": self._texts(op)}))
        at = self.secrets.first_refused(values)
        if at is not None:
            self.secrets.screen_object(values[at], "value")
        to_embed = [text for _, _, row in out if row is not None for text in row["texts"]]
        if to_embed and self._embed_documents is not None:
            vectors = self._embed_documents(to_embed)
            start = 0
            for _, _, row in out:
                if row is not None and row["texts"]:
                    n = len(row["texts"])
                    row["vectors"] = np.ascontiguousarray(vectors[start:start + n], dtype=np.float32).tobytes()
                    start += n
        return out

    def _texts(self, op: PutOp) -> list[str]:
        if op.index is False or op.value is None:
            return []
        fields = self._fields if op.index is None else [(f, tokenize_path(f)) for f in op.index]
        if not fields and op.index is None:
            fields = [("$", "$")]
        texts: list[str] = []
        for _path, field in fields:
            texts += [t for t in get_text_at_path(op.value, field) if t]
        return texts

    def _write(self, rows: list[tuple[str, str, dict[str, Any] | None]]) -> None:
        now = _now_ms()
        by_ns: dict[str, list[tuple[str, dict[str, Any] | None]]] = {}
        for name, key, row in rows:
            by_ns.setdefault(name, []).append((key, row))
        for name, items in by_ns.items():
            existing = {r["id"]: r for r in self.table.get(name, [k for k, _ in items])}
            upserts: list[dict[str, Any]] = []
            deletes: list[str] = []
            for key, row in items:
                if row is None:
                    if key in existing:
                        deletes.append(key)
                    continue
                old = existing.get(key)
                live = old is not None and (old["expires_at"] is None or old["expires_at"] > now)
                ttl = row["ttl_minutes"]
                upserts.append({
                    "id": key, "value": row["value"], "texts": row["texts"], "vectors": row.get("vectors"),
                    "ttl_minutes": ttl, "expires_at": None if ttl is None else now + int(ttl * 60_000),
                    "created_at": old["created_at"] if live and old is not None else now, "changed_at": now,
                })
            with self.table.unit_of_work(name) as uow:
                if upserts:
                    uow.upsert(upserts)
                if deletes:
                    uow.delete(ids=deletes)

    def _refresh(self, refresh: dict[str, dict[str, float]], now: int) -> None:
        """Move the expiry of the TTL items a read returned (one write per namespace)."""
        for name, ttls in refresh.items():
            by_ttl: dict[float, list[str]] = {}
            for key, ttl in ttls.items():
                by_ttl.setdefault(ttl, []).append(key)
            with self.table.unit_of_work(name) as uow:
                for ttl, keys in by_ttl.items():
                    uow.update(keys, {"expires_at": now + int(ttl * 60_000)})


def _matches(value: Any, condition: Mapping[str, Any]) -> bool:
    """LangGraph's filter: each key's value equal (nested dicts and lists compared deeply), or
    ``{"$eq"|"$ne"|"$gt"|"$gte"|"$lt"|"$lte": x}``."""
    if not isinstance(value, Mapping):
        return False
    return all(_compare(value.get(k), v) for k, v in condition.items())


def _compare(value: Any, wanted: Any) -> bool:
    if isinstance(wanted, Mapping):
        if any(str(k).startswith("$") for k in wanted):
            return all(_operator(value, op, x) for op, x in wanted.items())
        return isinstance(value, Mapping) and all(_compare(value.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, list | tuple):
        return (isinstance(value, list | tuple) and len(value) == len(wanted)
                and all(_compare(a, b) for a, b in zip(value, wanted, strict=True)))
    return bool(value == wanted)


def _operator(value: Any, op: str, wanted: Any) -> bool:
    if op == "$eq":
        return bool(value == wanted)
    if op == "$ne":
        return bool(value != wanted)
    if op not in ("$gt", "$gte", "$lt", "$lte"):
        raise InvalidInputError(f"filter: unknown operator {op!r} (use $eq, $ne, $gt, $gte, $lt, $lte)")
    try:
        a, b = float(value), float(wanted)
    except (TypeError, ValueError):
        return False
    return {"$gt": a > b, "$gte": a >= b, "$lt": a < b, "$lte": a <= b}[op]


def _does_match(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    part = namespace[: len(path)] if condition.match_type == "prefix" else namespace[len(namespace) - len(path):]
    return all(p == "*" or p == n for p, n in zip(path, part, strict=True))
