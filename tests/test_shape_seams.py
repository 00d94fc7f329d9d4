"""One constructor shape for Mind, WorkingMemory and LongTermMemory: a store or a path first, typed
models, a config dataclass, clear errors naming a bad argument, and writability checked at open."""

from __future__ import annotations

import doctest
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import mindcore
import mindcore.store.resolve
import mindcore.validation
import mindcore.working.config
import mindcore.working.memory
from mindcore.embed import Embedder, HashEmbedder
from mindcore.errors import InvalidInputError, InvalidTypeError, StoreNotWritableError
from mindcore.llm import ScriptedLLM
from mindcore.ltm import LongTermMemory
from mindcore.mind import Mind, MindConfig
from mindcore.store import Store, resolve_store
from mindcore.working import WorkingMemory, WorkingMemoryConfig

EMB = HashEmbedder(dim=64)


def _ltm(store: Any, **kwargs: Any) -> LongTermMemory:
    ltm = LongTermMemory.create(store, user_id="u1", embedder=EMB, enabled=True, **kwargs)
    assert ltm is not None
    return ltm


# -- a path in place of a store ---------------------------------------------------------------------


@pytest.fixture
def closed(monkeypatch: pytest.MonkeyPatch) -> list[Store]:
    """The stores closed during the test, in order."""
    seen: list[Store] = []
    close = Store.close

    def spy(self: Store) -> None:
        seen.append(self)
        close(self)

    monkeypatch.setattr(Store, "close", spy)
    return seen


@pytest.mark.parametrize("as_path", [str, Path], ids=["str", "PathLike"])
def test_every_capability_takes_a_path_and_closes_the_store_it_opened(
    tmp_path: Path, as_path: Callable[[Path], Any], closed: list[Store]
) -> None:
    where = as_path(tmp_path / "store")
    with WorkingMemory(where, thread_id="t1") as wm:
        wm.update({"content": "Scratch on disk"})
    with Mind(where, agent="a", embedder=EMB) as mind:
        mind.believe("Minds open paths too")
    with _ltm(where) as ltm:
        assert ltm.remember("Likes paths") is not None
    assert closed == [wm._store, mind.store, ltm.store]

    with mindcore.open(tmp_path / "store") as store:
        assert WorkingMemory(store, thread_id="t1").state == "Scratch on disk"
        assert [b.content for b in Mind(store, agent="a", embedder=EMB).beliefs()] == ["Minds open paths too"]
        assert [m.text for m in _ltm(store).memories()] == ["Likes paths"]


def test_a_store_passed_in_stays_open(tmp_path: Path, closed: list[Store]) -> None:
    with mindcore.open(tmp_path / "store") as store:
        WorkingMemory(store, thread_id="t").close()
        Mind(store, agent="a", embedder=EMB).close()
        _ltm(store).close()
        assert resolve_store(store) is store and closed == []
    assert closed == [store]


@pytest.mark.parametrize("bad", [42, b"/tmp/x", ["memory://x"], object()])
def test_anything_else_is_refused_naming_the_store(bad: Any) -> None:
    with pytest.raises(InvalidInputError, match="store: expected a Store, a path or a URI"):
        WorkingMemory(bad, thread_id="t")
    with pytest.raises(InvalidInputError, match="store: expected"):
        Mind(bad, agent="a", embedder=EMB)
    with pytest.raises(InvalidInputError, match="store: expected"):
        _ltm(bad)


# -- working memory's config ------------------------------------------------------------------------


def test_working_memory_config_and_the_keywords_it_replaces() -> None:
    store = mindcore.open("memory://shape-wm-config")
    cfg = WorkingMemoryConfig(scope="resource", template="# Notes", max_tokens=40)
    wm = WorkingMemory(store, thread_id="t1", resource_id="u1", config=cfg)
    assert (wm.config, wm.scope, wm.template, wm.max_tokens, wm.read_only) == (cfg, "resource", "# Notes", 40, False)
    assert wm.state == "# Notes"
    # keywords still work, and override the config's field
    legacy = WorkingMemory(store, thread_id="t1", resource_id="u1", scope="resource", max_tokens=60)
    assert legacy.config == WorkingMemoryConfig(scope="resource", max_tokens=60)
    mixed = WorkingMemory(store, thread_id="t1", resource_id="u1", config=cfg, max_tokens=80, read_only=True)
    assert mixed.config == WorkingMemoryConfig(scope="resource", template="# Notes", max_tokens=80, read_only=True)
    child = mixed.spawn(thread_id="t2")
    assert child.config == mixed.config and child.thread_id == "t2"
    assert mindcore.WorkingMemoryConfig is WorkingMemoryConfig


@pytest.mark.parametrize(
    ("kwargs", "needle", "wrong_type"),
    [
        ({"max_tokens": True}, "max_tokens: expected an integer, got bool", True),
        ({"max_tokens": "1500"}, "max_tokens: expected an integer, got str", True),
        ({"max_tokens": 0}, "max_tokens: must be at least 1, got 0", False),
        ({"read_only": "yes"}, "read_only: expected true or false, got str", True),
        ({"read_only": 1}, "read_only: expected true or false, got int", True),
        ({"template": 3}, "template: expected str, got int", True),
        ({"scope": "global"}, "scope: expected 'thread' or 'resource', got 'global'", False),
        ({"schema": 42}, "schema: expected a pydantic model class or a JSON Schema dict", True),
        ({"config": {"max_tokens": 10}}, "config: expected a WorkingMemoryConfig, got dict", True),
    ],
)
def test_working_memory_names_a_bad_argument(kwargs: dict[str, Any], needle: str, wrong_type: bool) -> None:
    store = mindcore.open("memory://shape-wm-bad")
    with pytest.raises(InvalidInputError, match=needle) as e:
        WorkingMemory(store, thread_id="t", **kwargs)
    assert isinstance(e.value, TypeError) == wrong_type and isinstance(e.value, ValueError)
    if "config" not in kwargs and "schema" not in kwargs:
        with pytest.raises(InvalidInputError, match=needle):
            WorkingMemoryConfig(**kwargs)


def test_missing_ids_are_invalid_input() -> None:
    store = mindcore.open("memory://shape-wm-ids")
    with pytest.raises(InvalidInputError, match="thread_id"):
        WorkingMemory(store)
    with pytest.raises(InvalidInputError, match="resource_id"):
        WorkingMemory(store, thread_id="t", scope="resource")


# -- typed models at the other seams ----------------------------------------------------------------


class _NoEmbed:
    dim = 64


@pytest.mark.parametrize(
    ("make", "needle"),
    [
        (lambda s: Mind(s, agent="", embedder=EMB), "agent: must not be empty"),
        (lambda s: Mind(s, agent=7, embedder=EMB), "agent: expected a string, got int"),
        (lambda s: Mind(s, agent="a", embedder=_NoEmbed()), "embedder: expected an Embedder"),
        (lambda s: Mind(s, agent="a", embedder=EMB, config={"max_goals": 3}), "config: expected a MindConfig"),
        (lambda s: Mind(s, agent="a", embedder=EMB, clock=5), "clock: expected a callable"),
        (lambda s: MindConfig(token_budget=True), "token_budget"),
        (lambda s: MindConfig(retrieval_threshold=2), "retrieval_threshold"),
        (lambda s: _ltm(s, extractor="gpt"), "extractor: expected an LLM"),
        (lambda s: LongTermMemory(s, user_id="u", embedder=None), "embedder: expected an Embedder"),  # type: ignore[arg-type]
        (lambda s: _ltm(s, weights=(0.7, 0.2, 0.1)), "weights: expected RecallWeights"),
        (lambda s: _ltm(s, touch_delay=-1), "touch_delay"),
        (lambda s: LongTermMemory.create(s, user_id="", embedder=EMB, enabled=True), "user_id"),
    ],
)
def test_constructors_name_a_bad_argument(make: Callable[[Store], object], needle: str) -> None:
    store = mindcore.open("memory://shape-bad-args")
    with pytest.raises(InvalidInputError, match=needle):
        make(store)


def test_models_that_fit_the_protocols_are_accepted() -> None:
    store = mindcore.open("memory://shape-models")
    assert isinstance(EMB, Embedder)
    ltm = _ltm(store, extractor=ScriptedLLM(["[]"]))
    assert ltm.embedder is EMB and ltm.extractor is not None
    ltm.close()


def test_embedder_like_is_a_deprecated_alias_of_embedder() -> None:
    with pytest.deprecated_call(match="mindcore.embed.Embedder"):
        assert mindcore.store.EmbedderLike is Embedder
    assert "EmbedderLike" not in mindcore.store.__all__
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = mindcore.store.nope  # type: ignore[attr-defined]


def test_invalid_type_error_is_both_a_type_and_a_value_error() -> None:
    assert issubclass(InvalidTypeError, InvalidInputError)
    assert issubclass(InvalidTypeError, TypeError) and issubclass(InvalidTypeError, ValueError)


# -- writability at open ----------------------------------------------------------------------------


@pytest.fixture
def unwritable(monkeypatch: pytest.MonkeyPatch) -> list[Store]:
    """Stores answer check_writable() with StoreNotWritableError; returns the stores checked."""
    checked: list[Store] = []

    def check_writable(self: Store) -> None:
        checked.append(self)
        raise StoreNotWritableError(f"store {self.uri} is read-only")

    monkeypatch.setattr(Store, "check_writable", check_writable, raising=False)
    return checked


def test_writers_check_the_store_when_they_open(
    unwritable: list[Store], closed: list[Store], tmp_path: Path
) -> None:
    store = mindcore.open(tmp_path / "store")
    with pytest.raises(StoreNotWritableError):
        Mind(store, agent="a", embedder=EMB)
    with pytest.raises(StoreNotWritableError):
        WorkingMemory(store, thread_id="t")
    with pytest.raises(StoreNotWritableError):
        _ltm(store)
    assert unwritable == [store] * 3
    reader = WorkingMemory(store, thread_id="t", read_only=True)  # reads need no writable store
    assert reader.state == "" and len(unwritable) == 3
    # a store opened from a path for a writer that is then refused is closed again
    assert closed == []
    with pytest.raises(StoreNotWritableError):
        WorkingMemory(tmp_path / "other", thread_id="t")
    assert closed == [unwritable[-1]] and closed[0] is not store


def test_a_read_only_store_is_refused_by_writers_and_served_to_readers(tmp_path: Path) -> None:
    with mindcore.open(tmp_path / "store") as store:
        WorkingMemory(store, thread_id="t").update({"content": "written before"})
    ro = mindcore.open(tmp_path / "store", read_only=True)
    with pytest.raises(StoreNotWritableError):
        Mind(ro, agent="a", embedder=EMB)
    with pytest.raises(StoreNotWritableError):
        WorkingMemory(ro, thread_id="t")
    with pytest.raises(StoreNotWritableError):
        _ltm(ro)
    assert WorkingMemory(ro, thread_id="t", read_only=True).state == "written before"


# -- examples ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "module", [mindcore.store.resolve, mindcore.working.config, mindcore.working.memory, mindcore.validation]
)
def test_docstring_examples_run(module: Any) -> None:
    result = doctest.testmod(module)
    assert result.failed == 0


def test_a_reader_given_a_memory_uri_opens_it() -> None:
    wm = WorkingMemory("memory://shape-reader", thread_id="t", read_only=True)
    assert wm.state == "" and wm.store.read_only is False
