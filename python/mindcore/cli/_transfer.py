"""The JSONL form of a store that ``mindcore export`` writes and ``mindcore import`` reads.

Line 1 is the header: the format and its version, whether vectors are included, the store's
embedding model, and every table with its Arrow schema (IPC, base64), vector dimension, embedding
model and row count. Then one line per row, ``{"t": table, "ns": namespace, "row": {...}}``, grouped
by table and namespace; ``row`` holds every stored column but the vector (``metadata`` as its JSON
value), and ``"vec"`` the vector as base64 of its little-endian float32 bytes (exact, and a tenth
of the text, and of the time, of a list of floats; version 1 files, which hold lists of floats
under ``row.vector``, are still read). Without vectors, a row that had one carries ``"embed":
true`` instead, and the import embeds its text again. The last line is
``{"end": true, "rows": N}``, so a cut file is refused rather than half-imported.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from mindcore.errors import MindcoreError
from mindcore.ltm import VECTOR_TEXTS as LTM_TEXTS
from mindcore.mind import VECTOR_TEXTS as MIND_TEXTS
from mindcore.store import RESERVED, Row
from mindcore.store.rewrite import VectorTexts

FORMAT = "mindcore-export"
VERSION = 2
#: Versions this mindcore reads (1: vectors as lists of floats inside ``row``).
READS = frozenset({1, 2})


def _row_text(source: VectorTexts) -> Callable[[Row], str]:
    """``source``'s text for one exported row (its text columns; what the capability embedded)."""
    def text(row: Row) -> str:
        columns = {k: pa.array([v], pa.string()) for k, v in row.items() if v is None or isinstance(v, str)}
        return str(source.texts(pa.table(columns))[0])

    return text


#: How to embed a row of each vector table again (what its capability embedded when it wrote it).
EMBEDDED_TEXT: dict[str, Callable[[Row], str]] = {s.table: _row_text(s) for s in (LTM_TEXTS, MIND_TEXTS)}
#: Tables left out of an export without vectors: caches of vectors whose texts are not stored (the
#: context recomputes tool vectors on first use).
VECTOR_CACHES = frozenset({"context_embeddings"})


class TransferError(MindcoreError):
    """An export cannot be written or read (unknown format, a cut file, a table it cannot re-embed)."""


@dataclass(frozen=True, slots=True)
class TableHeader:
    name: str
    schema: pa.Schema
    dim: int | None
    embedding: dict[str, Any] | None
    rows: int

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "schema": base64.b64encode(self.schema.serialize().to_pybytes()).decode("ascii"),
                "dim": self.dim, "embedding": self.embedding, "rows": self.rows}

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> TableHeader:
        schema = pa.ipc.read_schema(pa.py_buffer(base64.b64decode(doc["schema"])))
        return cls(str(doc["name"]), schema, doc.get("dim"), doc.get("embedding"), int(doc["rows"]))

    @property
    def columns(self) -> list[pa.Field[Any]]:
        """The table's own columns (the standard ones every table has left out)."""
        return [f for f in self.schema if f.name not in RESERVED]


@dataclass(frozen=True, slots=True)
class Header:
    vectors: bool
    embedding: dict[str, Any] | None
    tables: list[TableHeader]

    def to_json(self) -> dict[str, Any]:
        return {"format": FORMAT, "version": VERSION, "vectors": self.vectors, "embedding": self.embedding,
                "tables": [t.to_json() for t in self.tables]}

    @classmethod
    def from_json(cls, doc: Any) -> Header:
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            raise TransferError("not a mindcore export (the first line must be its header)")
        if doc.get("version") not in READS:
            raise TransferError(f"export format version {doc.get('version')!r}; this mindcore reads versions "
                                f"{', '.join(map(str, sorted(READS)))}")
        return cls(bool(doc["vectors"]), doc.get("embedding"), [TableHeader.from_json(t) for t in doc["tables"]])

    @property
    def total_rows(self) -> int:
        return sum(t.rows for t in self.tables)


def _plain(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, bytes | bytearray):
        raise TransferError("binary columns cannot be exported as JSONL")
    raise TypeError(f"cannot export a value of type {type(value).__name__}")


def row_line(table: str, namespace: str, row: Row, *, vectors: bool) -> str:
    """One row's line (``row`` as :meth:`Table.scan` returns it)."""
    body = {k: v for k, v in row.items() if k != "namespace"}
    doc: dict[str, Any] = {"t": table, "ns": namespace}
    vector = body.pop("vector", None)
    if vector is not None and not vectors:
        doc["embed"] = True
    doc["row"] = body
    if vector is not None and vectors:
        doc["vec"] = base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode("ascii")
    return json.dumps(doc, ensure_ascii=False, default=_plain)


@dataclass(frozen=True, slots=True)
class RowRecord:
    table: str
    namespace: str
    row: Row
    embed: bool


def check_complete(path: Path) -> None:
    """Refuse a file whose last line is not the end line (a cut or still-growing export) before
    anything is imported from it."""
    with path.open("rb") as f:
        f.seek(0, os.SEEK_END)
        f.seek(max(0, f.tell() - 4096))
        tail = f.read().decode("utf-8", "replace").strip().rsplit("\n", 1)[-1]
    try:
        done = json.loads(tail).get("end") is True
    except (ValueError, AttributeError):
        done = False
    if not done:
        raise TransferError(f"{path} does not end with the export's end line (a cut file?): nothing imported")


def read(lines: Iterator[str]) -> tuple[Header, Iterator[RowRecord]]:
    """The header, and the rows as they are read (the end line is checked when they run out)."""
    first = next(lines, None)
    if first is None:
        raise TransferError("the export is empty")
    try:
        header = Header.from_json(json.loads(first))
    except (ValueError, KeyError, TypeError) as e:
        raise TransferError(f"unreadable export header: {e}") from None

    def rows() -> Iterator[RowRecord]:
        count = 0
        for number, line in enumerate(lines, start=2):
            if not line.strip():
                continue
            try:
                doc = json.loads(line)
            except ValueError as e:
                raise TransferError(f"line {number}: not JSON ({e})") from None
            if doc.get("end"):
                if doc.get("rows") != count:
                    raise TransferError(f"the end line counts {doc.get('rows')} rows but {count} were read")
                return
            count += 1
            row = dict(doc["row"])
            if "vec" in doc:
                try:
                    row["vector"] = np.frombuffer(base64.b64decode(doc["vec"], validate=True), dtype="<f4")
                except ValueError as e:
                    raise TransferError(f"line {number}: unreadable vector ({e})") from None
            yield RowRecord(str(doc["t"]), str(doc["ns"]), row, bool(doc.get("embed")))
        raise TransferError(f"the export ends after {count} rows without its end line (a cut file?)")

    return header, rows()
