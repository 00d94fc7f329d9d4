"""One poisoned item never costs the good ones beside it, and wrong types fail loudly instead of
being stored piecemeal."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import Clock

from mindcore.embed import HashEmbedder
from mindcore.errors import EmbeddingError, InvalidInputError, InvalidTypeError, MindcoreError
from mindcore.llm import ScriptedLLM
from mindcore.ltm import LongTermMemory
from mindcore.mind import Mind
from mindcore.store import Store
from mindcore.working import WorkingMemory


def _reply(*texts: str) -> str:
    return json.dumps([{"text": t, "kind": "fact", "importance": 0.6} for t in texts])


def test_a_lone_surrogate_in_one_extraction_costs_only_that_item(store: Store) -> None:
    replies = [_reply("Lives in Lyon"), _reply("Has a cat named \ud800Tom", "Works as a nurse"), _reply("Plays chess")]
    ltm = LongTermMemory(store, user_id="u", embedder=HashEmbedder(), extractor=ScriptedLLM(replies))
    chats = [[{"role": "user", "content": f"message {i}"}] for i in range(3)]
    reports = ltm.remember_conversations(chats)
    assert [len(r.stored) for r in reports] == [1, 1, 1]
    assert sorted(m.text for m in ltm.memories()) == ["Lives in Lyon", "Plays chess", "Works as a nurse"]
    ltm.close()


def test_background_turns_survive_a_poisoned_neighbour(store: Store) -> None:
    replies = [_reply("Likes jazz"), _reply("bad \udfff"), _reply("Owns a bike"), _reply("Speaks Greek")]
    ltm = LongTermMemory(store, user_id="u", embedder=HashEmbedder(), extractor=ScriptedLLM(replies))
    futures = [ltm.remember_conversation_in_background([{"role": "user", "content": f"turn {i}"}])
               for i in range(4)]
    [f.result(timeout=60) for f in futures]
    assert sorted(m.text for m in ltm.memories()) == ["Likes jazz", "Owns a bike", "Speaks Greek"]
    ltm.close()


def test_remember_refuses_text_it_cannot_store(store: Store) -> None:
    ltm = LongTermMemory(store, user_id="u", embedder=HashEmbedder())
    for bad in ("caf\ud800", "nul\x00"):
        with pytest.raises(InvalidInputError, match="text: contains"):
            ltm.remember(bad)
    with pytest.raises(InvalidInputError, match="context: contains"):
        ltm.remember("fine", context="ctx \udc00")
    assert len(ltm) == 0
    ltm.close()


def test_wrong_container_types_are_refused(store: Store) -> None:
    ltm = LongTermMemory(store, user_id="u", embedder=HashEmbedder(), extractor=ScriptedLLM([_reply("x")]))
    with pytest.raises(InvalidTypeError, match="items: expected a list"):
        ltm.remember_many("abc")
    with pytest.raises(InvalidTypeError, match="items: expected a list"):
        ltm.remember_many({"text": "one"})
    with pytest.raises(InvalidTypeError, match="messages: expected a list of messages"):
        ltm.remember_conversation("hello")
    assert len(ltm) == 0
    ltm.close()


def test_a_mind_run_with_a_bad_reflection_keeps_its_other_writes(store: Store, clock: Clock) -> None:
    mind = Mind(store, agent="a", embedder=HashEmbedder(), clock=clock)
    with mind.run() as run:
        assert run.call("mind_believe", {"content": "Deploys on Fridays", "confidence": "high"})["status"] == "ok"
        assert run.call("mind_reflect", {"content": "bad \ud800 text"})["status"] == "error"
        assert run.call("mind_set_goal", {"description": "Ship v2"})["status"] == "ok"
    assert [b.content for b in mind.beliefs()] == ["Deploys on Fridays"]
    assert [g.description for g in mind.goals()] == ["Ship v2"]


class _OverflowEmbedder(HashEmbedder):
    def embed(self, texts):  # type: ignore[no-untyped-def, override]
        out = super().embed(texts)
        return np.full_like(out, 3e38) if any("overflow" in t for t in texts) else out


def test_a_vector_whose_norm_overflows_is_refused_at_write_time(store: Store, clock: Clock) -> None:
    mind = Mind(store, agent="a", embedder=_OverflowEmbedder(), clock=clock)
    with mind.run() as run:
        result = run.call("mind_believe", {"content": "overflow me", "confidence": "high"})
        assert result["status"] == "error" and "overflows float32" in result["error"]
        assert run.call("mind_believe", {"content": "a fine belief", "confidence": "high"})["status"] == "ok"
    assert [r.entry.content for r in mind.recall("fine belief")] == ["a fine belief"]
    with mind.run() as run, pytest.raises(EmbeddingError):
        run.believe("overflow again")


def test_working_memory_rejects_wrong_option_types(store: Store) -> None:
    for kwargs in ({"max_tokens": True}, {"read_only": "yes"}):
        with pytest.raises(MindcoreError):
            WorkingMemory(store, thread_id="t", **kwargs)  # type: ignore[arg-type]


def test_a_huge_query_is_cut_with_a_warning(store: Store) -> None:
    ltm = LongTermMemory(store, user_id="u", embedder=HashEmbedder())
    ltm.remember("Prefers green tea")
    with pytest.warns(UserWarning, match="cut to that length"):
        hits = ltm.recall("green tea " + "x" * 10_000_000, k=1)
    assert [m.text for m in hits] == ["Prefers green tea"]
    ltm.close()
