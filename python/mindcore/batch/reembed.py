"""`reembed`: rewrite every vector of a store with a new embedding model, without stopping readers.

What is re-embedded, and from which text:

- ``ltm_memories`` (long-term memory): each memory's text after its context's last line
  (:data:`mindcore.ltm.VECTOR_TEXTS`);
- ``mind_entries`` (the mind): each belief's and reflection's content (:data:`mindcore.mind.VECTOR_TEXTS`);
- tables you made with ``store.table(..., vectors=True)``: the text you name in ``texts``
  (a column, or a function of the rows); a vector table with no known text is refused before
  anything is written, unless you name it in ``skip`` (it then keeps its vectors and its model,
  recorded for that table, so opening it with the new model raises
  :class:`~mindcore.store.EmbedderMismatchError` instead of mixing models);
- context assembly's tool vectors (``context_embeddings``, a cache keyed by model id): the new
  model's vectors of every registered tool are stored beside the old ones
  (:func:`mindcore.context.embed_tool_texts`).

How it runs: each table's rows are copied with their new vectors into a shadow table, a chunk at a
time (one model call and one commit per chunk), while readers and writers keep using the table
and the old model. Then, table by table, under the table's write lock, the rows written since
their copy are re-embedded and the table is overwritten with the shadow in one commit. Last, the
store records the new model. A plan in the store records the target model and the tables
switched, so after a crash (or Ctrl-C) running the same call again continues where it stopped and
ends with exactly the vectors an uninterrupted run gives.

What readers see: until a table is switched, its old vectors and the old model; afterwards,
opening the store or a capability with the old embedder raises
:class:`~mindcore.store.EmbedderMismatchError` (so does any handle opened before, at its next
use), and the new embedder works. LanceDB commits one table at a time: while the tables are
being switched (after every copy is done, a short phase), a reader may get that error for one
capability and not yet for another, but never scores a query against vectors of the other model.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pyarrow as pa

from mindcore.batch._twin import async_twin
from mindcore.embed.base import Embedder, check_embedder, check_vectors
from mindcore.errors import InvalidInputError, InvalidTypeError
from mindcore.store import EmbeddingInfo, StoreLike, resolve_store
from mindcore.store.rewrite import SHADOW_PREFIX, Shadow, VectorTexts, clear_plan, load_plan, save_plan
from mindcore.store.schema import VECTOR, vector_dim, vector_model
from mindcore.validation import check_int, describe

if TYPE_CHECKING:
    from mindcore.store import Store

__all__ = ["ReembedProgress", "ReembedReport", "areembed", "reembed"]

log = logging.getLogger("mindcore.batch")

#: Name of the store lock one re-embedding holds from start to end.
LOCK = "mindcore-reembed"
_PROBE = ["mindcore re-embedding probe", "a second, different text"]

TextSource = str | Callable[[pa.Table], Sequence[str]]


@dataclass(frozen=True, slots=True)
class ReembedProgress:
    """Where a re-embedding is: ``phase`` ``copy`` (rows copied into the shadow of ``table``),
    ``tools`` (context tool texts) or ``switch`` (``table`` being swapped); ``done`` of ``total``
    rows examined (texts, for ``tools``; tables, for ``switch``)."""

    phase: Literal["copy", "tools", "switch"]
    table: str
    done: int
    total: int


@dataclass(frozen=True, slots=True)
class ReembedReport:
    """What :func:`reembed` did.

    ``tables``: rows embedded per table (copy and catch-up); ``caught_up``: of those, rows written
    to the table during the copy and re-embedded at the switch; ``skipped``: tables left with their
    old model, and why; ``tool_texts``: context tool texts embedded; ``noop``: the store already
    uses the model (nothing was written); ``resumed``: an interrupted run was continued.
    """

    model_id: str
    dim: int
    previous: EmbeddingInfo | None
    noop: bool = False
    resumed: bool = False
    tables: dict[str, int] = field(default_factory=dict)
    caught_up: dict[str, int] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    tool_texts: int = 0
    elapsed_s: float = 0.0

    @property
    def rows(self) -> int:
        """Rows re-embedded, over every table."""
        return sum(self.tables.values())

    def __str__(self) -> str:
        target = f"{self.model_id!r} (dim {self.dim})"
        if self.noop:
            return f"the store already uses {target}: nothing to re-embed"
        parts = [f"re-embedded {self.rows} rows of {len(self.tables)} tables with {target}"
                 + (f", from {self.previous}" if self.previous is not None else "")]
        parts += [f"  {name}: {n} rows" + (f" ({self.caught_up[name]} written during the run)"
                                           if self.caught_up.get(name) else "")
                  for name, n in self.tables.items()]
        parts += [f"  {name}: skipped ({why})" for name, why in self.skipped.items()]
        if self.tool_texts:
            parts.append(f"  context tools: {self.tool_texts} texts")
        parts.append(f"in {self.elapsed_s:.1f} s" + (" (resumed)" if self.resumed else ""))
        return "\n".join(parts)


def _capability_sources() -> dict[str, VectorTexts]:
    from mindcore.ltm import VECTOR_TEXTS as LTM
    from mindcore.mind import VECTOR_TEXTS as MIND

    return {s.table: s for s in (LTM, MIND)}


def _user_source(table: str, source: object) -> VectorTexts:
    if isinstance(source, str):
        column = source

        def from_column(rows: pa.Table) -> list[Any]:
            if column not in rows.column_names:
                raise InvalidInputError(f"texts[{table!r}]: table {table!r} has no column {column!r} "
                                        f"(columns: {[c for c in rows.column_names if c != VECTOR]})")
            return rows.column(column).to_pylist()

        return VectorTexts(table, from_column)
    if callable(source):
        return VectorTexts(table, source)
    raise InvalidTypeError(f"texts[{table!r}]: expected a column name or a function of the rows, got {describe(source)}")


def _texts(source: VectorTexts, rows: pa.Table) -> list[str]:
    got = list(source.texts(rows))
    if len(got) != rows.num_rows:
        raise InvalidInputError(f"texts of table {source.table!r}: got {len(got)} texts for {rows.num_rows} rows")
    for i, text in enumerate(got):
        if not isinstance(text, str):
            rid = rows.column("id")[i].as_py()
            raise InvalidInputError(f"texts of table {source.table!r}: row {rid!r} has no text to embed "
                                    f"(got {describe(text)})")
    return got


class _Filler:
    """Gives rows of one table their new vectors: one model call per chunk."""

    def __init__(self, source: VectorTexts, embedder: Embedder, target: EmbeddingInfo, schema: pa.Schema) -> None:
        self.source = source
        self.embedder = embedder
        self.target = target
        self.schema = schema
        self.embedded = 0

    def __call__(self, rows: pa.Table) -> pa.Table:
        n, dim = rows.num_rows, self.target.dim
        has = np.asarray(rows.column(VECTOR).is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        idx = np.flatnonzero(has)
        matrix = np.zeros((n, dim), dtype=np.float32)
        if len(idx):
            texts = _texts(self.source, rows.take(pa.array(idx, pa.int64())))
            vectors = check_vectors(self.embedder.embed(texts), len(texts), dim,
                                    f"embedder {self.target.model_id!r}")
            matrix[idx] = vectors
            self.embedded += len(idx)
        flat = pa.array(matrix.reshape(-1), pa.float32())
        column = pa.FixedSizeListArray.from_arrays(flat, dim, mask=None if has.all() else pa.array(~has))
        arrays = [column if f.name == VECTOR else rows.column(f.name).combine_chunks().cast(f.type)
                  for f in self.schema]
        return pa.Table.from_arrays(arrays, schema=self.schema)


def _check_embedder(embedder: object) -> tuple[Embedder, EmbeddingInfo]:
    emb = check_embedder(embedder)
    try:
        info = EmbeddingInfo.of(emb)
    except TypeError as e:
        raise InvalidTypeError(str(e)) from None
    # Fail here, before anything is written, on a model that returns the wrong shape or NaN.
    check_vectors(emb.embed(list(_PROBE)), len(_PROBE), info.dim, f"embedder {info.model_id!r}")
    return emb, info


def _table_model(store: Store, name: str, schema: pa.Schema) -> EmbeddingInfo | None:
    dim = vector_dim(schema)
    assert dim is not None
    labelled = vector_model(schema)
    if labelled is not None:
        return EmbeddingInfo(labelled, dim)
    recorded = store.table_embedding(name) or store.embedding
    return recorded if recorded is not None and recorded.dim == dim else None


def reembed(
    store: StoreLike,
    *,
    embedder: Embedder,
    texts: Mapping[str, TextSource] | None = None,
    skip: Iterable[str] = (),
    chunk_size: int = 256,
    progress: Callable[[ReembedProgress], None] | None = None,
) -> ReembedReport:
    """Rewrite every vector of ``store`` with ``embedder`` and make it the store's model.

    ``texts`` names, for vector tables you made yourself, the text of each row's vector: a column
    name, or a function from the rows (an Arrow table) to their texts. ``skip`` names vector
    tables to leave with their old model. A vector table with neither raises
    :class:`~mindcore.errors.InvalidInputError` before anything is written. ``chunk_size`` rows are
    embedded per model call and committed together; ``progress`` is called after each chunk.

    Readers keep the old vectors and model until the end; running it again after a crash resumes;
    running it with the model the store already uses does nothing (``report.noop``). An object
    that is not an embedder, or one returning vectors of the wrong shape, NaN or infinity, raises
    before anything is written. The ``store`` object (when given one) is bound to ``embedder``
    afterwards.

    >>> import mindcore
    >>> from mindcore.embed import HashEmbedder
    >>> store = mindcore.open("memory://reembed-doc", embedder=HashEmbedder(dim=64))
    >>> ltm = mindcore.LongTermMemory(store, user_id="u1", embedder=HashEmbedder(dim=64))
    >>> _ = ltm.remember("Prefers green tea")
    >>> report = reembed(store, embedder=HashEmbedder(dim=128))
    >>> report.tables, store.embedding.dim
    ({'ltm_memories': 1}, 128)
    >>> ltm = mindcore.LongTermMemory(store, user_id="u1", embedder=HashEmbedder(dim=128))
    >>> [m.text for m in ltm.recall("green tea", touch=False)]
    ['Prefers green tea']
    >>> reembed(store, embedder=HashEmbedder(dim=128)).noop
    True
    """
    started = time.monotonic()
    emb, target = _check_embedder(embedder)
    check_int(chunk_size, "chunk_size", minimum=1)
    if texts is not None and not isinstance(texts, Mapping):
        raise InvalidTypeError(f"texts: expected a dict of table -> column or function, got {describe(texts)}")
    skipped_names = [skip] if isinstance(skip, str) else list(skip)
    user = {str(k): _user_source(str(k), v) for k, v in (texts or {}).items()}
    columns = {str(k): v for k, v in (texts or {}).items() if isinstance(v, str)}
    resolved = resolve_store(store)
    try:
        with resolved.lock(LOCK).hold(resolved.config.lock_timeout):
            report = _run(resolved, emb, target, user, skipped_names, columns, chunk_size, progress)
    finally:
        if resolved is not store:
            resolved.close()
    return _timed(report, started)


areembed = async_twin(reembed)


def _timed(report: ReembedReport, started: float) -> ReembedReport:
    from dataclasses import replace

    return replace(report, elapsed_s=time.monotonic() - started)


def _run(
    store: Store, embedder: Embedder, target: EmbeddingInfo, user: dict[str, VectorTexts], skip: list[str],
    columns: dict[str, str], chunk_size: int, progress: Callable[[ReembedProgress], None] | None,
) -> ReembedReport:
    plan = load_plan(store)
    resumed = plan is not None and (plan["model_id"], plan["dim"]) == (target.model_id, target.dim)
    sources = _capability_sources() | user
    if plan is not None and plan["phase"] == "switch":
        if not resumed:
            raise InvalidInputError(
                f"store {store.uri} is half-way through a re-embedding to {plan['model_id']!r} (dim {plan['dim']}): "
                "some tables already hold its vectors; run reembed with that model to finish, then re-embed again"
            )
        missing = [n for n in plan["tables"] if n not in plan["switched"] and n not in sources]
        if missing:
            raise InvalidInputError(f"the re-embedding under way still has to switch tables {missing}: "
                                    "pass texts= for them as the interrupted run did")
    else:
        # Nothing was switched yet: plan again from these arguments (shadows already filled for the
        # same model are kept and continued; the others are dropped).
        fresh = _plan(store, target, user, skip, columns)
        keep = set() if fresh is None else set(fresh["tables"])
        for name in [] if plan is None else plan["tables"]:
            if name not in keep or not resumed:
                Shadow(store, name, target).drop()
        if fresh is None:
            if plan is not None:
                clear_plan(store)
            store.bind_embedder(embedder)
            return ReembedReport(target.model_id, target.dim, store.embedding, noop=True)
        if plan is not None and not resumed:
            log.warning("discarding the unfinished re-embedding to %r: %r was asked for",
                        plan["model_id"], target.model_id)
        plan = fresh
        save_plan(store, plan)
    previous = None if plan["previous"] is None else EmbeddingInfo(**plan["previous"])
    tables: dict[str, int] = {}
    caught_up: dict[str, int] = {}

    def report_to(phase: Literal["copy", "tools", "switch"], table: str) -> Callable[[int, int], None] | None:
        if progress is None:
            return None
        cb = progress
        return lambda done, total: cb(ReembedProgress(phase, table, done, total))

    # 1. copy every table into its shadow (readers untouched)
    fillers: dict[str, _Filler] = {}
    shadows: dict[str, Shadow] = {}
    for name in plan["tables"]:
        shadow = shadows[name] = Shadow(store, name, target)
        if name in plan["switched"]:
            continue
        if shadow.swapped():  # the switch committed but the run stopped before recording it
            continue
        shadow.open()
        filler = fillers[name] = _Filler(sources[name], embedder, target, shadow.schema)
        if plan["phase"] == "copy":
            shadow.sync(filler, chunk_size, _copy_progress(progress, name, shadow.rows()))
        tables[name] = filler.embedded
    if plan["phase"] == "copy":
        from mindcore.context import embed_tool_texts

        plan["tool_texts"] = embed_tool_texts(store, embedder, chunk_size=chunk_size,
                                              on_chunk=report_to("tools", "context_tools"))
        plan["phase"] = "switch"
        save_plan(store, plan)

    # 2. switch table by table: catch up under the table's lock, overwrite, record
    todo = [n for n in plan["tables"] if n not in plan["switched"]]
    for i, name in enumerate(todo):
        shadow = shadows[name]
        if name not in fillers:
            shadow.open()
            fillers[name] = _Filler(sources[name], embedder, target, shadow.schema)
        filler = fillers[name]
        before = filler.embedded
        shadow.swap(filler, chunk_size)
        caught_up[name] = filler.embedded - before
        tables[name] = filler.embedded
        _retire_handles(store, name, target)
        store._record("table-embedding", name, target)
        plan["switched"].append(name)
        save_plan(store, plan)
        if progress is not None:
            progress(ReembedProgress("switch", name, i + 1, len(todo)))
    for name in plan["skipped"]:
        # Record the skipped table's own model, so the new one never binds to it silently.
        schema = store.open_table(name).schema
        info = _table_model(store, name, schema) or EmbeddingInfo("(unknown model, skipped by reembed)",
                                                                  vector_dim(schema) or 1)
        if store.table_embedding(name) != info:
            store._record("table-embedding", name, info)
    store._record("store", "embedding", target)
    store._embedder = embedder
    for name in plan["tables"]:
        shadows[name].drop()
    clear_plan(store)
    return ReembedReport(
        target.model_id, target.dim, previous, resumed=resumed, tables=tables,
        caught_up={k: v for k, v in caught_up.items() if v},
        skipped={n: "no known text (named in skip)" for n in plan["skipped"]},
        tool_texts=int(plan.get("tool_texts", 0)),
    )


def _copy_progress(
    progress: Callable[[ReembedProgress], None] | None, table: str, total: int,
) -> Callable[[int, int], None] | None:
    if progress is None:
        return None
    report = progress

    def on_chunk(examined: int, _written: int) -> None:
        report(ReembedProgress("copy", table, min(examined, total), total))

    return on_chunk


def _plan(
    store: Store, target: EmbeddingInfo, user: dict[str, VectorTexts], skip: list[str], columns: dict[str, str],
) -> dict[str, Any] | None:
    """What to re-embed (``None``: nothing, the store already uses ``target``); refuses, before
    anything is written, vector tables with no known text."""
    names = store.table_names()
    vector_tables: dict[str, EmbeddingInfo | None] = {}
    for name in names:
        schema = store.open_table(name).schema
        if vector_dim(schema) is not None:
            vector_tables[name] = _table_model(store, name, schema)
    for name in [*user, *skip]:
        if name not in vector_tables:
            what = "texts" if name in user else "skip"
            raise InvalidInputError(f"{what}: store {store.uri} has no vector table {name!r} "
                                    f"(vector tables: {sorted(vector_tables)})")
    for name, column in columns.items():
        if column not in store.open_table(name).schema.names:
            raise InvalidInputError(f"texts[{name!r}]: table {name!r} has no column {column!r}")
    both = sorted(set(user) & set(skip))
    if both:
        raise InvalidInputError(f"tables {both} are both in texts and in skip; pick one")
    sources = _capability_sources() | user
    todo = [n for n, info in vector_tables.items() if info != target and n not in skip]
    unknown = [n for n in todo if n not in sources]
    if unknown:
        raise InvalidInputError(
            f"vector tables {unknown} hold vectors of unknown text: pass texts={{table: column or function}} to "
            "re-embed them, or skip=[...] to leave them with their old model; nothing was written"
        )
    previous = store.embedding
    if not todo and previous == target:
        return None
    return {
        "model_id": target.model_id, "dim": target.dim, "phase": "copy",
        "previous": None if previous is None else {"model_id": previous.model_id, "dim": previous.dim},
        "tables": todo, "switched": [], "skipped": [n for n in skip if vector_tables[n] != target],
        "shadow_prefix": SHADOW_PREFIX,
    }


def _retire_handles(store: Store, name: str, target: EmbeddingInfo) -> None:
    """Handles of this process on the switched table: the next ``store.table`` opens a fresh one,
    and one bound to another model refuses every further use (its queries would use that model)."""
    with store._lock:
        table = store._tables.pop(name, None)
        store._cache.drop_table(name)
    if table is not None and table._bound is not None and table._bound != (target.model_id, target.dim):
        table._retire(target.model_id, target.dim)
