"""The one reader of batch inputs (recall's queries, remember's rows): every form of input gives
the same table, whole or in chunks; files are read as they are (late JSON columns kept, ids in
CSV kept as strings); problems are InvalidInputError naming the input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

from mindcore.batch._input import open_input, open_queries
from mindcore.errors import InvalidInputError, InvalidTypeError

TABLE = pa.table({"user_id": ["1001", "ann", "bob", "cy", "dan"], "text": ["a", "b", None, "d", "e"],
                  "importance": [0.1, 0.2, 0.3, None, 0.5]})
FORMS = ["table", "batch", "reader", "pandas", "polars", "polars-lazy", "parquet", "folder", "csv", "jsonl"]


def given(form: str, tmp_path: Path) -> Any:
    if form == "table":
        return TABLE
    if form == "batch":
        return TABLE.combine_chunks().to_batches()[0]
    if form == "reader":
        return pa.RecordBatchReader.from_batches(TABLE.schema, TABLE.to_batches(max_chunksize=2))
    if form == "pandas":
        return pytest.importorskip("pandas").DataFrame(TABLE.to_pydict())
    if form.startswith("polars"):
        frame = pytest.importorskip("polars").from_arrow(TABLE)
        return frame.lazy() if form == "polars-lazy" else frame
    if form == "parquet":
        pq.write_table(TABLE, tmp_path / "rows.parquet")
        return tmp_path / "rows.parquet"
    if form == "folder":
        (tmp_path / "parts").mkdir(exist_ok=True)
        for i in range(0, 5, 2):
            pq.write_table(TABLE.slice(i, 2), tmp_path / "parts" / f"part-{i}.parquet")
        return str(tmp_path / "parts")
    if form == "csv":
        pacsv.write_csv(TABLE, tmp_path / "rows.csv")
        return tmp_path / "rows.csv"
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in TABLE.to_pylist()))
    return tmp_path / "rows.jsonl"


@pytest.mark.parametrize("form", FORMS)
def test_every_form_gives_the_same_rows_whole_or_in_chunks(form: str, tmp_path: Path) -> None:
    opened = open_input(given(form, tmp_path), what="rows", strings=("user_id", "text"))
    assert opened.read_all().to_pylist() == TABLE.to_pylist()
    again = open_input(given(form, tmp_path), what="rows", strings=("user_id", "text"))
    chunks = list(again.batches(2, ["text", "user_id"]))
    assert [c.num_rows for c in chunks] == [2, 2, 1]
    assert pa.concat_tables(chunks).to_pylist() == TABLE.select(["text", "user_id"]).to_pylist()


def test_a_json_column_first_seen_late_is_kept(tmp_path: Path) -> None:
    # Past the first block of the file (1 MiB): a scan of the file would drop the column unseen.
    path = tmp_path / "queries.jsonl"
    with path.open("w", encoding="utf-8") as f:
        for i in range(40_000):
            f.write(json.dumps({"user_id": f"user-{i}", "query": f"what does user {i} like to drink"}) + "\n")
        f.write(json.dumps({"user_id": "ann", "query": "tea", "workspace_id": "w1"}) + "\n")
    source = open_queries(path)
    assert source.has_workspaces
    assert source.batches(50_000, ["workspace_id"]).__next__().column(0).to_pylist()[-2:] == [None, "w1"]


def test_a_bad_line_of_a_streamed_file_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "queries.csv"
    path.write_text("user_id,query,n\n" + "".join(f"u{i},q,{i}\n" for i in range(200_000)) + "u,q,not-a-number\n")
    source = open_queries(path)
    with pytest.raises(InvalidInputError, match=r"queries: cannot read '.*queries\.csv'"):
        list(source.batches(1_000, ["user_id", "query", "n"]))


def test_bad_inputs_name_the_input(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="rows: no file or folder at"):
        open_input(tmp_path / "missing.csv", what="rows")
    (tmp_path / "rows.txt").write_text("user_id,text\n")
    with pytest.raises(InvalidInputError, match="rows: cannot tell the format"):
        open_input(tmp_path / "rows.txt", what="rows")
    (tmp_path / "broken.parquet").write_bytes(b"not parquet")
    with pytest.raises(InvalidInputError, match="rows: cannot read"):
        open_input(tmp_path / "broken.parquet", what="rows").read_all()
    with pytest.raises(InvalidTypeError, match="rows: expected a pyarrow Table"):
        open_input([{"user_id": "a"}], what="rows")
    reader = open_input(pa.RecordBatchReader.from_batches(TABLE.schema, TABLE.to_batches()), what="rows")
    assert not reader.rereadable
    reader.read_all()
    with pytest.raises(InvalidInputError, match="rows: the reader was already read"):
        reader.read_all()
