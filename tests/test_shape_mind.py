"""A mind run's tools are a `Toolset`, and a run used without `with` cannot lose writes silently."""

from __future__ import annotations

import gc
import warnings

import pytest

import mindcore
from mindcore.embed import HashEmbedder
from mindcore.mind import Mind, MindError, MindRun
from mindcore.mind.draft import DraftBuffer, DraftGoal, GoalUpdate
from mindcore.store import Store
from mindcore.toolspec import Toolset


@pytest.fixture
def mind(store: Store) -> Mind:
    return Mind(store, agent="shape", embedder=HashEmbedder(dim=64))


def test_run_tools_is_a_toolset_that_combines(mind: Mind, store: Store) -> None:
    with mind.run() as run:
        assert isinstance(run.tools, Toolset) and run.tools is run.tools
        assert len(run.tools) == 7
        assert [t.to_openai()["function"]["name"] for t in run.tools][:2] == ["mind_recall", "mind_believe"]
        wm = mindcore.WorkingMemory(store, thread_id="t")
        both = run.tools + wm.tools
        assert len(both) == 8
        assert both.call("mind_believe", {"content": "Merged toolsets reach the run"})["status"] == "ok"
        assert both.call("working_memory_update", {"content": "a note"})["status"] == "ok"
    assert [b.content for b in mind.beliefs()] == ["Merged toolsets reach the run"]


def test_run_toolset_is_a_deprecated_alias(mind: Mind) -> None:
    run = mind.run()
    with pytest.deprecated_call(match="MindRun.tools"):
        assert run.toolset is run.tools
    run.close()


def test_a_dropped_unflushed_run_warns_naming_what_is_lost(mind: Mind) -> None:
    run = mind.run()
    assert run.call("mind_believe", {"content": "Never stored"})["action"] == "created"
    assert run.call("mind_set_goal", {"description": "Never stored either"})["status"] == "ok"
    with pytest.warns(ResourceWarning, match=r"mind/shape.*lost: 1 belief, 1 goal\b"):
        del run
        gc.collect()
    assert mind.beliefs() == [] and mind.goals() == []


def test_runs_that_end_properly_do_not_warn(mind: Mind) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", ResourceWarning)
        with mind.run() as run:
            run.believe("Flushed by with")
        flushed = mind.run()
        flushed.believe("Flushed by flush()")
        flushed.flush()
        empty = mind.run()  # nothing pending: nothing lost
        del run, flushed, empty
        gc.collect()


@pytest.mark.parametrize("end", [MindRun.flush, MindRun.close])
def test_flush_and_close_store_the_writes_of_a_run_used_without_with(mind: Mind, end: object) -> None:
    run = mind.run()
    assert run.call("mind_believe", {"content": "Stored without a with block"})["action"] == "created"
    assert mind.beliefs() == []
    report = end(run)  # type: ignore[operator]
    assert report.created == 1 and run.closed
    assert [b.content for b in mind.beliefs()] == ["Stored without a with block"]
    assert run.close() is report
    late = run.call("mind_believe", {"content": "Too late"})
    assert late == {"status": "error", "error": "this run has ended; start a new one with mind.run()"}
    with pytest.raises(MindError, match="run has ended"):
        run.set_goal("Too late")


def test_draft_summary() -> None:
    draft = DraftBuffer()
    assert draft.summary() == ""
    draft.goals["g1"] = DraftGoal("g1", "a", "normal", [], None, 0, 0)
    draft.goals["g2"] = DraftGoal("g2", "b", "normal", [], None, 0, 0)
    draft.goal_updates["g0"] = GoalUpdate()
    draft.unpins["r1"] = None
    assert draft.summary() == "2 goals, 1 goal update, 1 unpin"


def test_the_mind_itself_has_a_toolset_whose_calls_commit_at_once(mind: Mind) -> None:
    assert isinstance(mind.tools, Toolset) and [s.name for s in mind.tools] == [s.name for s in mind.run().tools]
    assert mind.call("mind_believe", {"content": "Deploys happen on Tuesdays", "confidence": "high"})["status"] == "ok"
    assert [b.content for b in mind.beliefs()] == ["Deploys happen on Tuesdays"]
    assert mind.call("mind_believe", {"content": 5})["status"] == "error"
    found = mind.call("mind_recall", {"query": "deploys"})
    assert found["status"] == "ok" and found["results"][0]["content"] == "Deploys happen on Tuesdays"


def test_async_twins_of_call(mind: Mind, store: Store) -> None:
    import asyncio

    from mindcore.embed import HashEmbedder
    from mindcore.ltm import LongTermMemory

    assert asyncio.run(mind.acall("mind_believe", {"content": "Async works", "confidence": "high"}))["status"] == "ok"
    ltm = LongTermMemory(store, user_id="u", embedder=HashEmbedder(dim=64))
    assert asyncio.run(ltm.acall("ltm_remember", {"text": "Prefers tea"}))["status"] == "ok"
    ltm.close()
