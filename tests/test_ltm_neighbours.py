"""Recall's neighbour expansion: a memory stored with a ``thread`` (and a ``position`` there) brings
the memories next to it in that thread when it is recalled (``RecallOptions(neighbours=...)``),
scored with a decay, and ``render`` shows a thread's memories in their order. Real LanceDB stores
on disk, the hashing embedder; batch recall gives the same hits."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pyarrow as pa
import pytest

import mindcore
from mindcore.batch import recall as batch_recall
from mindcore.embed import HashEmbedder
from mindcore.errors import InvalidInputError, InvalidTypeError, MindcoreError, SecretRefusedError
from mindcore.llm import ScriptedLLM
from mindcore.ltm import LongTermMemory, LongTermMemoryConfig, RecallOptions, RecallWeights
from mindcore.ltm._lexical import lexical_terms
from mindcore.ltm._repo import COLUMNS, TABLE, scope_key
from mindcore.policy import SecretPolicy

EMB = HashEmbedder()
NOW = 1_800_000_000_000
ALONE = RecallOptions(neighbours=0)
# The question names the trip; the answer ("Lisbon, in May") shares no word with the query.
CHAT = ["Where did you go on your summer holiday?", "Lisbon, in May, with my sister.",
        "I keep bees on the roof.", "My favourite tea is sencha."]
QUERY = "summer holiday"


def make(path: Path, **kwargs: object) -> LongTermMemory:
    return LongTermMemory(mindcore.open(str(path)), user_id="u1", embedder=EMB, max_items=0,
                          clock=lambda: NOW, **kwargs)  # type: ignore[arg-type]


# Memories outside the thread that share the query's words: they outrank the answer on their own.
OTHERS = ["Holiday cards go out in December.", "Summer evenings are long here."]


def store_chat(ltm: LongTermMemory, thread: str = "trip", texts: list[str] = CHAT) -> None:
    results = ltm.remember_many([{"text": t, "thread": thread, "position": i, "created_at": NOW}
                                 for i, t in enumerate(texts)] + [{"text": t, "created_at": NOW} for t in OTHERS],
                                dedupe=False)
    assert all(r.status == "stored" for r in results)


def texts(memories: list[mindcore.Memory]) -> list[str]:
    return [m.text for m in memories]


def test_a_hit_brings_the_turn_after_it_in_its_thread(tmp_path: Path) -> None:
    ltm = make(tmp_path)
    store_chat(ltm)
    alone = ltm.recall(QUERY, k=3, options=ALONE, touch=False)
    assert texts(alone)[0] == CHAT[0] and CHAT[1] not in texts(alone)
    hits = ltm.recall(QUERY, k=2, touch=False)  # the default: one neighbour each side
    assert texts(hits) == CHAT[:2]
    first, second = hits
    assert second.thread == "trip" and second.position == 1
    assert second.score == pytest.approx(0.8 * first.score)  # the default decay
    assert second.similarity is not None and second.similarity < first.similarity


def test_decay_and_radius_are_options(tmp_path: Path) -> None:
    ltm = make(tmp_path)
    store_chat(ltm)
    one = {m.text: m.score for m in ltm.recall(QUERY, k=6, options=RecallOptions(neighbours=1, neighbour_decay=0.9),
                                                 touch=False)}
    two = {m.text: m.score for m in ltm.recall(QUERY, k=6, options=RecallOptions(neighbours=2, neighbour_decay=0.9),
                                                 touch=False)}
    top = two[CHAT[0]]
    assert one[CHAT[1]] == pytest.approx(0.9 * top) and two[CHAT[1]] == pytest.approx(0.9 * top)
    assert two[CHAT[2]] == pytest.approx(0.81 * top)  # two places after the hit
    assert one.get(CHAT[2], 0.0) < 0.81 * top  # out of reach with one


def test_neighbours_stay_in_their_thread_and_follow_positions_not_write_order(tmp_path: Path) -> None:
    ltm = make(tmp_path)
    # Written in reverse: the thread's order is the positions'.
    ltm.remember_many([{"text": t, "thread": "trip", "position": i} for i, t in reversed(list(enumerate(CHAT)))],
                      dedupe=False)
    ltm.remember_many([{"text": "Lisbon trams are yellow.", "thread": "other", "position": 0}], dedupe=False)
    hits = {m.text: m for m in ltm.recall(QUERY, k=5, touch=False)}
    alone = {m.text: m for m in ltm.recall(QUERY, k=5, options=ALONE, touch=False)}
    assert hits[CHAT[1]].score == pytest.approx(0.8 * hits[CHAT[0]].score)  # position 1, though written third
    other = "Lisbon trams are yellow."
    assert (other in hits) == (other in alone)
    if other in hits:
        assert hits[other].score == alone[other].score  # another thread lends it nothing


def test_memories_without_a_thread_rank_as_before(tmp_path: Path) -> None:
    ltm = make(tmp_path)
    ltm.remember_many(CHAT, dedupe=False)
    for query in (QUERY, "bees", "tea", "Lisbon"):
        assert ([(m.id, m.score) for m in ltm.recall(query, k=4, touch=False)]
                == [(m.id, m.score) for m in ltm.recall(query, k=4, options=ALONE, touch=False)])


def test_config_sets_the_default_and_a_call_overrides_it(tmp_path: Path) -> None:
    ltm = make(tmp_path, config=LongTermMemoryConfig(recall=ALONE))
    store_chat(ltm)
    assert CHAT[1] not in texts(ltm.recall(QUERY, k=3, touch=False))
    assert texts(ltm.recall(QUERY, k=2, touch=False, options=RecallOptions(neighbours=1))) == CHAT[:2]


def test_render_shows_a_threads_memories_in_order(tmp_path: Path) -> None:
    ltm = make(tmp_path)
    store_chat(ltm)
    hits = ltm.recall(QUERY, k=3, touch=False)
    block = ltm.render(list(reversed(hits)))
    lines = [line for line in block.splitlines() if line.startswith("- [")]
    shown = [line.split("] ", 1)[1] for line in lines]
    in_thread = [t for t in shown if t in CHAT]
    assert in_thread == [t for t in CHAT if t in in_thread] and len(in_thread) >= 2  # thread order


def test_thread_and_position_are_kept_read_back_and_restored(tmp_path: Path) -> None:
    ltm = make(tmp_path)
    old = ltm.remember("Is allergic to peanuts", thread="checkup", position=3)
    assert old is not None and (old.thread, old.position) == ("checkup", 3)
    again = make(tmp_path)
    [read] = [m for m in again.memories() if m.id == old.id]
    assert (read.thread, read.position) == ("checkup", 3)
    new = again.try_remember("Is not allergic to peanuts")
    assert new.action == "superseded"
    restored = again.restore(old.id)
    assert (restored.thread, restored.position) == ("checkup", 3)
    assert ("checkup", 3) in {(m.thread, m.position) for m in make(tmp_path).memories()}


def test_a_thread_that_looks_like_a_secret_is_refused_whatever_the_action(tmp_path: Path) -> None:
    key = "sk-proj-" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6"
    for action in ("refuse", "redact"):
        ltm = make(tmp_path / action, config=LongTermMemoryConfig(secrets=SecretPolicy(action=action)))
        assert ltm.remember("Likes green tea", thread=key) is None
        result = ltm.remember_many([{"text": "Likes green tea", "thread": key},
                                    {"text": "Rides a red bike", "thread": "ok"}])
        assert [r.status for r in result] == ["secret", "stored"]
        assert [m.text for m in ltm.memories()] == ["Rides a red bike"]


@pytest.mark.parametrize(("item", "message"), [
    ({"text": "x", "position": 1}, "give thread= too"),
    ({"text": "x", "thread": "t", "position": -1}, "position: expected a non-negative int"),
    ({"text": "x", "thread": "t", "position": True}, "position: expected a non-negative int"),
    ({"text": "x", "thread": " "}, "thread: expected a non-blank string"),
    ({"text": "x", "thread": 7}, "thread: expected a non-blank string"),
    ({"text": "x", "thread": "t" * 257}, "at most 256 characters"),
])
def test_bad_threads_and_positions_are_refused_and_nothing_is_stored(tmp_path: Path, item: dict[str, object],
                                                                     message: str) -> None:
    ltm = make(tmp_path)
    with pytest.raises(ValueError, match=message):
        ltm.remember_many([{"text": "Rides a red bike"}, item])
    assert ltm.memories() == []


def test_bad_options_are_refused() -> None:
    with pytest.raises(InvalidInputError, match=r"neighbours: expected an int in 0\.\.8"):
        RecallOptions(neighbours=9)
    with pytest.raises(InvalidInputError, match="neighbour_decay"):
        RecallOptions(neighbour_decay=1.5)
    with pytest.raises(InvalidTypeError):
        LongTermMemoryConfig(recall={"neighbours": 1})  # type: ignore[arg-type]


def test_recall_with_options_of_the_wrong_type_raises(tmp_path: Path) -> None:
    ltm = make(tmp_path)
    with pytest.raises(MindcoreError, match="options: expected RecallOptions"):
        ltm.recall("x", options={"neighbours": 1})  # type: ignore[arg-type]


def test_batch_recall_gives_the_same_hits_with_neighbours(tmp_path: Path) -> None:
    store = mindcore.open(str(tmp_path))
    users = {"ann": CHAT, "bob": [*reversed(CHAT), "Summer is for holidays by the sea."]}
    for user, chat in users.items():
        ltm = LongTermMemory(store, user_id=user, embedder=EMB, max_items=0, clock=lambda: NOW)
        ltm.remember_many([{"text": t, "thread": f"{user}-s1", "position": 2 * i} for i, t in enumerate(chat)]
                          + [{"text": "Bees and tea on Sundays."}], dedupe=False)
        ltm.close()
    # A row another writer left without a vector, between the first two turns of ann's thread:
    # recall never ranks it, so it is nobody's neighbour either.
    table = store.table(TABLE, COLUMNS, vectors=True, embedder=EMB)
    table.upsert(scope_key("ann", "default", None), [{
        "id": "novec", "text": "Lisbon, in May.", "kind": "fact", "importance": 0.5, "recency_at": NOW,
        "last_accessed_at": NOW, "terms": lexical_terms("Lisbon, in May."), "vector": None, "created_at": NOW,
        "thread": "ann-s1", "position": 1}])
    queries = pa.table({"user_id": ["ann", "bob", "ann", "bob"], "query": [QUERY, QUERY, "bees", "sea"]})
    settings = [(None, None), (ALONE, None), (RecallOptions(neighbours=2, neighbour_decay=0.6), None),
                (None, RecallWeights(lexical=0.0))]  # without lexical fusion too
    for options, weights in settings:
        hits = batch_recall(store, queries, k=3, embedder=EMB, now_ms=NOW, options=options, weights=weights)
        got: list[list[tuple[str, float]]] = [[] for _ in range(queries.num_rows)]
        for row in hits.to_pylist():
            got[row["query_index"]].append((row["memory_id"], round(row["score"], 5)))
        expected = []
        for user, query in zip(queries.column("user_id").to_pylist(), queries.column("query").to_pylist(), strict=True):
            ltm = LongTermMemory(store, user_id=user, embedder=EMB, max_items=0, clock=lambda: NOW, weights=weights)
            expected.append([(m.id, round(float(m.score or 0), 5)) for m in ltm.recall(query, 3, touch=False,
                                                                                       options=options)])
        assert got == expected
        assert "novec" not in {row["memory_id"] for row in hits.to_pylist()}


CONVERSATION = [{"role": "user", "content": "We spent May in Lisbon; my sister came too."},
                {"role": "assistant", "content": "Lovely! Did you like it?"}]


def _facts(*texts: str) -> str:
    return json.dumps({"memories": [{"text": t} for t in texts]})


def test_remember_conversation_stores_its_facts_in_the_thread(tmp_path: Path) -> None:
    llm = ScriptedLLM([_facts("Spent May in Lisbon", "Has a sister"), _facts("Keeps bees on the roof"),
                       _facts("Likes sencha"), _facts("Plays the cello"), _facts("Has a cat")])
    ltm = make(tmp_path, extractor=llm)
    report = ltm.remember_conversation(CONVERSATION, thread="chat-1")
    assert [(m.text, m.thread) for m in report.stored] == [("Spent May in Lisbon", "chat-1"), ("Has a sister", "chat-1")]
    assert ltm.remember_conversation_in_background(CONVERSATION, thread="chat-1").result().stored[0].thread == "chat-1"
    assert asyncio.run(ltm.aremember_conversation(CONVERSATION, thread="chat-2")).stored[0].thread == "chat-2"
    backfill = ltm.remember_conversations([CONVERSATION, CONVERSATION], threads=["chat-3", None], concurrency=1)
    assert [r.stored[0].thread for r in backfill] == ["chat-3", None]
    assert {m.text: m.thread for m in ltm.memories()}["Keeps bees on the roof"] == "chat-1"
    # Recalling a fact brings the one stored beside it in its thread, not those of other threads.
    hits = ltm.recall("Lisbon in May", k=2, touch=False, options=RecallOptions(time_boost=0))
    assert texts(hits) == ["Spent May in Lisbon", "Has a sister"]
    alone = ltm.recall("Lisbon in May", k=2, touch=False, options=RecallOptions(neighbours=0, time_boost=0))
    assert texts(alone)[1] != "Has a sister"


def test_a_conversation_thread_that_looks_like_a_secret_is_refused_before_the_model_is_called(
        tmp_path: Path) -> None:
    llm = ScriptedLLM([_facts("Spent May in Lisbon")])
    ltm = make(tmp_path, extractor=llm, config=LongTermMemoryConfig(secrets=SecretPolicy(action="redact")))
    secret = "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z"
    with pytest.raises(SecretRefusedError):
        ltm.remember_conversation(CONVERSATION, thread=secret)
    with pytest.raises(SecretRefusedError):
        ltm.remember_conversation_in_background(CONVERSATION, thread=secret)
    with pytest.raises(SecretRefusedError):
        ltm.remember_conversations([CONVERSATION], threads=[secret])
    for bad in ("", 7, "x" * 300):
        with pytest.raises(ValueError, match="thread"):
            ltm.remember_conversation(CONVERSATION, thread=bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="threads"):
        ltm.remember_conversations([CONVERSATION], threads=["a", "b"])
    assert llm.calls == [] and len(ltm) == 0
