"""A mind run's tools are a `Toolset`, and a run used without `with` cannot lose writes silently."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import mindcore
from mindcore.embed import HashEmbedder
from mindcore.mind import Mind
from mindcore.store import Store
from mindcore.toolspec import Toolset


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = mindcore.open(tmp_path / "store")
    yield s
    s.close()


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
    run.flush()
