"""Recall's time lever: a query that names a time ("in 2022", "on October 13, 2023", "in June",
"last year") favours the memories whose ``created_at`` falls then
(``RecallOptions(time_boost=...)``). Real LanceDB stores on disk, the hashing embedder; batch
recall gives the same hits."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import mindcore
from mindcore.batch import recall as batch_recall
from mindcore.embed import HashEmbedder
from mindcore.errors import InvalidInputError, MindcoreError
from mindcore.ltm import LongTermMemory, LongTermMemoryConfig, RecallOptions, RecallWeights
from mindcore.ltm._when import TimeWindow, dated, time_window, with_time_boost

EMB = HashEmbedder()
NOW = int(datetime(2026, 11, 30, 12, tzinfo=UTC).timestamp() * 1000)
BOOST = RecallOptions(time_boost=1.0)


def ms(year: int, month: int, day: int) -> int:
    return int(datetime(year, month, day, 12, tzinfo=UTC).timestamp() * 1000)


def days(window: TimeWindow | None) -> list[tuple[str, str]]:
    assert window is not None
    return [(datetime.fromtimestamp(a / 1000, UTC).date().isoformat(),
             datetime.fromtimestamp(b / 1000, UTC).date().isoformat()) for a, b in window.ranges]


@pytest.mark.parametrize(("query", "expected"), [
    ("What did Maria donate in December 2023?", [("2023-12-01", "2024-01-01")]),
    ("What painting did she show on October 13, 2023?", [("2023-10-12", "2023-10-15")]),
    ("What did Gina find on 1 February, 2023?", [("2023-01-31", "2023-02-03")]),
    ("What happened on 2023-05-23?", [("2023-05-22", "2023-05-25")]),
    ("Where did we go in 2022?", [("2022-01-01", "2023-01-01")]),
    ("What did I read last year?", [("2025-01-01", "2026-01-01")]),
    ("What did I buy last month?", [("2026-10-01", "2026-11-01")]),
    ("Who called yesterday?", [("2026-11-29", "2026-11-30")]),
    ("What did we do last weekend?", [("2026-11-27", "2026-11-30")]),
])
def test_time_expressions_name_their_dates(query: str, expected: list[tuple[str, str]]) -> None:
    window = time_window(query, NOW)
    assert days(window) == expected
    assert window is not None and not window.months


def test_a_month_alone_matches_that_month_in_any_year() -> None:
    window = time_window("When did Melanie go camping in June?", NOW)
    assert window is not None and window.ranges == () and window.months == {6}
    created = np.array([ms(2023, 6, 3), ms(2019, 6, 30), ms(2023, 7, 1), ms(2023, 5, 31)])
    assert dated(window, created).tolist() == [True, True, False, False]


@pytest.mark.parametrize("query", ["May I ask where you went?", "What did Jan say?", "Tell me about March",
                                   "What happened on February 30, 2023?", "Where do bees sleep?"])
def test_no_time_is_read_where_there_is_none(query: str) -> None:
    window = time_window(query, NOW)
    assert window is None or (query == "Tell me about March" and window.months == {3})


def make(path: Path, **kwargs: object) -> LongTermMemory:
    return LongTermMemory(mindcore.open(str(path)), user_id="u1", embedder=EMB, max_items=0,
                          clock=lambda: NOW, **kwargs)  # type: ignore[arg-type]


# The 2022 trip shares fewer of the query's words than the 2024 one: without the time lever it
# ranks below it.
TRIPS = [("We went camping by the lake with the kids and the dog", ms(2024, 7, 14)),
         ("Camping in the mountains", ms(2022, 8, 2)),
         ("Bought a new tent for camping by the lake", ms(2025, 3, 1))]
QUERY = "camping by the lake with the kids in 2022"


def store_trips(ltm: LongTermMemory, fillers: int = 0) -> None:
    items = [{"text": t, "created_at": at} for t, at in TRIPS]
    items += [{"text": f"camping by the lake with the kids, trip number {n}", "created_at": ms(2024, 1, 1)}
              for n in range(fillers)]
    assert all(r.status == "stored" for r in ltm.remember_many(items, dedupe=False))


def test_a_named_year_lifts_the_memory_dated_then(tmp_path: Path) -> None:
    ltm = make(tmp_path)
    store_trips(ltm)
    plain = ltm.recall(QUERY, k=3, touch=False, options=RecallOptions(time_boost=0))
    assert [m.text for m in plain] == [TRIPS[0][0], TRIPS[2][0], TRIPS[1][0]]
    boosted = ltm.recall(QUERY, k=3, touch=False, options=BOOST)
    assert [m.text for m in boosted] == [TRIPS[0][0], TRIPS[1][0], TRIPS[2][0]]
    assert boosted[1].score == pytest.approx(2 * float(plain[2].score or 0), rel=1e-5)
    # The others keep their scores; a query naming no time ranks exactly as without the lever.
    assert [(m.id, m.score) for m in boosted if m.text != TRIPS[1][0]] == [(m.id, m.score) for m in plain[:2]]
    assert ltm.recall(QUERY, k=1, touch=False, options=RecallOptions(time_boost=4.0))[0].text == TRIPS[1][0]
    untimed = "camping by the lake with the kids"
    assert ([(m.id, m.score) for m in ltm.recall(untimed, k=3, touch=False, options=BOOST)]
            == [(m.id, m.score) for m in ltm.recall(untimed, k=3, touch=False, options=RecallOptions(time_boost=0))])


def test_a_dated_memory_far_below_the_cut_is_fetched(tmp_path: Path) -> None:
    # 60 undated-for-the-query memories outrank the 2022 one; a large boost still brings it to the top.
    ltm = make(tmp_path)
    store_trips(ltm, fillers=60)
    plain = ltm.recall(QUERY, k=50, touch=False, options=RecallOptions(neighbours=0, time_boost=0))
    assert TRIPS[1][0] not in [m.text for m in plain]
    boosted = ltm.recall(QUERY, k=3, touch=False, options=RecallOptions(time_boost=4.0))
    assert boosted[0].text == TRIPS[1][0]


def test_the_config_sets_the_default_and_a_call_overrides_it(tmp_path: Path) -> None:
    assert RecallOptions().time_boost == 1.0  # on by default: it pays on LoCoMo (benches/NOTES.md)
    off = RecallOptions(time_boost=0)
    ltm = make(tmp_path, config=LongTermMemoryConfig(recall=off))
    store_trips(ltm)
    assert ltm.recall(QUERY, k=2, touch=False)[1].text == TRIPS[2][0]
    assert ltm.recall(QUERY, k=2, touch=False, options=BOOST)[1].text == TRIPS[1][0]
    assert make(tmp_path).recall(QUERY, k=2, touch=False)[1].text == TRIPS[1][0]


@pytest.mark.parametrize("value", [-0.1, 4.5, float("nan"), True, "1"])
def test_bad_time_boosts_are_refused(value: object) -> None:
    with pytest.raises(MindcoreError):
        RecallOptions(time_boost=value)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        RecallOptions(time_boost=-1)


def test_the_top_merges_the_kernels_top_with_its_top_over_the_dated_rows() -> None:
    top = (np.array([4, 7, 9]), np.array([0.9, 0.5, 0.4]), np.array([0.9, 0.5, 0.4], np.float32))
    # The dated rows' own top: row 9 again, and 12, which the kernel's top over every row missed.
    top_dated = (np.array([9, 12, 15]), np.array([0.4, 0.35, -0.1]), np.array([0.4, 0.35, -0.1], np.float32))
    rows, scores, _, complete = with_time_boost(top, np.array([False, False, True]), top_dated, need=3,
                                                complete=False, boost=1.0)
    assert rows.tolist() == [4, 9, 12] and scores.tolist() == pytest.approx([0.9, 0.8, 0.7]) and not complete
    rows, scores, _, complete = with_time_boost(top, np.array([False, False, True]), top_dated, need=6,
                                                complete=True, boost=1.0)
    # A negative score rises too (-0.1 -> 0); every row is there.
    assert rows.tolist() == [4, 9, 12, 7, 15] and scores[-1] == pytest.approx(0.0) and complete


def test_batch_recall_gives_the_same_hits_with_the_time_lever(tmp_path: Path) -> None:
    store = mindcore.open(str(tmp_path))
    for user, fillers in (("ann", 0), ("bob", 40)):
        ltm = LongTermMemory(store, user_id=user, embedder=EMB, max_items=0, clock=lambda: NOW)
        store_trips(ltm, fillers=fillers)
        # The best lexical match of the last query, dated outside its window: the lexical scale
        # (its BM25) is the same whether or not the window's rows are ranked apart.
        ltm.remember("Sold the old kayak paddle, kept the kayak", created_at=ms(2024, 5, 1))
        ltm.close()
    queries = pa.table({"user_id": ["ann", "bob", "bob", "ann", "bob"],
                        "query": [QUERY, QUERY, "camping in July 2024", "camping by the lake",
                                  "kayak paddle on the camping trip in 2022"]})
    for options, weights in [(BOOST, None), (RecallOptions(time_boost=4.0), None),
                             (RecallOptions(time_boost=4.0, neighbours=0), RecallWeights(lexical=0.0))]:
        hits = batch_recall(store, queries, k=3, embedder=EMB, now_ms=NOW, options=options, weights=weights)
        got: list[list[tuple[str, float]]] = [[] for _ in range(queries.num_rows)]
        for row in hits.to_pylist():
            got[row["query_index"]].append((row["memory_id"], round(row["score"], 5)))
        expected = []
        for user, query in zip(queries.column("user_id").to_pylist(), queries.column("query").to_pylist(),
                               strict=True):
            ltm = LongTermMemory(store, user_id=user, embedder=EMB, max_items=0, clock=lambda: NOW, weights=weights)
            expected.append([(m.id, round(float(m.score or 0), 5))
                             for m in ltm.recall(query, 3, touch=False, options=options)])
        assert got == expected
        assert got[1][0][0] == expected[1][0][0]
