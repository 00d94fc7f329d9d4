"""Read a ``mindcore export`` file into a store (created if missing): every table with its schema,
every row with its ids, timestamps, tags, metadata and vectors as exported.

How it writes: one committed write per batch (``--batch-size`` rows of one table, 5,000 by
default, across as many namespaces as they hold, upserted by namespace and id). A batch is stored whole or
not at all, so Ctrl-C, a crash or a full disk leaves the store consistent: Ctrl-C stops after the
batch in progress and reports how many rows are in; running the same import again finishes it
(rows already there are replaced by the same rows, never duplicated). Rows of the target store
that the export does not have are kept.

Every row goes through the secret policy first (:class:`~mindcore.policy.SecretPolicy`, the one
every write path uses: its text, metadata and ids, and each namespace as an identifier): a file
with a credential in it is refused before anything is written, naming the line and the rule.

An export made with ``--no-vectors`` is embedded again here with ``--embedder`` (the model the
target store records, else the bundled one; ``hash`` for the hashing embedder), which is how a
store moves to another model. An export with vectors keeps its model: the target store must be
new or built with that same model.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mindcore._argtypes import positive_int
from mindcore.cli._common import (
    Progress,
    add_embedder_argument,
    add_store_argument,
    embedder_for,
    open_store,
    stop_between_steps,
)
from mindcore.cli._transfer import (
    EMBEDDED_TEXT,
    Header,
    RowRecord,
    TableHeader,
    TransferError,
    check_complete,
    read,
)
from mindcore.embed import Embedder
from mindcore.errors import SecretRefusedError
from mindcore.policy import SecretPolicy
from mindcore.store import Row, Store, Table

HELP = "read a JSONL export into a store, one committed write per batch"
EXAMPLE = "mindcore import --store ./new-memory memory.jsonl --embedder hash"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_store_argument(parser, help="the store to import into (created if missing)")
    parser.add_argument("input", metavar="FILE", help="a file written by mindcore export")
    parser.add_argument("--batch-size", type=positive_int, default=5_000, metavar="N",
                        help="rows per committed write (5,000)")
    add_embedder_argument(parser)


class RecordedModel:
    """The identity of the model an export's vectors came from (its id and dimension). Imported
    rows carry their vectors, so nothing is embedded here; a store or table built with it records
    the same model the source did."""

    def __init__(self, model_id: str, dim: int) -> None:
        self.model_id = model_id
        self.dim = dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        raise TransferError(f"{self.model_id} is known here by its id only: open the imported store with "
                            "that model to embed new text")

    async def aembed(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed(texts)


def _model(info: dict[str, Any] | None) -> RecordedModel | None:
    return None if info is None else RecordedModel(str(info["model_id"]), int(info["dim"]))


class Importer:
    """Creates the export's tables in ``store`` and writes its rows batch by batch."""

    def __init__(self, store: Store, header: Header, embedder_choice: str) -> None:
        self.store = store
        self.header = header
        self.embedder: Embedder | None = None
        if header.vectors:
            model = _model(header.embedding)
            if model is not None:
                store.bind_embedder(model)
        elif any(t.dim is not None and t.rows for t in header.tables):
            self.embedder = embedder_for(embedder_choice, store.embedding)
            store.bind_embedder(self.embedder)
        self.tables: dict[str, Table] = {t.name: self._create(t) for t in header.tables}

    def _create(self, t: TableHeader) -> Table:
        if t.dim is None:
            return self.store.table(t.name, t.columns)
        embedder: Any = self.embedder if self.embedder is not None else (
            _model(t.embedding) or RecordedModel(f"unrecorded-d{t.dim}", t.dim))
        return self.store.table(t.name, t.columns, vectors=True, embedder=embedder)

    def write(self, table: str, records: list[RowRecord]) -> None:
        """One committed write of ``records`` (all of one table, of any namespaces)."""
        rows: list[Row] = [r.row for r in records]
        if self.embedder is not None:
            wanted = [i for i, r in enumerate(records) if r.embed]
            if wanted:
                text_of = EMBEDDED_TEXT.get(table)
                if text_of is None:
                    raise TransferError(f"table {table!r}: its rows cannot be embedded again from their text")
                vectors = self.embedder.embed([text_of(rows[i]) for i in wanted])
                for i, v in zip(wanted, vectors, strict=True):
                    rows[i] = {**rows[i], "vector": v}
        target = self.tables[table]
        by_namespace: dict[str, list[Row]] = {}
        for record, row in zip(records, rows, strict=True):
            by_namespace.setdefault(record.namespace, []).append(row)
        target.write_batch(by_namespace)  # one commit for every namespace's rows


def batches(records: Iterator[RowRecord], size: int) -> Iterator[tuple[str, list[RowRecord]]]:
    """Runs of at most ``size`` records of one table (of any namespaces), in file order."""
    batch: list[RowRecord] = []
    for r in records:
        if batch and (len(batch) >= size or r.table != batch[0].table):
            yield batch[0].table, batch
            batch = []
        batch.append(r)
    if batch:
        yield batch[0].table, batch


SCREEN_CHUNK = 2_000


def _refuse(number: int, r: RowRecord, policy: SecretPolicy) -> None:
    """Raise the policy's own error for a row it refuses, naming the line and the field."""
    where = f"line {number} (table {r.table!r})"
    try:
        policy.screen_identifier(r.namespace, f"{where}: namespace")
        policy.screen_value({k: v for k, v in r.row.items() if k != "vector"}, f"{where}: row")
    except SecretRefusedError as e:
        raise TransferError(f"{e}: nothing imported") from None


def _screen_chunk(chunk: list[tuple[int, RowRecord]], policy: SecretPolicy) -> None:
    values = [[r.namespace, {k: v for k, v in r.row.items() if k != "vector"}] for _number, r in chunk]
    refused = policy.first_refused(values)
    if refused is not None:
        _refuse(*chunk[refused], policy)
        raise TransferError(f"line {chunk[refused][0]}: holds a secret: nothing imported")


def screen_file(path: Path, policy: SecretPolicy) -> None:
    """Every row of the export at ``path`` through ``policy`` (refusing), before anything is
    written: raises :class:`TransferError` naming the first refused row. Rows are scanned in
    chunks (one parallel scan of each chunk's strings), the refused one then screened alone for
    its message."""
    with path.open(encoding="utf-8") as f:
        _header, records = read(iter(f))
        chunk: list[tuple[int, RowRecord]] = []
        for number, r in enumerate(records, start=2):
            chunk.append((number, r))
            if len(chunk) >= SCREEN_CHUNK:
                _screen_chunk(chunk, policy)
                chunk = []
        _screen_chunk(chunk, policy)


def run(args: argparse.Namespace) -> int:
    path = Path(args.input)
    if not path.is_file():
        raise TransferError(f"no export at {path}")
    check_complete(path)
    screen_file(path, SecretPolicy())
    imported = 0
    with path.open(encoding="utf-8") as f:
        header, records = read(iter(f))
        with open_store(args, read_only=False, create=True) as store:
            importer = Importer(store, header, args.embedder)
            with stop_between_steps("the batch in progress") as stop, Progress(
                    "import", total=header.total_rows, unit="rows") as bar:
                for table, batch in batches(records, args.batch_size):
                    if stop.requested:
                        print(f"stopped: {imported} of {header.total_rows} rows imported, each batch committed "
                              "whole; run the same import again to finish")
                        return 130
                    importer.write(table, batch)
                    imported += len(batch)
                    bar.update(len(batch), note=table)
    model = "" if importer.embedder is None else f" (embedded again with {importer.embedder.model_id})"
    print(f"imported {imported} rows into {len(header.tables)} tables of {store.uri}{model}")
    return 0

