"""A LangGraph checkpointer that keeps graphs' state in a mindcore store.

Every row of a thread lives in one namespace of one table (``langgraph_checkpoints`` by
default), so a thread is read with one scan, held in memory by the store's namespace cache and
patched there after each write, and deleted in one commit:

- a **checkpoint** row per checkpoint: the checkpoint without its channel values, its metadata
  (both through the saver's serializer), its parent, its run and the channel versions it points
  at;
- a **blob** row per channel value and version: a value is stored once, however many
  checkpoints point at it (a long message list is not copied into every step);
- a **write** row per pending write of a task.

A ``put`` is one commit (the new blobs and the checkpoint together), so a crash leaves a
checkpoint with all of its values or none of it. Secrets are refused before anything is
written: the thread id, the checkpoint namespace, every string inside the values, the metadata
and the pending writes go through the store's :class:`~mindcore.policy.SecretPolicy`, and a
refused one raises :class:`~mindcore.errors.SecretRefusedError` (the graph run stops there,
before its model sees the secret).
"""

from __future__ import annotations

import asyncio
import builtins
import json
import random
from collections.abc import AsyncIterator, Iterator, Sequence
from types import TracebackType
from typing import Any, Literal

import ormsgpack
import pyarrow as pa
import pyarrow.compute as pc
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    PendingWrite,
    get_checkpoint_id,
    get_checkpoint_metadata,
    writes_sort_key,
)
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from mindcore.errors import InvalidInputError, SecretRefusedError
from mindcore.policy import SecretPolicy
from mindcore.store import ALL_NAMESPACES, Store, Table, col
from mindcore.store import open as open_store
from mindcore.validation import check_id

__all__ = ["MindcoreSaver", "PruneStrategy"]

PruneStrategy = Literal["keep_latest", "delete"]

#: The table a saver keeps its rows in unless told otherwise.
DEFAULT_TABLE = "langgraph_checkpoints"

_COLUMNS: dict[str, pa.DataType] = {
    "kind": pa.string(),  # "checkpoint", "blob" or "write"
    "checkpoint_ns": pa.string(),
    "checkpoint_id": pa.string(),  # checkpoints and writes
    "parent_id": pa.string(),  # checkpoints
    "run_id": pa.string(),  # checkpoints: metadata["run_id"], for delete_for_runs
    "blob_ids": pa.list_(pa.string()),  # checkpoints: the blob rows their channel versions point at
    "channel": pa.string(),  # blobs and writes
    "task_id": pa.string(),  # writes
    "task_path": pa.string(),  # writes
    "idx": pa.int64(),  # writes
    "value_type": pa.string(),  # the serializer's type tag of `value`
    "value": pa.binary(),  # checkpoint (without channel values), blob or written value
    "meta_type": pa.string(),  # checkpoints
    "meta": pa.binary(),  # checkpoints: the metadata
}

_CHECKPOINT, _BLOB, _WRITE = "checkpoint", "blob", "write"
_EMPTY = "empty"  # a channel version with no value (the channel was cleared)
_ID_MAX_CHARS = 512


def _key(*parts: str) -> str:
    """A row id no two different part lists share (the parts may hold any character)."""
    return json.dumps(parts, ensure_ascii=False, separators=(",", ":"))


def _checkpoint_key(ns: str, checkpoint_id: str) -> str:
    return _key(_CHECKPOINT, ns, checkpoint_id)


def _blob_key(ns: str, channel: str, version: Any) -> str:
    return _key(_BLOB, ns, channel, str(version))


def _write_key(ns: str, checkpoint_id: str, task_id: str, idx: int) -> str:
    return _key(_WRITE, ns, checkpoint_id, task_id, str(idx))


def _config(thread_id: str, ns: str, checkpoint_id: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": checkpoint_id}}


class MindcoreSaver(BaseCheckpointSaver[str]):
    """A LangGraph checkpointer on a mindcore :class:`~mindcore.store.Store`.

    ``store`` is an open store (the saver never closes it) or where to open one (a folder,
    ``s3://bucket/prefix`` with ``storage_options``, ``memory://name``), which the saver then
    closes on :meth:`close` or at the end of a ``with`` block. ``serde`` is LangGraph's serializer
    (default: its ``JsonPlusSerializer``); ``secrets`` the policy every value is screened with
    (default: refuse anything credential-shaped); ``table`` the store table the saver uses.

    Sync and async methods both work (the async ones run the store's work in a thread), as do
    LangGraph's extended operations: :meth:`copy_thread`, :meth:`delete_for_runs` and
    :meth:`prune`.

    >>> from langgraph.graph import StateGraph, START, END
    >>> from typing_extensions import TypedDict
    >>> class State(TypedDict):
    ...     count: int
    >>> builder = StateGraph(State)
    >>> _ = builder.add_node("inc", lambda s: {"count": s["count"] + 1})
    >>> _ = builder.add_edge(START, "inc")
    >>> _ = builder.add_edge("inc", END)
    >>> with MindcoreSaver.open("memory://langgraph-doc") as saver:
    ...     graph = builder.compile(checkpointer=saver)
    ...     config = {"configurable": {"thread_id": "t1"}}
    ...     graph.invoke({"count": 1}, config)["count"], graph.get_state(config).values["count"]
    (2, 2)
    """

    def __init__(
        self,
        store: Store | str,
        *,
        storage_options: dict[str, str] | None = None,
        serde: SerializerProtocol | None = None,
        secrets: SecretPolicy | None = None,
        table: str = DEFAULT_TABLE,
    ) -> None:
        super().__init__(serde=serde)
        if isinstance(store, Store):
            if storage_options is not None:
                raise InvalidInputError("storage_options: only with a store given by its address")
            self._store, self._owns_store = store, False
        elif isinstance(store, str):
            self._store, self._owns_store = open_store(store, storage_options=storage_options), True
        else:
            raise InvalidInputError(f"store: expected a mindcore Store or its address, got {type(store).__name__}")
        if secrets is not None and not isinstance(secrets, SecretPolicy):
            raise InvalidInputError(f"secrets: expected a SecretPolicy, got {type(secrets).__name__}")
        self.secrets = secrets or SecretPolicy()
        self._table_name = check_id(table, "table")
        self._table: Table | None = None

    @classmethod
    def open(cls, uri: str, *, storage_options: dict[str, str] | None = None, **kwargs: Any) -> MindcoreSaver:
        """A saver on the store at ``uri`` (opened, and closed with the saver)."""
        return cls(uri, storage_options=storage_options, **kwargs)

    @property
    def store(self) -> Store:
        """The store the saver keeps its rows in."""
        return self._store

    @property
    def table(self) -> Table:
        """The store table holding every thread's rows (one namespace per thread)."""
        if self._table is None:
            self._table = self._store.table(self._table_name, _COLUMNS)
        return self._table

    def close(self) -> None:
        """Close the store if the saver opened it (idempotent)."""
        if self._owns_store:
            self._store.close()

    def __enter__(self) -> MindcoreSaver:
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    async def __aenter__(self) -> MindcoreSaver:
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        await asyncio.to_thread(self.close)

    # -- reading -------------------------------------------------------------------------------

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint ``config`` names (its ``checkpoint_id``), else the thread's latest in
        its ``checkpoint_ns``; ``None`` when there is none."""
        thread_id = self._thread_id(config)
        ns = self._ns(config)
        rows = self._rows(thread_id)
        mask = _mask(rows, kind=_CHECKPOINT, checkpoint_ns=ns)
        checkpoint_id = get_checkpoint_id(config)
        if not checkpoint_id:
            ids = rows.column("checkpoint_id").filter(mask)
            if not len(ids):
                return None
            checkpoint_id = pc.max(ids).as_py()
        picked = _rows_at(rows, pc.and_(mask, pc.equal(rows.column("checkpoint_id"), pa.scalar(checkpoint_id))))
        if not picked.num_rows:
            return None
        return self._tuple(thread_id, rows, picked.slice(0, 1).to_pylist()[0])

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """Checkpoints newest first: of ``config``'s thread (and its ``checkpoint_ns`` and
        ``checkpoint_id`` when given), or of every thread for ``None``; only those whose metadata
        holds every key of ``filter`` with an equal value, made before ``before``'s checkpoint,
        at most ``limit``."""
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)):
            raise InvalidInputError(f"limit: expected an int or None, got {limit!r}")
        before_id = get_checkpoint_id(before) if before else None
        if config is not None:
            threads = [self._thread_id(config)]
            ns = config["configurable"].get("checkpoint_ns")
            wanted_id = get_checkpoint_id(config)
        else:
            threads = self._threads()
            ns, wanted_id = None, None
        # Which rows, found on the small columns; a row is read whole only when it is yielded.
        found: list[tuple[str, str, int]] = []
        views: dict[str, pa.Table] = {}
        for thread_id in threads:
            rows = views[thread_id] = self._rows(thread_id)
            equal = {"kind": _CHECKPOINT}
            if ns is not None:
                equal["checkpoint_ns"] = ns
            if wanted_id:
                equal["checkpoint_id"] = wanted_id
            mask = _mask(rows, **equal)
            if before_id:
                mask = pc.and_(mask, pc.less(rows.column("checkpoint_id"), pa.scalar(before_id)))
            at = pc.indices_nonzero(mask)
            ids = rows.column("checkpoint_id").take(at).to_pylist()
            found += [(thread_id, str(cid), int(i)) for cid, i in zip(ids, at.to_pylist(), strict=True)]
        found.sort(key=lambda item: item[1], reverse=True)
        left = limit
        for thread_id, _, i in found:
            if left is not None and left <= 0:
                return
            row = views[thread_id].slice(i, 1).to_pylist()[0]
            metadata = self.serde.loads_typed((row["meta_type"], row["meta"]))
            if filter and not all(metadata.get(k) == v for k, v in filter.items()):
                continue
            if left is not None:
                left -= 1
            yield self._tuple(thread_id, views[thread_id], row, metadata)

    # -- writing -------------------------------------------------------------------------------

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Store ``checkpoint`` (and the values of the channels in ``new_versions``) in one commit;
        returns the config that names it."""
        thread_id = self._thread_id(config)
        ns = self._ns(config)
        stored: dict[str, Any] = dict(checkpoint)
        values: dict[str, Any] = stored.pop("channel_values", None) or {}
        meta = get_checkpoint_metadata(config, metadata)
        rows: list[dict[str, Any]] = []
        for channel, version in new_versions.items():
            if channel in values:
                value_type, value = self.serde.dumps_typed(values[channel])
                self._screen((value_type, value), values[channel], f"channel {channel!r}")
            else:
                value_type, value = _EMPTY, b""
            rows.append({
                "id": _blob_key(ns, channel, version), "kind": _BLOB, "checkpoint_ns": ns,
                "channel": channel, "value_type": value_type, "value": value,
            })
        value_type, value = self.serde.dumps_typed(stored)
        self._screen((value_type, value), stored, "checkpoint")
        meta_type, meta_bytes = self.serde.dumps_typed(meta)
        self._screen((meta_type, meta_bytes), meta, "checkpoint metadata")
        run_id = meta.get("run_id")
        rows.append({
            "id": _checkpoint_key(ns, checkpoint["id"]), "kind": _CHECKPOINT, "checkpoint_ns": ns,
            "checkpoint_id": checkpoint["id"], "parent_id": config["configurable"].get("checkpoint_id"),
            "run_id": None if run_id is None else str(run_id),
            "blob_ids": [_blob_key(ns, c, v) for c, v in checkpoint["channel_versions"].items()],
            "value_type": value_type, "value": value, "meta_type": meta_type, "meta": meta_bytes,
        })
        self.table.upsert(thread_id, rows)
        return _config(thread_id, ns, checkpoint["id"])

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Store a task's pending writes against the checkpoint ``config`` names. A write already
        stored at the same task and index is kept (a retried task cannot duplicate it); the
        special channels' writes (errors, interrupts) replace theirs."""
        thread_id = self._thread_id(config)
        ns = self._ns(config)
        checkpoint_id = get_checkpoint_id(config)
        if not checkpoint_id:
            raise InvalidInputError("config: put_writes needs configurable.checkpoint_id")
        self.secrets.screen_identifier(task_id, "task_id")
        self.secrets.screen_object([task_path, *(c for c, _ in writes)], "pending writes")
        fresh: list[dict[str, Any]] = []
        replacing: list[dict[str, Any]] = []
        for i, (channel, value) in enumerate(writes):
            idx = WRITES_IDX_MAP.get(channel, i)
            value_type, data = self.serde.dumps_typed(value)
            self._screen((value_type, data), value, f"pending write to {channel!r}")
            row = {
                "id": _write_key(ns, checkpoint_id, task_id, idx), "kind": _WRITE, "checkpoint_ns": ns,
                "checkpoint_id": checkpoint_id, "task_id": task_id, "task_path": task_path, "idx": idx,
                "channel": channel, "value_type": value_type, "value": data,
            }
            (replacing if idx < 0 else fresh).append(row)
        if fresh:
            self.table.insert_new(thread_id, fresh)
        if replacing:
            self.table.upsert(thread_id, replacing)

    def delete_thread(self, thread_id: str) -> None:
        """Delete every checkpoint, value and pending write of ``thread_id``."""
        self.table.clear(self._check_thread(thread_id))

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete the checkpoints the runs ``run_ids`` made (their ``run_id`` metadata), in every
        thread, with their pending writes and the values no remaining checkpoint points at."""
        wanted = _strings(run_ids, "run_ids")
        if not wanted:
            return
        hits = self.table.scan_arrow(
            ALL_NAMESPACES,
            col("kind").eq(_CHECKPOINT) & col("run_id").is_in(wanted),
            columns=["namespace", "checkpoint_ns", "checkpoint_id"],
        )
        doomed: dict[str, set[tuple[str, str]]] = {}
        for row in hits.to_pylist():
            doomed.setdefault(row["namespace"], set()).add((row["checkpoint_ns"], row["checkpoint_id"]))
        for thread_id, checkpoints in doomed.items():
            self._delete_checkpoints(thread_id, self._rows(thread_id), checkpoints)

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy every checkpoint, value and pending write of ``source_thread_id`` to
        ``target_thread_id`` (rows the target has with the same keys are replaced)."""
        source = self._check_thread(source_thread_id)
        target = self._check_thread(target_thread_id)
        rows = self._rows(source)
        if rows.num_rows:
            keep = [name for name in rows.column_names if name not in ("namespace", "created_at", "updated_at")]
            self.table.upsert(target, rows.select(keep).to_pylist())

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Thin out the threads ``thread_ids``: ``"delete"`` removes everything, ``"keep_latest"``
        keeps each checkpoint namespace's latest checkpoint with its pending writes, and the
        ancestors it cannot be rebuilt without: while a channel's value at the latest checkpoint
        is not stored whole (a delta channel between snapshots), every ancestor down to the one
        holding a stored value of it stays, with its writes. Values no kept checkpoint points at
        are deleted."""
        if strategy not in ("keep_latest", "delete"):
            raise InvalidInputError(f"strategy: expected 'keep_latest' or 'delete', got {strategy!r}")
        for thread_id in _strings(thread_ids, "thread_ids"):
            thread_id = self._check_thread(thread_id)
            if strategy == "delete":
                self.table.clear(thread_id)
                continue
            rows = self._rows(thread_id)
            checkpoints = _select(rows, kind=_CHECKPOINT)
            doomed: set[tuple[str, str]] = set()
            for ns in {str(ns) for ns in checkpoints.column("checkpoint_ns").to_pylist()}:
                of_ns = _select(checkpoints, checkpoint_ns=ns).to_pylist()
                kept = self._needed_chain(rows, of_ns)
                doomed |= {(ns, row["checkpoint_id"]) for row in of_ns if row["checkpoint_id"] not in kept}
            self._delete_checkpoints(thread_id, rows, doomed)

    def get_next_version(self, current: str | None, channel: None) -> str:
        """Versions that sort as strings: a zero-padded counter and a random tie-breaker."""
        if current is None:
            current_v = 0
        elif isinstance(current, int):
            current_v = current
        else:
            current_v = int(current.split(".")[0])
        return f"{current_v + 1:032}.{random.random():016}"

    # -- async twins ---------------------------------------------------------------------------

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await asyncio.to_thread(self.get_tuple, config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        found = await asyncio.to_thread(lambda: list(self.list(config, filter=filter, before=before, limit=limit)))
        for item in found:
            yield item

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return await asyncio.to_thread(self.put, config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        await asyncio.to_thread(self.put_writes, config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        await asyncio.to_thread(self.delete_thread, thread_id)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        await asyncio.to_thread(self.delete_for_runs, run_ids)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        await asyncio.to_thread(self.copy_thread, source_thread_id, target_thread_id)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        await asyncio.to_thread(lambda: self.prune(thread_ids, strategy=strategy))

    # -- helpers -------------------------------------------------------------------------------

    def _screen(self, typed: tuple[str, bytes], value: Any, field: str) -> None:
        """Refuse ``value`` if a string in it holds a secret. With LangGraph's own serializer the
        judged text is exactly what is stored (the serialized value read back as plain data, every
        string of it scanned in Rust); with another serializer (an encrypting one) the value's
        object is walked."""
        text = _stored_text(self.serde, typed)
        if text is not None and self.secrets.first_refused_json([text]) is None:
            return
        self.secrets.screen_object(value, field)
        if text is not None:  # found in the stored form only: refuse it all the same
            raise SecretRefusedError(f"{field}: not stored: it looks like a secret; leave credentials out")

    def _check_thread(self, thread_id: object) -> str:
        value = check_id(thread_id, "thread_id", max_chars=_ID_MAX_CHARS)
        return self.secrets.screen_identifier(value, "thread_id")

    def _thread_id(self, config: RunnableConfig) -> str:
        configurable = config.get("configurable") if isinstance(config, dict) else None
        if not isinstance(configurable, dict) or "thread_id" not in configurable:
            raise InvalidInputError('config: expected {"configurable": {"thread_id": ...}}')
        return self._check_thread(str(configurable["thread_id"]))

    def _ns(self, config: RunnableConfig) -> str:
        ns = config["configurable"].get("checkpoint_ns") or ""
        if not isinstance(ns, str):
            raise InvalidInputError(f"checkpoint_ns: expected a str, got {type(ns).__name__}")
        return self.secrets.screen_identifier(ns, "checkpoint_ns") if ns else ns

    def _rows(self, thread_id: str) -> pa.Table:
        """Every row of a thread, as the store's cache holds it (read-only)."""
        return self.table.cached(thread_id).scalars

    def _threads(self) -> builtins.list[str]:
        return self.table.namespaces()

    def _tuple(
        self, thread_id: str, rows: pa.Table, row: dict[str, Any], metadata: Any = None
    ) -> CheckpointTuple:
        ns, checkpoint_id = row["checkpoint_ns"], row["checkpoint_id"]
        checkpoint: Checkpoint = self.serde.loads_typed((row["value_type"], row["value"]))
        blobs = _by_id(rows, row["blob_ids"] or [])
        values: dict[str, Any] = {}
        for channel, version in checkpoint["channel_versions"].items():
            blob = blobs.get(_blob_key(ns, channel, version))
            if blob is not None and blob["value_type"] != _EMPTY:
                values[channel] = self.serde.loads_typed((blob["value_type"], blob["value"]))
        writes = _select(rows, kind=_WRITE, checkpoint_ns=ns, checkpoint_id=checkpoint_id).to_pylist()
        writes.sort(key=lambda w: writes_sort_key(w["task_path"] or "", w["task_id"], w["idx"]))
        pending: list[PendingWrite] = [
            (w["task_id"], w["channel"], self.serde.loads_typed((w["value_type"], w["value"]))) for w in writes
        ]
        if metadata is None:
            metadata = self.serde.loads_typed((row["meta_type"], row["meta"]))
        parent = row["parent_id"]
        return CheckpointTuple(
            config=_config(thread_id, ns, checkpoint_id),
            checkpoint={**checkpoint, "channel_values": values},
            metadata=metadata,
            parent_config=_config(thread_id, ns, parent) if parent else None,
            pending_writes=pending,
        )

    def _needed_chain(self, rows: pa.Table, checkpoints: builtins.list[dict[str, Any]]) -> set[str]:
        """The ids of one checkpoint namespace's latest checkpoint and of the ancestors its
        channel values cannot be rebuilt without (see :meth:`prune`)."""
        by_id = {row["checkpoint_id"]: row for row in checkpoints}
        latest = max(by_id)
        blobs = _by_id(rows, [b for row in checkpoints for b in (row["blob_ids"] or [])])
        # Channels the latest checkpoint points at without a stored value.
        unresolved = {b for b in by_id[latest]["blob_ids"] or [] if _empty(blobs.get(b))}
        unresolved_channels = {json.loads(b)[2] for b in unresolved}
        kept = {latest}
        current = by_id[latest]["parent_id"]
        while unresolved_channels and current in by_id:
            kept.add(current)
            for b in by_id[current]["blob_ids"] or []:
                channel = json.loads(b)[2]
                if channel in unresolved_channels and not _empty(blobs.get(b)):
                    unresolved_channels.discard(channel)
            current = by_id[current]["parent_id"]
        return kept

    def _delete_checkpoints(self, thread_id: str, rows: pa.Table, doomed: set[tuple[str, str]]) -> None:
        """Delete these (namespace, id) checkpoints of a thread with their writes, and the values
        no other checkpoint points at, in one commit."""
        if not doomed:
            return
        ids: builtins.list[str] = []
        still_used: set[str] = set()
        blob_ids: set[str] = set()
        for row in rows.to_pylist():
            kind, key = row["kind"], (row["checkpoint_ns"], row["checkpoint_id"])
            if kind == _CHECKPOINT and key in doomed:
                ids.append(row["id"])
            elif kind == _CHECKPOINT:
                still_used.update(row["blob_ids"] or [])
            elif kind == _WRITE and key in doomed:
                ids.append(row["id"])
            elif kind == _BLOB:
                blob_ids.add(row["id"])
        ids += sorted(blob_ids - still_used)
        self.table.delete(thread_id, ids=ids)


def _mask(rows: pa.Table, **equal: str) -> Any:
    """Which rows have these values in these columns (computed on those columns only)."""
    mask: Any = None
    for name, value in equal.items():
        m = pc.equal(rows.column(name), pa.scalar(value))
        mask = m if mask is None else pc.and_(mask, m)
    return mask


def _select(rows: pa.Table, **equal: str) -> pa.Table:
    """The rows whose columns equal the given values (see :func:`_rows_at`)."""
    return _rows_at(rows, _mask(rows, **equal))


def _rows_at(rows: pa.Table, mask: Any) -> pa.Table:
    """The rows ``mask`` picks, sliced out one by one: a thread's table is held in chunks (one per
    write) and its values can be large, which a take or a filter over every column would copy
    or visit whole."""
    picked = pc.indices_nonzero(mask).to_pylist()
    if not picked:
        return rows.schema.empty_table()
    return pa.concat_tables([rows.slice(i, 1) for i in picked])


def _by_id(rows: pa.Table, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    if not ids:
        return {}
    picked = _rows_at(rows, pc.is_in(rows.column("id"), pa.array(list(ids), pa.string())))
    return {row["id"]: row for row in picked.select(["id", "value_type", "value"]).to_pylist()}


def _empty(blob: dict[str, Any] | None) -> bool:
    return blob is None or blob["value_type"] == _EMPTY


def _stored_text(serde: SerializerProtocol, typed: tuple[str, bytes]) -> str | None:
    """A serialized value as JSON text holding every string it stores (``None`` when it is not
    LangGraph's msgpack, or cannot be read back as plain data)."""
    kind, data = typed
    if kind != "msgpack" or not isinstance(serde, JsonPlusSerializer):
        return None
    try:
        plain = ormsgpack.unpackb(data, ext_hook=_plain_ext, option=ormsgpack.OPT_NON_STR_KEYS)
        return json.dumps(plain, ensure_ascii=False, allow_nan=False, default=_as_text)
    except (TypeError, ValueError):  # ormsgpack's decode errors are ValueErrors too
        return None


def _plain_ext(code: int, data: bytes) -> Any:
    """An extension value (a message object, a model) as the plain data it was packed from."""
    return ormsgpack.unpackb(data, ext_hook=_plain_ext, option=ormsgpack.OPT_NON_STR_KEYS)


def _as_text(value: Any) -> str:
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).decode("utf-8", "replace")
    return str(value)


def _strings(values: Sequence[str], name: str) -> list[str]:
    if isinstance(values, str | bytes):
        raise InvalidInputError(f"{name}: expected a list of str, got a single str")
    out = list(values)
    for v in out:
        if not isinstance(v, str):
            raise InvalidInputError(f"{name}: expected a list of str, got an item {v!r}")
    return out
