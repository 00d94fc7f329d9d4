"""The in-memory vector cache: one namespace of one table as numpy views of Arrow buffers.

Exact search inside LanceDB is 10-70x slower than the same scan over memory, so a namespace is
loaded once (one filtered scan) and searched with the Rust hybrid top-k until the table's
version moves. Entries are labelled with the table version they were read at; a write by this
process to another namespace relabels them instead of dropping them. Memory is bounded by an
LRU over all tables of a store.

A commit of this process patches the cached namespace instead of dropping it, and the new entry
remembers how it follows from the old one (:meth:`CacheEntry.changes_since`), so an index built
over an earlier entry (long-term memory's BM25) can be patched the same way instead of rebuilt.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from mindcore.errors import KernelError
from mindcore.kernels import SHADOW_MIN_ROWS, RowNorms, RowShadow, row_norms, row_shadow
from mindcore.store.schema import VECTOR, take_rows

__all__ = ["CacheEntry", "VectorCache", "split_by_namespace"]

_serials = itertools.count(1)
# How many patches an entry remembers (see CacheEntry.changes_since).
_HISTORY_STEPS = 16
# Appended rows add Arrow chunks; past this many the scalars are made contiguous again.
_MAX_CHUNKS = 64
# CacheEntry.rows reads rows by slicing while they are fewer than 1/this of the entry's.
_SLICE_RATIO = 256
# What a value converted to Python costs beyond its own bytes: the list's slot and the object.
_PY_VALUE_BYTES = 48


def _norms_bytes(norms: RowNorms) -> int:
    return int(norms.inv.nbytes + norms.tail.nbytes)


class _Rows:
    """The buffer behind successive entries' matrices: entries are prefixes of it, so a commit
    that only adds rows writes them into the spare capacity instead of copying the namespace.
    Only the entry whose rows end at ``used`` may grow it in place; an older entry copies."""

    def __init__(self, data: np.ndarray, used: int) -> None:
        self.data = data
        self.used = used
        self.lock = threading.Lock()

    @classmethod
    def grown(cls, head: np.ndarray, tail: np.ndarray, take: np.ndarray | None = None) -> _Rows:
        """A new buffer holding ``head`` (only its rows ``take``, when given) then ``tail``,
        each row copied once."""
        # Room for as many rows again: appends cost amortised O(rows added).
        h = len(head) if take is None else len(take)
        n = h + len(tail)
        data = np.empty((max(2 * n, 1024), *head.shape[1:]), dtype=head.dtype)
        if take is None:
            data[:h] = head
        elif h:  # ascending; a few dropped rows leave a few runs, each one block copy
            cuts = np.flatnonzero(np.diff(take) != 1) + 1
            if len(cuts) > _MAX_CHUNKS:
                np.take(head, take, axis=0, out=data[:h], mode="clip")  # "clip": no buffered copy
            else:
                for a, b in itertools.pairwise([0, *cuts.tolist(), h]):
                    data[a:b] = head[take[a]:take[a] + b - a]
        data[h:n] = tail
        return cls(data, n)

    def append(self, n: int, tail: np.ndarray) -> np.ndarray | None:
        """The first ``n`` rows followed by ``tail``, written in place, or ``None`` when the
        buffer cannot take them (full, or ``n`` is not where it ends)."""
        with self.lock:
            end = n + len(tail)
            if self.used != n or end > len(self.data) or tail.shape[1:] != self.data.shape[1:]:
                return None
            self.data[n:end] = tail
            self.used = end
            return self.data[:end]


class _Patch(NamedTuple):
    """One commit of this process applied to an entry: which of its rows went, how many came."""

    parent: int  # the patched entry's serial
    rows: int  # its row count
    dropped: np.ndarray  # int64 positions of its rows that are gone (deleted or replaced), ascending
    appended: int  # rows added after the kept ones


@dataclass
class CacheEntry:
    """One namespace: scalar columns as Arrow, vectors as an ``(n, dim)`` float32 view."""

    version: int
    scalars: pa.Table  # every column but the vector, in table order
    matrix: np.ndarray  # (n, dim) float32, rows with a null vector are zeros
    has_vector: np.ndarray  # (n,) bool
    nbytes: int
    _numeric: dict[tuple[str, str], np.ndarray] = field(default_factory=dict)
    _lists: dict[str, list[Any]] = field(default_factory=dict)
    # Identifies this entry's rows (the version label can move while the rows stay the same).
    serial: int = field(default_factory=lambda: next(_serials))
    # The patches that led here from earlier entries, oldest first (bounded).
    _history: tuple[_Patch, ...] = ()
    # The growable buffer ``matrix`` is a prefix of, once rows were appended to this namespace.
    _rows: _Rows | None = None
    # kernels.row_norms of ``matrix``, once asked for; patches carry it (computed for new rows only).
    _norms: RowNorms | None = None
    # kernels.row_shadow of ``matrix`` and the growable buffers of its two arrays, carried the same way.
    _shadow: RowShadow | None = None
    _shadow_rows: tuple[_Rows, _Rows] | None = None
    _shadow_asks: int = 0
    # What was computed from the rows since the entry was made (norms, shadow, converted columns),
    # in bytes, and the cache told of its growth (VectorCache.put sets it).
    _derived_bytes: int = 0
    _grew: Callable[[CacheEntry, int], None] | None = field(default=None, repr=False, compare=False)

    @property
    def n(self) -> int:
        return int(self.matrix.shape[0])

    @property
    def size(self) -> int:
        """Bytes this entry holds: its rows (:attr:`nbytes`, the vectors' spare capacity
        included) and what was computed from them, the int8 shadow, the row norms and the columns
        converted for scoring or materialising rows (Python lists estimated)."""
        return self.nbytes + self._derived_bytes

    def _derived(self, nbytes: int) -> None:
        """Count ``nbytes`` more computed from the rows, and tell the cache holding this entry."""
        self._derived_bytes += nbytes
        if self._grew is not None:
            self._grew(self, nbytes)

    @classmethod
    def from_arrow(cls, table: pa.Table, version: int, dim: int) -> CacheEntry:
        n = table.num_rows
        if VECTOR in table.column_names:
            vec: Any = table.column(VECTOR).combine_chunks()
            if len(vec) == 0:
                matrix = np.zeros((0, dim), dtype=np.float32)
                has = np.zeros(0, dtype=bool)
            else:
                # .values ignores the list array's offset and nulls: slice to our rows, zero-copy.
                vals = vec.values.slice(vec.offset * dim, n * dim)
                matrix = vals.to_numpy(zero_copy_only=vals.null_count == 0).reshape(n, dim)
                has = ~np.asarray(vec.is_null().to_numpy(zero_copy_only=False), dtype=bool)
                if not has.all() or vals.null_count:
                    matrix = np.where(has[:, None], np.nan_to_num(matrix), 0).astype(np.float32)
            scalars = table.drop_columns([VECTOR])
        else:
            matrix = np.zeros((n, dim), dtype=np.float32)
            has = np.zeros(n, dtype=bool)
            scalars = table
        scalars = scalars.combine_chunks()
        return cls(version, scalars, matrix, has, int(scalars.nbytes + matrix.nbytes))

    @classmethod
    def empty(cls, schema: pa.Schema, version: int, dim: int) -> CacheEntry:
        """The entry of a namespace without rows at ``version``, for a table of ``schema``."""
        return cls.from_arrow(schema.empty_table(), version, dim)

    def row_norms(self) -> RowNorms:
        """``kernels.row_norms`` of the vectors (for ``kernels.near_duplicates_pruned``), computed
        once per namespace: an entry made by a patch extends its parent's with the new rows' only.
        Raises ``ValueError`` as ``row_norms`` does for a row that is not finite."""
        if self._norms is None:
            self._norms = row_norms(self.matrix)
            self._derived(_norms_bytes(self._norms))
        return self._norms

    def row_shadow(self) -> RowShadow | None:
        """``kernels.row_shadow`` of the vectors, which makes a single-query search over many rows
        faster with the same result (``None`` below ``kernels.SHADOW_MIN_ROWS`` rows, where it would
        not, or while a row is not finite). Built when asked for the second time, so a namespace
        loaded for one search never pays for it; a patched entry extends its parent's with the new
        rows' (in spare capacity, like the vectors)."""
        if self._shadow is None and self.n >= SHADOW_MIN_ROWS:
            self._shadow_asks += 1
            if self._shadow_asks < 2:
                return None
            try:
                sh = row_shadow(self.matrix)
            except KernelError:
                return None
            # Copied once into buffers with spare capacity, so the next writes append in place.
            codes, meta = _Rows.grown(sh.codes, sh.codes[:0]), _Rows.grown(sh.meta, sh.meta[:0])
            self._shadow = RowShadow(codes.data[: self.n], meta.data[: self.n])
            self._shadow_rows = (codes, meta)
            self._derived(codes.data.nbytes + meta.data.nbytes)
        return self._shadow

    def holding(self, ids: pa.Array[Any] | pa.ChunkedArray[Any]) -> np.ndarray:
        """``(n,)`` bool: the rows whose id is one of ``ids``."""
        value_set = ids.combine_chunks() if isinstance(ids, pa.ChunkedArray) else ids
        hit = pc.is_in(self.scalars.column("id"), value_set=value_set.cast(pa.string()))
        return np.asarray(hit.to_numpy(zero_copy_only=False), dtype=bool)

    def patched(self, upserted: pa.Table | None, deleted: np.ndarray | None, version: int, dim: int, *,
                replaced: np.ndarray | None = None) -> CacheEntry | None:
        """This entry after a commit of this process: rows whose id is in ``upserted`` are
        replaced by it, rows where ``deleted`` is true are gone. ``None`` when the new rows do not
        fit this entry's columns (the caller then drops it and the next read reloads).
        ``replaced`` is :meth:`holding` of the upserted ids, when the caller has it already.

        A commit that only adds rows costs in proportion to the rows added (they go into spare
        capacity of the namespace's vector buffer); one that replaces or deletes rows costs one
        copy of the namespace's vectors (the older entry may still be in use, so its buffer is
        never rewritten), its other columns are shared around the rows that went. Either way, no
        scan of the table.
        """
        keep = np.ones(self.n, dtype=bool) if deleted is None else ~deleted
        if upserted is not None and upserted.num_rows:
            keep &= ~(self.holding(upserted.column("id")) if replaced is None else replaced)
        kept_all = bool(keep.all())
        idx = np.flatnonzero(keep)
        matrix: np.ndarray | None
        if kept_all:
            scalars, matrix, has = self.scalars, self.matrix, self.has_vector
        else:
            scalars = _without(self.scalars, np.flatnonzero(~keep), idx)
            matrix, has = None, self.has_vector[idx]  # copied once, below
        rows = None
        if upserted is not None and upserted.num_rows:
            new = CacheEntry.from_arrow(upserted, version, dim)
            if new.scalars.column_names != scalars.column_names:
                return None
            try:
                scalars = pa.concat_tables([scalars, new.scalars.cast(scalars.schema)])
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError):
                return None
            tail = new.matrix.astype(np.float32, copy=False)
            grown = self._rows.append(self.n, tail) if kept_all and self._rows is not None else None
            if grown is not None:
                matrix, rows = grown, self._rows
            else:
                rows = _Rows.grown(self.matrix, tail, None if kept_all else idx)
                matrix = rows.data[: rows.used]
            has = np.concatenate([has, new.has_vector])
        elif not kept_all:
            matrix = np.ascontiguousarray(self.matrix[idx], dtype=np.float32)
        assert matrix is not None
        if scalars.num_columns and scalars.column(0).num_chunks > _MAX_CHUNKS:
            scalars = scalars.combine_chunks()
        step = _Patch(self.serial, self.n, np.flatnonzero(~keep).astype(np.int64), len(matrix) - len(idx))
        held = rows.data.nbytes if rows is not None else matrix.nbytes
        # Table.nbytes walks every chunk of every column (~1 ms on a namespace patched many
        # times): carry this entry's count forward instead, the kept share plus the new rows.
        own = self.nbytes - (self._rows.data.nbytes if self._rows is not None else self.matrix.nbytes)
        scalar_bytes = own * len(idx) // max(self.n, 1)
        if upserted is not None and upserted.num_rows:
            scalar_bytes += int(new.scalars.nbytes)
        kept = None if kept_all else idx
        shadow, shadow_rows = self._carried_shadow(kept, matrix[len(idx):])
        norms = self._carried_norms(kept, matrix[len(idx):])
        derived = (0 if norms is None else _norms_bytes(norms)) + (
            0 if shadow_rows is None else shadow_rows[0].data.nbytes + shadow_rows[1].data.nbytes)
        return CacheEntry(version, scalars, matrix, has, int(scalar_bytes + held),
                          _history=_bounded((*self._history, step), len(matrix)), _rows=rows,
                          _norms=norms, _shadow=shadow, _shadow_rows=shadow_rows, _derived_bytes=derived)

    def _carried_shadow(self, kept: np.ndarray | None, added: np.ndarray) -> tuple[RowShadow | None, tuple[_Rows, _Rows] | None]:
        """This entry's shadow for the patched entry, as :meth:`_carried_norms` carries the norms:
        the new rows' are appended into the buffers' spare capacity when no row went (so a write
        costs in proportion to the rows it adds), else the kept rows are copied once."""
        old, bufs = self._shadow, self._shadow_rows
        if old is None or bufs is None:
            return None, None
        try:
            new = row_shadow(np.ascontiguousarray(added, dtype=np.float32))
        except KernelError:
            return None, None
        if kept is None and not len(added):
            return old, bufs
        if kept is None:
            codes, meta = bufs[0].append(self.n, new.codes), bufs[1].append(self.n, new.meta)
            if codes is not None and meta is not None:
                return RowShadow(codes, meta), bufs
        grown = (_Rows.grown(old.codes, new.codes, kept), _Rows.grown(old.meta, new.meta, kept))
        return RowShadow(grown[0].data[: grown[0].used], grown[1].data[: grown[1].used]), grown

    def _carried_norms(self, kept: np.ndarray | None, added: np.ndarray) -> RowNorms | None:
        """This entry's row norms for the patched entry: those of the ``kept`` rows (``None``: all)
        followed by the ``added`` rows'; ``None`` when not computed yet or a new row is not finite
        (the patched entry then computes them when asked, and raises there)."""
        old = self._norms
        if old is None:
            return None
        parts = [old] if kept is None else [RowNorms(old.head, old.inv[kept], old.tail[kept])]
        if len(added):
            try:
                parts.append(row_norms(np.ascontiguousarray(added), head=old.head))
            except ValueError:
                return None
        if len(parts) == 1:
            return parts[0]
        return RowNorms(old.head, np.concatenate([p.inv for p in parts]), np.concatenate([p.tail for p in parts]))

    def changes_since(self, serial: int) -> tuple[np.ndarray, int] | None:
        """How this entry follows from the entry ``serial`` of the same namespace through this
        process's commits: ``(dropped, start)``, the positions of that entry's rows that are gone
        (int64, ascending) and the first row of this entry that is new. Rows before ``start`` are
        that entry's other rows, in the same order. ``None`` when ``serial`` is not this entry
        nor an ancestor it remembers (the caller then starts over from this entry).

        >>> import pyarrow as pa
        >>> a = CacheEntry.from_arrow(pa.table({"id": ["x", "y", "z"]}), version=1, dim=0)
        >>> b = a.patched(pa.table({"id": ["y", "w"]}), None, version=2, dim=0)  # y replaced, w new
        >>> b.scalars.column("id").to_pylist()
        ['x', 'z', 'y', 'w']
        >>> dropped, start = b.changes_since(a.serial)
        >>> dropped.tolist(), start
        ([1], 2)
        """
        if serial == self.serial:
            return np.empty(0, dtype=np.int64), self.n
        first = next((i for i, p in enumerate(self._history) if p.parent == serial), None)
        if first is None:
            return None
        steps = self._history[first:]
        if len(steps) == 1:  # the usual case: one commit since
            return steps[0].dropped, steps[0].rows - len(steps[0].dropped)
        # origin[j]: the position in entry `serial` of the row now at j, or -1 for a row appended since.
        origin = np.arange(steps[0].rows, dtype=np.int64)
        for p in steps:
            origin = np.concatenate([np.delete(origin, p.dropped), np.full(p.appended, -1, dtype=np.int64)])
        start = int(np.count_nonzero(origin >= 0))
        kept = np.zeros(steps[0].rows, dtype=bool)
        kept[origin[:start]] = True
        return np.flatnonzero(~kept).astype(np.int64), start

    def rows(self, idx: np.ndarray, columns: list[str] | None = None) -> list[dict[str, Any]]:
        """Rows ``idx`` as fresh dicts (like ``schema.rows_from_arrow``, without the vector).

        Columns are converted to Python lists once per entry, so materialising the hits of a
        search costs a few dict inserts per row instead of an Arrow take and conversion. A few
        rows of a large entry whose lists are not built yet (the first search after a write)
        are read by slicing instead: building the lists would cost as much as the namespace.
        """
        names = self.scalars.column_names if columns is None else columns
        if len(idx) * _SLICE_RATIO < self.n and any(c not in self._lists for c in names):
            picked = take_rows(self.scalars.select(names), idx)  # fresh objects: nothing to copy
        else:
            lists = [self._pylist(c) for c in names]
            picked = [{c: vals[i] for c, vals in zip(names, lists, strict=True)} for i in idx.tolist()]
        out: list[dict[str, Any]] = []
        for row in picked:
            if "tags" in row and row["tags"] is not None:
                row["tags"] = list(row["tags"])  # never hand out the cache's own list
            if "metadata" in row:
                m = row["metadata"]
                row["metadata"] = json.loads(m) if m is not None else None
            out.append(row)
        return out

    def _pylist(self, column: str) -> list[Any]:
        got = self._lists.get(column)
        if got is None:
            values = self.scalars.column(column)
            got = values.to_pylist()
            self._lists[column] = got
            # A list's slot and a small object per value, besides the values' own bytes.
            self._derived(len(got) * _PY_VALUE_BYTES + int(values.nbytes))
        return got

    def int64(self, column: str) -> np.ndarray:
        """``column`` as int64 (nulls become 0, i.e. the epoch: very old)."""
        key = ("i8", column)
        if key not in self._numeric:
            arr: Any = pc.fill_null(pc.cast(self.scalars.column(column), pa.int64()), pa.scalar(0, pa.int64()))
            self._numeric[key] = np.ascontiguousarray(arr.to_numpy(), dtype=np.int64)
            self._derived(self._numeric[key].nbytes)
        return self._numeric[key]

    def float32(self, column: str) -> np.ndarray:
        """``column`` as float32 (nulls become 0)."""
        key = ("f4", column)
        if key not in self._numeric:
            arr: Any = pc.fill_null(pc.cast(self.scalars.column(column), pa.float32()), pa.scalar(0.0, pa.float32()))
            self._numeric[key] = np.ascontiguousarray(arr.to_numpy(), dtype=np.float32)
            self._derived(self._numeric[key].nbytes)
        return self._numeric[key]


def split_by_namespace(table: pa.Table) -> dict[str, pa.Table]:
    """The rows of ``table`` by their ``namespace`` column (zero-copy slices of one sorted copy),
    each namespace's rows in their order in ``table``.

    >>> parts = split_by_namespace(pa.table({"namespace": ["b", "a", "b"], "id": ["1", "2", "3"]}))
    >>> {ns: t.column("id").to_pylist() for ns, t in parts.items()}
    {'a': ['2'], 'b': ['1', '3']}
    """
    if table.num_rows == 0:
        return {}
    # A stable sort: each namespace keeps its rows' order.
    ordered = table.take(pc.sort_indices(table, [("namespace", "ascending")]))
    names = ordered.column("namespace").to_numpy(zero_copy_only=False)
    cuts = (np.flatnonzero(names[1:] != names[:-1]) + 1).tolist()
    return {str(names[a]): ordered.slice(a, b - a)
            for a, b in zip([0, *cuts], [*cuts, len(names)], strict=True)}


def _without(table: pa.Table, dropped: np.ndarray, kept: np.ndarray) -> pa.Table:
    """``table`` without the rows ``dropped`` (ascending; ``kept`` is the rest): zero-copy slices
    around a few dropped rows, a take when many went."""
    if len(dropped) > _MAX_CHUNKS:
        return table.take(pa.array(kept, type=pa.int64()))
    bounds = [-1, *dropped.tolist(), table.num_rows]
    parts = [table.slice(a + 1, b - a - 1) for a, b in itertools.pairwise(bounds) if b - a > 1]
    return pa.concat_tables(parts) if parts else table.slice(0, 0)


def _bounded(history: tuple[_Patch, ...], n: int) -> tuple[_Patch, ...]:
    """The newest patches worth following: at most ``_HISTORY_STEPS``, and no further back than
    where more rows were dropped than the namespace now holds (rebuilding is then as cheap)."""
    history = history[-_HISTORY_STEPS:]
    dropped = 0
    for i in range(len(history) - 1, -1, -1):
        dropped += len(history[i].dropped)
        if dropped > n:
            return history[i + 1:]
    return history


class VectorCache:
    """LRU of :class:`CacheEntry` keyed by ``(table, namespace)``, bounded by ``max_bytes``: each
    entry counts with its :attr:`CacheEntry.size`, also as it grows (a shadow or a converted column
    built after it was put in)."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._entries: OrderedDict[tuple[str, str], CacheEntry] = OrderedDict()
        self._sizes: dict[tuple[str, str], int] = {}
        self._bytes = 0
        self._lock = threading.Lock()
        # Per table: the version a commit of this process that changes no row (a compaction, an
        # index update) started from, while it commits.
        self._rows_kept_from: dict[str, int] = {}
        # Per table: the thread committing and an event set once its commit is carried in here.
        self._committing: dict[str, tuple[int, threading.Event]] = {}

    def get(self, table: str, namespace: str, version: int) -> CacheEntry | None:
        with self._lock:
            e = self._entries.get((table, namespace))
            if e is None:
                return None
            if e.version != version:
                base = self._rows_kept_from.get(table)
                if base is None or not base <= e.version < version:
                    return None
                # ``version`` is one of the versions a commit that keeps every row is making
                # (seen on disk before the commit was recorded here): the rows are the same.
                e.version = version
            self._entries.move_to_end((table, namespace))
            return e

    @contextlib.contextmanager
    def committing(self, table: str) -> Iterator[None]:
        """Around a commit of ``table`` by this thread, from writing its version to carrying it
        into the entries here: another thread's read that misses meanwhile (it may see the new
        version first) can wait for it with :meth:`wait_committed` instead of reading the
        namespace again. The table's write lock makes it one commit per table at a time."""
        done = threading.Event()
        with self._lock:
            self._committing[table] = (threading.get_ident(), done)
        try:
            yield
        finally:
            with self._lock:
                self._committing.pop(table, None)
            done.set()

    def wait_committed(self, table: str, timeout: float) -> bool:
        """Wait (at most ``timeout`` seconds) for a commit of ``table`` that another thread of
        this process is making; whether there was one."""
        with self._lock:
            under_way = self._committing.get(table)
        if under_way is None or under_way[0] == threading.get_ident():
            return False
        under_way[1].wait(timeout)
        return True

    @contextlib.contextmanager
    def keeping_rows(self, table: str, old: int) -> Iterator[None]:
        """Around a commit of ``table`` from version ``old`` that changes no row, made under the
        table's write lock (so every version after ``old`` until it ends is its own). A read
        that sees one of its versions before :meth:`committed` records them takes the entries
        read at ``old`` or after, instead of reading the namespace again."""
        with self._lock:
            self._rows_kept_from[table] = old
        try:
            yield
        finally:
            with self._lock:
                self._rows_kept_from.pop(table, None)

    def put(self, table: str, namespace: str, entry: CacheEntry) -> None:
        key = (table, namespace)
        with self._lock:
            self._drop(key)
            size = entry.size
            if size > self.max_bytes:
                return
            self._entries[key] = entry
            self._sizes[key] = size
            self._bytes += size
            entry._grew = functools.partial(self._grown, key)
            self._evict()

    def _grown(self, key: tuple[str, str], entry: CacheEntry, nbytes: int) -> None:
        """``entry`` (held under ``key``, or since replaced) holds ``nbytes`` more."""
        with self._lock:
            if self._entries.get(key) is not entry:
                return
            self._sizes[key] += nbytes
            self._bytes += nbytes
            self._evict()

    def _evict(self) -> None:
        while self._bytes > self.max_bytes and self._entries:
            self._drop(next(iter(self._entries)))

    def _drop(self, key: tuple[str, str]) -> None:
        entry = self._entries.pop(key, None)
        if entry is not None:
            self._bytes -= self._sizes.pop(key)
            entry._grew = None

    def committed(self, table: str, touched: Iterable[str] | None, old: int, new: int) -> None:
        """This process committed versions ``old+1 .. new`` while holding the table's write lock.

        Entries of namespaces in ``touched`` (``None``: all) are dropped; entries read at ``old``
        (or at a version in between, during a commit that kept every row) stay valid and are
        relabelled ``new`` (no one else could write in between).
        """
        drop_all = touched is None
        names = set() if touched is None else set(touched)
        with self._lock:
            for key in [k for k in self._entries if k[0] == table]:
                e = self._entries[key]
                if drop_all or key[1] in names:
                    self._drop(key)
                elif old <= e.version <= new:
                    e.version = new

    def drop_table(self, table: str) -> None:
        with self._lock:
            for key in [k for k in self._entries if k[0] == table]:
                self._drop(key)

    @property
    def nbytes(self) -> int:
        return self._bytes
