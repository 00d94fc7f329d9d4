"""Context assembly's only door to storage: five tables of the store.

- ``context_tools``: one row per registered tool (namespace: the dataset; id: the tool's name, so
  registering a name again replaces it).
- ``context_embeddings``: the vector of every tool text embedded so far (namespace: the embedding
  model's id; id: a hash of the text), so a tool registered again with the same texts, or read
  by another process, is never embedded twice, and another model never mixes in.
- ``context_sessions``: the tools each session holds (namespace: the dataset; one row per
  session), updated by an atomic read-merge-write so concurrent discoveries never drop a name.
- ``context_turns``: captured turns (``tools_loaded`` and the message), shared by every dataset as
  the agentified server's turns are.
- ``context_messages``: session histories, through :class:`mindcore.store.messages.MessageLog`
  (one log per dataset, namespace and session).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from mindcore.kernels.json_values import json_dumps
from mindcore.store.messages import MessageLog

if TYPE_CHECKING:
    from mindcore.context.types import Tool
    from mindcore.store import Store, Table
    from mindcore.store.cache import CacheEntry

__all__ = ["ContextRepo", "ToolRecord"]

TOOLS = "context_tools"
# The long texts of a tool are written uncompressed: Lance's default string compression costs
# about 10 ms of a 1,000-tool registration (a quarter of it) to save a few hundred kilobytes.
_UNCOMPRESSED = {"lance-encoding:compression": "none"}
TOOL_COLUMNS: dict[str, pa.DataType | pa.Field[Any]] = {
    "name": pa.string(),
    "description": pa.field("description", pa.string(), metadata=_UNCOMPRESSED),
    "parameters": pa.field("parameters", pa.string(), metadata=_UNCOMPRESSED),  # JSON
    "fields": pa.string(),  # JSON or null
    "always_include": pa.bool_(),
    "type": pa.string(),
    "server_uri": pa.string(),
    "document": pa.field("document", pa.string(), metadata=_UNCOMPRESSED),  # what BM25 indexes
}
EMBEDDINGS = "context_embeddings"
EMBEDDING_COLUMNS: dict[str, pa.DataType] = {"vec": pa.list_(pa.float32())}
SESSIONS = "context_sessions"
SESSION_COLUMNS: dict[str, pa.DataType] = {"tools": pa.list_(pa.string())}
TURNS = "context_turns"
TURN_COLUMNS: dict[str, pa.DataType] = {"tools_loaded": pa.list_(pa.string()), "message": pa.string()}
TURNS_NAMESPACE = "turns"
MESSAGES = "context_messages"


def _key(*parts: str) -> str:
    """One unambiguous string for several ids (no separator a hostile id could fake)."""
    return json.dumps(list(parts), ensure_ascii=False, separators=(",", ":"))


def text_id(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:40]


@dataclass(frozen=True)
class ToolRecord:
    """A tool with the JSON texts the store keeps for it, each written once: the texts screened
    for secrets (:meth:`screened_json`) are the texts stored."""

    tool: Tool
    parameters: str
    metadata: str | None
    fields: str | None

    @classmethod
    def of(cls, tool: Tool) -> ToolRecord:
        return cls(
            tool,
            json_dumps(tool.parameters),
            None if tool.metadata is None else json_dumps(tool.metadata),
            None if tool.fields is None else json_dumps(tool.fields.to_wire()),
        )

    def screened_json(self) -> str:
        """Everything of the tool the secret policy reads, as one JSON text (an array holding
        the name, the description, the server's URI and the stored texts verbatim)."""
        t = self.tool
        return (f"[{json_dumps(t.name)}, {json_dumps(t.description)}, {json_dumps(t.server_uri)}, "
                f"{self.parameters}, {self.metadata or 'null'}, {self.fields or 'null'}]")


def _tool_table(records: Sequence[ToolRecord]) -> pa.Table:
    """The rows of ``records``, column by column."""
    tools = [r.tool for r in records]
    names = pa.array([t.name for t in tools], type=pa.string())
    return pa.table({
        "id": names,
        "name": names,
        "description": pa.array([t.description for t in tools], type=pa.string()),
        "parameters": pa.array([r.parameters for r in records], type=pa.string()),
        "fields": pa.array([r.fields for r in records], type=pa.string()),
        "always_include": pa.array([t.always_include for t in tools], type=pa.bool_()),
        "type": pa.array([t.type for t in tools], type=pa.string()),
        "server_uri": pa.array([t.server_uri for t in tools], type=pa.string()),
        "document": pa.array([t.document() for t in tools], type=pa.string()),
        "metadata": pa.array([r.metadata for r in records], type=pa.string()),
    })


class _Lookup:
    """Row positions of a cached namespace by id, rebuilt when the namespace's rows change."""

    def __init__(self) -> None:
        # One tuple, replaced whole: a thread never pairs one entry's serial with another's index.
        self._built: tuple[int, dict[str, int]] = (-1, {})

    def of(self, entry: CacheEntry) -> dict[str, int]:
        serial, index = self._built
        if serial != entry.serial:
            ids = entry.scalars.column("id").to_pylist() if entry.n else []
            index = {str(i): pos for pos, i in enumerate(ids)}
            self._built = (entry.serial, index)
        return index


class ContextRepo:
    """The stored state of one dataset (and the turns every dataset shares)."""

    def __init__(self, store: Store, dataset: str) -> None:
        self._store = store
        self.dataset = dataset
        self._tables: dict[str, Table] = {}
        self.log = MessageLog(store, MESSAGES)
        self._session_lookup = _Lookup()
        self._embedding_lookups: dict[str, _Lookup] = {}

    def _table(self, name: str, columns: Mapping[str, pa.DataType | pa.Field[Any]]) -> Table:
        table = self._tables.get(name)
        if table is None:  # opened on first use: building a context does no I/O
            table = self._tables[name] = self._store.table(name, columns)
        return table

    # -- tools ----------------------------------------------------------------------------------

    def tools(self) -> CacheEntry:
        """Every tool of the dataset as held in memory (one scan per table version)."""
        return self._table(TOOLS, TOOL_COLUMNS).cached(self.dataset)

    def save_tools(self, records: Sequence[ToolRecord]) -> None:
        """Insert or replace these tools in one commit (all or none)."""
        self._table(TOOLS, TOOL_COLUMNS).upsert(self.dataset, _tool_table(records))

    # -- embeddings -----------------------------------------------------------------------------

    def vectors(
        self, model_id: str, texts: Sequence[str], embed: Callable[[list[str]], np.ndarray]
    ) -> np.ndarray:
        """The vectors of ``texts`` under ``model_id`` (float32 ``(len(texts), dim)``): stored ones
        are read, the others embedded with ``embed`` (once per distinct text) and stored."""
        table = self._table(EMBEDDINGS, EMBEDDING_COLUMNS)
        lookup = self._embedding_lookups.setdefault(model_id, _Lookup())
        ids = [text_id(t) for t in texts]
        entry = table.cached(model_id)
        known = lookup.of(entry)
        missing = list(dict.fromkeys(i for i in ids if i not in known))
        if missing:
            first = {i: t for i, t in zip(ids, texts, strict=True)}
            new = np.ascontiguousarray(embed([first[i] for i in missing]), dtype=np.float32)
            table.upsert(model_id, [{"id": i, "vec": v} for i, v in zip(missing, new, strict=True)])
            entry = table.cached(model_id)
            known = lookup.of(entry)
        stored = _matrix(entry)
        positions = np.fromiter((known[i] for i in ids), dtype=np.int64, count=len(ids))
        return np.ascontiguousarray(stored[positions])

    # -- sessions -------------------------------------------------------------------------------

    def session_tools(self, namespace: str, session: str) -> list[str]:
        """The names of the tools a session holds, in the order it got them."""
        entry = self._table(SESSIONS, SESSION_COLUMNS).cached(self.dataset)
        pos = self._session_lookup.of(entry).get(_key(namespace, session))
        if pos is None:
            return []
        return list(entry.scalars.column("tools")[pos].as_py() or [])

    def hold_tools(self, namespace: str, session: str, names: Sequence[str]) -> list[str]:
        """Add ``names`` to the tools a session holds (atomically: concurrent writers never drop a
        name); return the full list."""
        out: list[list[str]] = []

        def merge(row: dict[str, Any] | None) -> dict[str, Any]:
            held = list(dict.fromkeys([*((row or {}).get("tools") or []), *names]))
            out.append(held)
            return {"tools": held}

        self._table(SESSIONS, SESSION_COLUMNS).modify(self.dataset, _key(namespace, session), merge)
        return out[0]

    def log_key(self, namespace: str, session: str) -> str:
        """The message log of one session."""
        return _key(self.dataset, namespace, session)

    # -- turns ----------------------------------------------------------------------------------

    def save_turn(self, turn_id: str, tools_loaded: Sequence[str], message: str) -> None:
        self._table(TURNS, TURN_COLUMNS).upsert(
            TURNS_NAMESPACE, [{"id": turn_id, "tools_loaded": list(tools_loaded), "message": message}]
        )

    def turn_tools(self, turn_id: str) -> list[str] | None:
        """The tools loaded in a captured turn, or ``None`` for an unknown turn."""
        row = self._table(TURNS, TURN_COLUMNS).get_one(TURNS_NAMESPACE, turn_id)
        return None if row is None else list(row.get("tools_loaded") or [])


def _matrix(entry: CacheEntry) -> np.ndarray:
    """The ``vec`` column of a cached namespace as an ``(n, dim)`` float32 matrix."""
    if entry.n == 0:
        return np.zeros((0, 0), dtype=np.float32)
    column: Any = entry.scalars.column("vec").combine_chunks()
    values: np.ndarray = column.flatten().to_numpy(zero_copy_only=False).astype(np.float32, copy=False)
    return values.reshape(entry.n, -1)
