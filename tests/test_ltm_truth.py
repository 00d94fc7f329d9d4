"""Long-term memory stays true over time: a write judges each new memory against the memories near
it (duplicate, update, contradiction, unrelated), retired memories leave recall for history, and
forgetting erases history too. Real LanceDB stores on disk; the bundled embedder where the
judgement depends on real vectors, the hashing embedder where it does not."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import mindcore
from mindcore.embed import HashEmbedder
from mindcore.errors import InvalidInputError
from mindcore.llm import ScriptedLLM
from mindcore.ltm import LongTermMemory, LongTermMemoryConfig, Memory
from mindcore.store import ALL_NAMESPACES

DAY = 86_400_000
NOW = 1_750_000_000_000


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> int:
        return self.now


@pytest.fixture(scope="module")
def model(minilm: Any) -> Any:
    return minilm


def make(path: Path, embedder: Any, clock: Clock | None = None, **kw: Any) -> LongTermMemory:
    kw.setdefault("user_id", "u1")
    ltm = LongTermMemory.create(mindcore.open(path), namespace="chat", embedder=embedder, enabled=True,
                                clock=clock or Clock(), **kw)
    assert ltm is not None
    return ltm


def texts(memories: list[Memory]) -> list[str]:
    return [m.text for m in memories]


def history_texts(path: Path) -> list[str]:
    """Every text in the history table, any scope (what a scan of the store would find)."""
    store = mindcore.open(path)
    if "ltm_history" not in store.table_names():
        return []
    return [str(r["text"]) for r in store.open_table("ltm_history").scan(ALL_NAMESPACES)]


# -- the realistic cases, with the bundled embedder ------------------------------------------------------


def test_an_explicit_negation_of_the_same_statement_retires_it(tmp_path: Path, model: Any) -> None:
    ltm = make(tmp_path / "s", model)
    first = ltm.try_remember("Is allergic to peanuts")
    ltm.remember("Plays the cello")
    second = ltm.try_remember("Is not allergic to peanuts")
    assert (second.status, second.action) == ("stored", "superseded")
    assert second.replaced is not None and second.replaced.id == first.memory.id  # type: ignore[union-attr]
    assert second.reason and "negation" in second.reason
    assert sorted(texts(ltm.memories())) == ["Is not allergic to peanuts", "Plays the cello"]
    recalled = texts(ltm.recall("Is allergic to peanuts", k=5))
    assert "Is allergic to peanuts" not in recalled and "Is not allergic to peanuts" in recalled
    assert ltm.get(first.memory.id) is None  # type: ignore[union-attr]


# Pairs the word rules read as a change (a new name, place, number or date) but that a write
# without a model cannot be certain of: both are kept, linked as related, and recall finds both.
MAYBE_CHANGED = [
    ("Lives in Lyon", "Moved to Berlin"),
    ("Lives in Lyon", "Lives in Berlin"),
    ("Has 2 kids", "Has 3 kids"),
    ("Wedding is on June 12, 2025", "Wedding is on July 3, 2025"),
    ("Runs 5 km every morning", "Runs 10 km every morning"),
    ("Prefers window seats", "Prefers aisle seats"),
    ("Favourite colour is blue", "Favourite colour is green now"),
    ("Works at Google", "Left Google; now works at Meta"),
]
# Pairs that are both true: the default judgement must keep both.
BOTH_TRUE = [
    ("I have a pet cat named Tom", "I have a pet dog named Rex"),
    ("Meeting with Alice on Monday", "Meeting with Bob on Tuesday"),
    ("Owns a red Toyota Corolla", "Owns a blue Honda Civic"),
    ("Painted a sunset over the lake", "Painted a portrait of her grandmother"),
    ("Fact number 3 about the user's garden", "Fact number 7 about the user's garden"),
]


@pytest.mark.parametrize(("old", "new"), MAYBE_CHANGED + BOTH_TRUE)
def test_without_a_model_an_uncertain_pair_keeps_both(tmp_path: Path, model: Any, old: str, new: str) -> None:
    clock = Clock()
    ltm = make(tmp_path / "s", model, clock)
    first = ltm.try_remember(old).memory
    ltm.remember("Plays the cello")
    clock.now += DAY
    second = ltm.try_remember(new)
    assert (second.status, second.action, second.replaced) == ("stored", "created", None)
    assert sorted(texts(ltm.memories())) == sorted(["Plays the cello", old, new]) and len(ltm) == 3
    recalled = texts(ltm.recall(old + " " + new, k=5))
    assert old in recalled and new in recalled
    assert first is not None and ltm.get(first.id) is not None
    assert not [v for v in ltm.history(first.id) if v.action in ("updated", "superseded")]


def test_a_pair_that_may_be_an_update_is_linked_as_related(tmp_path: Path, model: Any) -> None:
    clock = Clock()
    ltm = make(tmp_path / "s", model, clock)
    lyon = ltm.try_remember("Lives in Lyon").memory
    clock.now += DAY
    berlin = ltm.try_remember("Moved to Berlin").memory
    assert lyon is not None and berlin is not None
    related = [v for v in ltm.history(lyon.id) if v.action == "related"]
    assert [(v.memory_id, v.successor_id, v.at) for v in related] == [(lyon.id, berlin.id, NOW + DAY)]
    assert related[0].reason and "update" in related[0].reason
    assert berlin.related == (lyon.id,) and ltm.get(berlin.id).related == (lyon.id,)  # type: ignore[union-attr]
    # Both recalled: ranked by score, shown to the model newer first.
    hits = ltm.recall("Lives in Lyon", k=2, touch=False)
    assert texts(hits) == ["Lives in Lyon", "Moved to Berlin"]
    block = ltm.render(hits)
    assert block.index("Moved to Berlin") < block.index("Lives in Lyon")
    # The prompt shows when each was said, so the model can tell which is newer.
    block = ltm.render(ltm.recall("where does the user live?", k=2), dates=True)
    assert "- [fact] Lives in Lyon (2025-06-15)" in block and "- [fact] Moved to Berlin (2025-06-16)" in block


@pytest.mark.parametrize(("old", "new", "action"), [
    ("Lives in Lyon", "Moved to Berlin", "updated"),
    ("Prefers window seats", "Prefers aisle seats", "updated"),
    ("Works at Google", "Left Google; now works at Meta", "updated"),
    ("Has 2 kids", "Has 3 kids", "superseded"),
])
def test_with_a_resolver_the_newest_fact_wins(tmp_path: Path, model: Any, old: str, new: str, action: str) -> None:
    relation = "update" if action == "updated" else "contradiction"
    llm = ScriptedLLM([f'{{"verdicts": [{{"pair": 1, "relation": "{relation}", "reason": "judged"}}]}}'] * 2)
    ltm = make(tmp_path / "s", model, resolver=llm)
    first = ltm.try_remember(old)
    second = ltm.try_remember(new)
    assert (second.status, second.action) == ("stored", action)
    assert second.replaced is not None and second.replaced.id == first.memory.id  # type: ignore[union-attr]
    assert texts(ltm.memories()) == [new]
    assert old not in texts(ltm.recall(old, k=5))


def test_newer_first_orders_only_what_is_related() -> None:
    from mindcore.ltm._order import newer_first

    assert newer_first(["a", "b", "c", "d"], [(), (), ("a",), ("b", "c")]) == [3, 1, 2, 0]
    assert newer_first(["a", "b"], [(), ("zz",)]) == [0, 1]  # a link to a memory not recalled
    assert newer_first(["a", "b"], [("b",), ()]) == [0, 1]  # already before it
    assert newer_first([], []) == []


def test_thirty_numbered_facts_stay_thirty(tmp_path: Path, model: Any) -> None:
    facts = [f"Fact number {i} about the user's garden" for i in range(30)]
    ltm = make(tmp_path / "s", model)
    results = [ltm.try_remember(f) for f in facts]
    assert [r.action for r in results] == ["created"] * 30 and len(ltm) == 30
    assert sorted(texts(ltm.memories())) == sorted(facts)


def test_two_writers_in_two_threads_store_each_fact_once(tmp_path: Path) -> None:
    import threading

    facts = [f"Fact number {i} about the user's garden" for i in range(30)]
    writers = [make(tmp_path / "s", HashEmbedder()) for _ in range(2)]
    start = threading.Barrier(2)
    errors: list[BaseException] = []

    def write(ltm: LongTermMemory) -> None:
        try:
            start.wait()
            for fact in facts:
                ltm.remember(fact)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(w,)) for w in writers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert sorted(texts(make(tmp_path / "s", HashEmbedder()).memories())) == sorted(facts)


def test_unrelated_look_alikes_and_duplicates(tmp_path: Path, model: Any) -> None:
    clock = Clock()
    ltm = make(tmp_path / "s", model, clock)
    first = ltm.try_remember("Is allergic to peanuts").memory
    assert ltm.try_remember("Is allergic to cats").action == "created"
    clock.now += DAY
    again = ltm.try_remember("Is allergic to peanuts")
    assert (again.status, again.action) == ("duplicate", "duplicate")
    assert again.memory is not None and first is not None and again.memory.id == first.id
    assert again.memory.last_accessed_at == clock.now  # the old memory's last access is bumped
    assert ltm.get(first.id).last_accessed_at == clock.now  # type: ignore[union-attr]
    assert [(v.action, v.text) for v in ltm.history(first.id)] == [
        ("created", "Is allergic to peanuts"), ("duplicate", "Is allergic to peanuts")]
    assert len(ltm) == 2


def test_different_facts_with_the_same_context_are_both_kept(tmp_path: Path, model: Any) -> None:
    """The LoCoMo case: two turns answering the same long question embed alike with their context
    (cosine above the duplicate threshold), but they are different facts: both are kept, and
    recall still embeds each with its context."""
    question = ("Melanie: Hey Caroline, so good to hear from you! It has been ages. What have you been up to "
                "since we last talked? How are the kids doing at their new school, and how is the new job at "
                "the counseling center going? I've been thinking about our last chat a lot, about the support "
                "group and the painting class, and I really want to hear everything, the good parts and the "
                "hard parts too, so tell me all about your weekend and the last few weeks!")
    ltm = make(tmp_path / "s", model)
    facts = ["I adopted a puppy.", "I ran a marathon."]
    vectors = model.embed([f"{question}\n{t}" for t in facts])
    assert float(vectors[0] @ vectors[1]) >= ltm.config.duplicate_threshold  # what used to merge them
    results = [ltm.try_remember(t, context=question) for t in facts]
    assert [r.action for r in results] == ["created", "created"]
    assert sorted(texts(ltm.memories())) == sorted(facts)
    # Within one write too.
    other = make(tmp_path / "t", model)
    assert [r.action for r in other.remember_many([{"text": t, "context": question} for t in facts])] == [
        "created", "created"]


def test_a_chain_of_versions_in_history(tmp_path: Path, model: Any) -> None:
    clock = Clock()
    llm = ScriptedLLM(['{"verdicts": [{"pair": 1, "relation": "update", "reason": "moved"}]}',
                       '{"verdicts": [{"pair": 1, "relation": "contradiction", "reason": "another city"}]}'])
    ltm = make(tmp_path / "s", model, clock, resolver=llm)
    lyon = ltm.try_remember("Lives in Lyon").memory
    clock.now += DAY
    berlin = ltm.try_remember("Moved to Berlin")
    clock.now += DAY
    munich = ltm.try_remember("Moved to Munich")
    assert (berlin.action, munich.action) == ("updated", "superseded")  # "moved" in both: a conflict
    assert munich.replaced is not None and berlin.memory is not None and munich.replaced.id == berlin.memory.id
    assert texts(ltm.memories()) == ["Moved to Munich"]
    assert lyon is not None and munich.memory is not None
    chain = ltm.history(lyon.id)
    assert chain == ltm.history(munich.memory.id) == ltm.history(berlin.memory.id)  # both ways
    assert [(v.text, v.action, v.at) for v in chain] == [
        ("Lives in Lyon", "created", NOW),
        ("Lives in Lyon", "updated", NOW + DAY),
        ("Moved to Berlin", "created", NOW + DAY),
        ("Moved to Berlin", "superseded", NOW + 2 * DAY),
        ("Moved to Munich", "created", NOW + 2 * DAY),
    ]
    assert chain[1].successor_id == berlin.memory.id and chain[2].predecessor_id == lyon.id
    assert chain[1].reason == berlin.reason
    assert ltm.history("no-such-id") == []


def test_ahistory_is_history(tmp_path: Path) -> None:
    ltm = make(tmp_path / "s", HashEmbedder())
    first = ltm.try_remember("Is allergic to peanuts").memory
    assert first is not None
    assert ltm.try_remember("Is not allergic to peanuts").action == "superseded"
    want = ltm.history(first.id)
    assert len(want) == 3 and asyncio.run(ltm.ahistory(first.id)) == want
    assert asyncio.run(ltm.ahistory("no-such-id")) == []
    with pytest.raises(InvalidInputError):
        asyncio.run(ltm.ahistory(""))


# -- mechanics, with the hashing embedder -----------------------------------------------------------------


def test_within_one_write_as_if_one_after_the_other(tmp_path: Path) -> None:
    ltm = make(tmp_path / "s", HashEmbedder())
    results = ltm.remember_many(["Is allergic to peanuts", "Has a cat", "Is not allergic to peanuts",
                                 "Is not allergic to peanuts", "Lives in Lyon", "Lives in Berlin"])
    assert [(r.status, r.action) for r in results] == [
        ("stored", "created"), ("stored", "created"), ("stored", "superseded"), ("duplicate", "duplicate"),
        ("stored", "created"), ("stored", "created")]
    assert results[2].replaced == results[0].memory
    assert results[3].memory == results[2].memory
    assert sorted(texts(ltm.memories())) == ["Has a cat", "Is not allergic to peanuts", "Lives in Berlin",
                                             "Lives in Lyon"]
    assert [v.action for v in ltm.history(results[0].memory.id)] == [  # type: ignore[union-attr]
        "created", "superseded", "created", "duplicate"]


def test_dedupe_false_stores_every_item(tmp_path: Path) -> None:
    ltm = make(tmp_path / "s", HashEmbedder())
    results = ltm.remember_many(["Lives in Lyon", "Lives in Berlin", "Lives in Berlin"], dedupe=False)
    assert [r.action for r in results] == ["created"] * 3 and len(ltm) == 3


def test_retired_memories_count_against_nothing(tmp_path: Path) -> None:
    clock = Clock()
    ltm = make(tmp_path / "s", HashEmbedder(), clock, max_items=2)
    ltm.remember("Is allergic to peanuts")
    ltm.remember("Plays the cello")
    clock.now += DAY
    result = ltm.try_remember("Is not allergic to peanuts")
    assert result.action == "superseded"
    assert sorted(texts(ltm.memories())) == ["Is not allergic to peanuts", "Plays the cello"]  # nothing evicted
    clock.now += DAY
    ltm.remember("Speaks Italian")  # now over the cap: the oldest live memory goes
    assert sorted(texts(ltm.memories())) == ["Is not allergic to peanuts", "Speaks Italian"]
    evicted = [m for m in ltm.memories() if m.text == "Speaks Italian"]
    assert evicted
    cello = [e for e in history_texts(tmp_path / "s") if e == "Plays the cello"]
    assert cello  # the evicted memory is in history
    actions = {(r["text"], r["action"]) for r in mindcore.open(tmp_path / "s").open_table("ltm_history")
               .scan(ALL_NAMESPACES)}
    assert ("Plays the cello", "evicted") in actions and ("Is allergic to peanuts", "superseded") in actions


def test_the_tool_says_when_it_replaced_a_fact(tmp_path: Path) -> None:
    ltm = make(tmp_path / "s", HashEmbedder())
    first = ltm.call("ltm_remember", {"text": "Is allergic to peanuts"})
    assert first["status"] == "ok" and first["action"] == "created" and "replaced" not in first
    second = ltm.call("ltm_remember", {"text": "Is not allergic to peanuts"})
    assert second["status"] == "ok" and second["action"] == "superseded"
    assert second["replaced"]["id"] == first["memory"]["id"]
    assert second["replaced"]["text"] == "Is allergic to peanuts"
    assert "negation" in second["replaced"]["reason"]
    assert "replaces" in second["message"]
    third = ltm.call("ltm_remember", {"text": "Is not allergic to peanuts"})
    assert third["status"] == "duplicate" and third["memory"]["id"] == second["memory"]["id"]


def test_an_llm_resolver_decides_in_one_call_per_write(tmp_path: Path) -> None:
    llm = ScriptedLLM([
        '{"verdicts": [{"pair": 1, "relation": "update", "reason": "the user changed cities"}]}',
        "I cannot answer that.",  # unusable: the conservative judgement decides
    ])
    ltm = make(tmp_path / "s", HashEmbedder(), resolver=llm)
    ltm.remember("Lives in Lyon")  # nothing near it: no call
    assert len(llm.calls) == 0
    judged = ltm.try_remember("Lives in Berlin")
    assert len(llm.calls) == 1 and llm.calls[0].json
    assert (judged.action, judged.reason) == ("updated", "the user changed cities")
    assert "Lives in Lyon" in llm.calls[0].messages[-1]["content"]
    fallback = ltm.try_remember("Lives in Paris")
    assert len(llm.calls) == 2
    assert (fallback.action, fallback.replaced) == ("created", None)  # the model said nothing usable: both kept
    assert sorted(texts(ltm.memories())) == ["Lives in Berlin", "Lives in Paris"]
    assert ltm.try_remember("Lives in Paris").action == "duplicate" and len(llm.calls) == 2  # certain: no call


def test_an_llm_resolver_failing_retires_only_what_is_certain(tmp_path: Path) -> None:
    ltm = make(tmp_path / "s", HashEmbedder(), resolver=ScriptedLLM([]))  # raises: script exhausted
    ltm.remember("Is allergic to peanuts")
    assert ltm.try_remember("Is not allergic to peanuts").action == "superseded"
    ltm.remember("Lives in Lyon")
    assert ltm.try_remember("Lives in Berlin").action == "created"
    assert len(ltm) == 3


def test_the_resolver_is_asked_before_the_scope_is_locked(tmp_path: Path) -> None:
    """A slow model holds no lock: another writer of the same scope commits while it judges, and the
    judged write then sees that memory too (asking the model about the new pair)."""
    import threading

    path = tmp_path / "s"
    asked, release = threading.Event(), threading.Event()

    class SlowJudge:
        calls = 0

        def complete(self, messages: Any, **kw: Any) -> str:
            SlowJudge.calls += 1
            if SlowJudge.calls == 1:
                asked.set()
                assert release.wait(30)
            return '{"verdicts": [{"pair": 1, "relation": "update", "reason": "moved"}]}'

    judged = make(path, HashEmbedder(), resolver=SlowJudge())  # type: ignore[arg-type]
    other = make(path, HashEmbedder(), resolver=False)
    judged.remember("Lives in Lyon")
    result: list[Any] = []
    writer = threading.Thread(target=lambda: result.append(judged.try_remember("Lives in Berlin")))
    writer.start()
    assert asked.wait(30)
    other.remember("Has a cat")  # would block if the judged write held the scope's lock
    release.set()
    writer.join()
    assert result[0].action == "updated"
    assert sorted(texts(other.memories())) == ["Has a cat", "Lives in Berlin"]


def test_forget_and_clear_erase_history(tmp_path: Path) -> None:
    path = tmp_path / "s"
    ltm = make(path, HashEmbedder())
    old = ltm.try_remember("Is allergic to peanuts").memory
    new = ltm.try_remember("Is not allergic to peanuts").memory
    ltm.remember("Is not allergic to peanuts")  # a duplicate event
    assert old is not None and new is not None
    assert "Is allergic to peanuts" in history_texts(path)
    assert ltm.forget(new.id)
    assert ltm.history(old.id) == [] and ltm.history(new.id) == []
    assert not {"Is allergic to peanuts", "Is not allergic to peanuts"} & set(history_texts(path))
    assert len(ltm) == 0
    # A retired version alone: it goes, its successor stays and marks it forgotten (without text).
    a = ltm.try_remember("Has a cat").memory
    b = ltm.try_remember("Does not have a cat").memory
    assert a is not None and b is not None
    assert ltm.forget(a.id)
    assert texts(ltm.memories()) == ["Does not have a cat"]
    assert "Has a cat" not in history_texts(path)
    assert (a.id, "forgotten", "") in [(v.memory_id, v.action, v.text) for v in ltm.history(b.id)]
    assert not ltm.forget("no-such-id")
    ltm.remember("Lives in Lyon")
    ltm.remember("Lives in Rome")
    assert ltm.clear() == 3
    assert history_texts(path) == []


def test_other_scopes_keep_their_history(tmp_path: Path) -> None:
    path = tmp_path / "s"
    ann, bob = make(path, HashEmbedder()), make(path, HashEmbedder(), user_id="bob")
    for ltm in (ann, bob):
        ltm.remember("Is allergic to peanuts")
        ltm.remember("Is not allergic to peanuts")
    ann.clear()
    peanuts = [v for m in bob.memories() for v in bob.history(m.id) if v.text == "Is allergic to peanuts"]
    assert [v.action for v in peanuts] == ["created", "superseded"]


def test_bulk_ingest_follows_the_same_decisions(tmp_path: Path) -> None:
    from mindcore.batch import remember

    path = tmp_path / "s"
    make(path, HashEmbedder(), user_id="ann").remember("Lives in Lyon")
    rows = pa.table({"user_id": ["ann", "ann", "bob", "bob"],
                     "text": ["Lives in Berlin", "Lives in Berlin", "Is allergic to peanuts", "Is not allergic to peanuts"]})
    report = remember(mindcore.open(path), rows, embedder=HashEmbedder(), namespace="chat")
    assert report.results.column("status").to_pylist() == ["stored", "duplicate", "stored", "stored"]
    ann, bob = make(path, HashEmbedder(), user_id="ann"), make(path, HashEmbedder(), user_id="bob")
    assert sorted(texts(ann.memories())) == ["Lives in Berlin", "Lives in Lyon"]
    assert texts(bob.memories()) == ["Is not allergic to peanuts"]
    lyon = next(m for m in ann.memories() if m.text == "Lives in Lyon")
    assert [v.action for v in ann.history(lyon.id)] == ["created", "related"]
    loop = make(tmp_path / "loop", HashEmbedder(), user_id="bob")
    assert [r.status for r in loop.remember_many(["Is allergic to peanuts", "Is not allergic to peanuts"])] == [
        "stored", "stored"]
    assert texts(loop.memories()) == texts(bob.memories())


def test_the_extractor_judges_what_extraction_writes(tmp_path: Path) -> None:
    llm = ScriptedLLM(['{"memories": [{"text": "Lives in Berlin", "kind": "identity", "importance": 0.8}]}',
                       '{"verdicts": [{"pair": 1, "relation": "update", "reason": "moved"}]}'])
    ltm = make(tmp_path / "s", HashEmbedder(), extractor=llm)
    ltm.remember("Lives in Lyon")
    report = ltm.remember_conversation([{"role": "user", "content": "I live in Berlin now"}])
    assert texts(report.stored) == ["Lives in Berlin"] and texts(report.replaced) == ["Lives in Lyon"]
    assert len(llm.calls) == 2 and "<memory-pairs>" in llm.calls[1].messages[-1]["content"]
    # Plain remember() is not judged by the extractor: both kept.
    assert ltm.try_remember("Lives in Paris").action == "created" and len(llm.calls) == 2


def test_resolver_false_keeps_the_extractor_out_of_judging(tmp_path: Path) -> None:
    llm = ScriptedLLM(['{"memories": [{"text": "Lives in Berlin", "kind": "identity", "importance": 0.8}]}'])
    ltm = make(tmp_path / "s", HashEmbedder(), extractor=llm, resolver=False)
    ltm.remember("Lives in Lyon")
    report = ltm.remember_conversation([{"role": "user", "content": "I live in Berlin now"}])
    assert texts(report.stored) == ["Lives in Berlin"] and report.replaced == [] and len(llm.calls) == 1
    assert ltm.resolver is None and LongTermMemoryConfig(resolver=False).resolver is False


def test_config_thresholds_are_checked() -> None:
    assert LongTermMemoryConfig(related_threshold=0.5).related_threshold == 0.5
    with pytest.raises(InvalidInputError, match="related_threshold"):
        LongTermMemoryConfig(related_threshold=0.95)
    with pytest.raises(InvalidInputError, match="duplicate_threshold"):
        LongTermMemoryConfig(duplicate_threshold=1.5)
    with pytest.raises(InvalidInputError, match="related_candidates"):
        LongTermMemoryConfig(related_candidates=0)


def test_conversation_turns_never_retire_each_other(tmp_path: Path) -> None:
    """Turns (memories with a context) are what was said: a later turn never retires an earlier
    one, not even on a resolver's word; only a verbatim repeat is not stored twice."""
    llm = ScriptedLLM(['{"verdicts": [{"pair": 1, "relation": "contradiction", "reason": "changed"}]}'] * 4)
    ltm = make(tmp_path / "s", HashEmbedder(), resolver=llm)
    results = ltm.remember_many([
        {"text": "I live in Lyon", "context": "Melanie: Where do you live?\nCaroline:"},
        {"text": "I live in Paris", "context": "Melanie: Still in Lyon?\nCaroline:"},
        {"text": "I live in Paris", "context": "Melanie: Where again?\nCaroline:"},
    ])
    assert [r.action for r in results] == ["created", "created", "duplicate"]
    assert sorted(texts(ltm.memories())) == ["I live in Lyon", "I live in Paris"]
    assert llm.calls == []  # turns are never put to the model
    # A model that calls two different turns duplicates cannot drop one either.
    eager = make(tmp_path / "t", HashEmbedder(),
                 resolver=ScriptedLLM(['{"verdicts": [{"pair": 1, "relation": "duplicate"}]}'] * 4))
    said = eager.remember_many([{"text": "I live in Lyon", "context": "Melanie: Where do you live?\nCaroline:"},
                                {"text": "I live in Lyon now", "context": "Melanie: And now?\nCaroline:"}])
    assert [r.action for r in said] == ["created", "created"]


def test_memories_of_different_speakers_never_replace_each_other(tmp_path: Path) -> None:
    ltm = make(tmp_path / "s", HashEmbedder())
    results = ltm.remember_many([
        {"text": "I live in Lyon", "context": "Melanie: Where do you live?\nCaroline:"},
        {"text": "I live in Berlin", "context": "Caroline: And you?\nMelanie:"},
        {"text": "I live in Berlin", "context": "Bob: Where do you live now?\nMelanie:"},
        {"text": "I live in Paris", "context": "Melanie: Still in Lyon?\nCaroline:"},
    ])
    assert [r.action for r in results] == ["created", "created", "duplicate", "created"]
    assert sorted(texts(ltm.memories())) == ["I live in Berlin", "I live in Lyon", "I live in Paris"]
