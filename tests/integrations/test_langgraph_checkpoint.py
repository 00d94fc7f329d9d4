"""MindcoreSaver, the LangGraph checkpointer: LangGraph's own conformance suite on a folder and on
S3 (moto), graphs run through LangGraph's runner (a conversation continued by a second process,
delta channels kept across a prune), values stored once per version, secrets refused before the
model is called, and bad input refused with nothing stored."""

from __future__ import annotations

import asyncio
import contextlib
import io
import operator
import subprocess
import sys
import textwrap
import uuid
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Annotated, Any

import pytest

pytest.importorskip("langgraph", reason="the langgraph extra (in the test extra) is not installed")

from conftest import S3_BUCKET
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.channels import DeltaChannel
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.report import ProgressCallbacks
from langgraph.graph import END, START, MessagesState, StateGraph
from typing_extensions import TypedDict

import mindcore
from mindcore.errors import InvalidInputError, SecretRefusedError
from mindcore.integrations.langgraph import MindcoreSaver

SECRET = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"


def _conformance(make: Any, record_property: Any, where: str) -> None:
    @checkpointer_test(name=f"MindcoreSaver on {where}")
    async def saver() -> AsyncIterator[MindcoreSaver]:
        s = make()
        yield s
        s.close()

    report = asyncio.run(validate(saver, progress=ProgressCallbacks.quiet()))
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        report.print_report()
    record_property("report", printed.getvalue())  # printed at the end of the test log (conftest.py)
    results = report.to_dict()
    assert report.passed_all_base(), results
    assert report.passed_all(), results
    assert report.conformance_level() == "FULL", results


def test_conformance_on_a_folder(tmp_path: Path, record_property: Any) -> None:
    store = mindcore.open(tmp_path / "store")
    _conformance(lambda: MindcoreSaver(store), record_property, "a folder")
    store.close()


def test_conformance_on_s3(s3: dict[str, str], record_property: Any) -> None:
    uri = f"s3://{S3_BUCKET}/langgraph-{uuid.uuid4().hex[:8]}"
    store = mindcore.open(uri, storage_options=s3)
    _conformance(lambda: MindcoreSaver(store), record_property, "S3 (moto)")
    store.close()


# -- graphs through LangGraph's runner -----------------------------------------------------------

# The second session's answer can only come from the first session's stored history: the model
# looks for "my name is X" in the messages it is given.
CHAT_GRAPH = textwrap.dedent('''
    import sys
    from langchain_core.messages import AIMessage, HumanMessage
    from langgraph.graph import END, START, MessagesState, StateGraph
    from mindcore.integrations.langgraph import MindcoreSaver

    def model(state: MessagesState) -> dict:
        names = [m.content.split("my name is ", 1)[1].strip(". ") for m in state["messages"]
                 if isinstance(m, HumanMessage) and "my name is " in m.content]
        if state["messages"][-1].content.endswith("?"):
            reply = f"Your name is {names[-1]}." if names else "I do not know your name."
        else:
            reply = "Noted."
        return {"messages": [AIMessage(reply)]}

    builder = StateGraph(MessagesState)
    builder.add_node("model", model)
    builder.add_edge(START, "model")
    builder.add_edge("model", END)
    with MindcoreSaver.open(sys.argv[1]) as saver:
        graph = builder.compile(checkpointer=saver)
        out = graph.invoke({"messages": [HumanMessage(sys.argv[3])]}, {"configurable": {"thread_id": sys.argv[2]}})
        print(out["messages"][-1].content)
''')


def _session(folder: Path, thread: str, text: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", CHAT_GRAPH, str(folder), thread, text],
        capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    return done.stdout.strip()


def test_a_second_process_continues_the_conversation_the_first_stored(tmp_path: Path) -> None:
    folder = tmp_path / "agent-state"
    assert _session(folder, "user-42", "Hello, my name is Ada.") == "Noted."
    assert _session(folder, "user-42", "What is my name?") == "Your name is Ada."
    # Another thread shares nothing with it.
    assert _session(folder, "user-7", "What is my name?") == "I do not know your name."
    with MindcoreSaver.open(str(folder)) as saver:
        history = list(saver.list({"configurable": {"thread_id": "user-42"}}))
        state = saver.get_tuple({"configurable": {"thread_id": "user-42"}})
    assert state is not None
    assert [m.content for m in state.checkpoint["channel_values"]["messages"]] == [
        "Hello, my name is Ada.", "Noted.", "What is my name?", "Your name is Ada."
    ]
    assert len(history) == 6  # input, and the model's step, twice each; and each run's start
    assert [h.checkpoint["id"] for h in history] == sorted((h.checkpoint["id"] for h in history), reverse=True)


class _Counter(TypedDict):
    count: int


def _counter_graph(saver: MindcoreSaver) -> Any:
    builder = StateGraph(_Counter)
    builder.add_node("inc", lambda s: {"count": s["count"] + 1})
    builder.add_edge(START, "inc")
    builder.add_edge("inc", END)
    return builder.compile(checkpointer=saver)


def test_async_runs_of_a_graph(tmp_path: Path) -> None:
    async def run() -> tuple[int, int]:
        async with MindcoreSaver.open(str(tmp_path / "s")) as saver:
            graph = _counter_graph(saver)
            config: Any = {"configurable": {"thread_id": "t"}}
            first = await graph.ainvoke({"count": 1}, config)
            state = await graph.aget_state(config)
            return first["count"], state.values["count"]

    assert asyncio.run(run()) == (2, 2)


def _append(state: Sequence[str], writes: Sequence[Sequence[str]]) -> list[str]:
    return [*state, *(item for batch in writes for item in batch)]


class _Log(TypedDict):
    items: Annotated[list[str], DeltaChannel(_append, snapshot_frequency=4)]
    last: str


def test_prune_keep_latest_keeps_what_a_delta_channel_is_rebuilt_from(tmp_path: Path) -> None:
    builder = StateGraph(_Log)
    builder.add_node("add", lambda s: {"items": [s["last"]]})
    builder.add_edge(START, "add")
    builder.add_edge("add", END)
    with MindcoreSaver.open(str(tmp_path / "s")) as saver:
        graph = builder.compile(checkpointer=saver)
        config: Any = {"configurable": {"thread_id": "log"}}
        for i in range(7):
            graph.invoke({"last": f"item-{i}"}, config)
        before = graph.get_state(config).values["items"]
        assert before == [f"item-{i}" for i in range(7)]
        n_before = len(list(saver.list(config)))

        saver.prune(["log"], strategy="keep_latest")

        kept = list(saver.list(config))
        assert 1 < len(kept) < n_before  # the chain back to the last snapshot, no further
        assert graph.get_state(config).values["items"] == before
        graph.invoke({"last": "item-7"}, config)
        assert graph.get_state(config).values["items"] == [*before, "item-7"]

        saver.prune(["log"], strategy="delete")
        assert list(saver.list(config)) == []


def test_a_value_is_stored_once_however_many_checkpoints_point_at_it(tmp_path: Path) -> None:
    class State(TypedDict):
        document: str
        turns: Annotated[list[int], operator.add]

    builder = StateGraph(State)
    builder.add_node("turn", lambda s: {"turns": [len(s["turns"])]})
    builder.add_edge(START, "turn")
    builder.add_edge("turn", END)
    document = "a long document " * 20_000
    with MindcoreSaver.open(str(tmp_path / "s")) as saver:
        graph = builder.compile(checkpointer=saver)
        config: Any = {"configurable": {"thread_id": "doc"}}
        graph.invoke({"document": document, "turns": []}, config)
        for _ in range(5):
            graph.invoke({"turns": []}, config)
        rows = saver.table.scan("doc", mindcore.store.col("kind").eq("blob") & mindcore.store.col("channel").eq("document"))
        assert len(rows) == 1
        assert len(list(saver.list(config))) >= 12
        assert graph.get_state(config).values["document"] == document
        assert graph.get_state(config).values["turns"] == [0, 1, 2, 3, 4, 5]


# -- secrets and bad input -------------------------------------------------------------------------


@pytest.mark.parametrize("durability", ["sync", "async", "exit"])
def test_a_secret_in_the_input_is_refused_and_never_stored(tmp_path: Path, durability: str) -> None:
    calls: list[int] = []

    def model(state: MessagesState) -> dict[str, Any]:
        calls.append(1)
        return {"messages": [AIMessage("ok")]}

    builder = StateGraph(MessagesState)
    builder.add_node("model", model)
    builder.add_edge(START, "model")
    builder.add_edge("model", END)
    with MindcoreSaver.open(str(tmp_path / "s")) as saver:
        graph = builder.compile(checkpointer=saver)
        config: Any = {"configurable": {"thread_id": "t"}}
        graph.invoke({"messages": [HumanMessage("hello")]}, config)
        stored = saver.table.count("t")
        for text in (f"my key is {SECRET}", "my key is Z2hwX2FiY2RlZmdoaWprbG1ub3BxcnN0dXZ3eHl6MDEyMzQ1Njc4OQ=="):
            with pytest.raises(SecretRefusedError, match="github-token"):
                graph.invoke({"messages": [HumanMessage(text)]}, config, durability=durability)  # type: ignore[arg-type]
        # With durability="sync" the input's checkpoint is stored before the first node runs, so
        # the refusal comes before the model is called; the other modes store while (or after)
        # the nodes run.
        if durability == "sync":
            assert calls == [1]
            assert saver.table.count("t") == stored
        # Whatever the mode, no stored byte holds the secret, as written or encoded (in "async"
        # mode the model's own reply, stored as a pending write, may be kept).
        for row in saver.table.scan("t"):
            for value in (row["value"], row["meta"]):
                assert value is None or (SECRET.encode() not in value and b"Z2hwX2Fi" not in value)
        assert [m.content for m in graph.get_state(config).values["messages"]] == ["hello", "ok"]


def test_a_secret_in_a_tool_result_or_a_thread_id_is_refused(tmp_path: Path) -> None:
    def leaky(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage(f"found {SECRET}")]}

    builder = StateGraph(MessagesState)
    builder.add_node("leaky", leaky)
    builder.add_edge(START, "leaky")
    builder.add_edge("leaky", END)
    with MindcoreSaver.open(str(tmp_path / "s")) as saver:
        graph = builder.compile(checkpointer=saver)
        with pytest.raises(SecretRefusedError):
            graph.invoke({"messages": [HumanMessage("look")]}, {"configurable": {"thread_id": "t"}})
        assert all(SECRET not in repr(t.checkpoint) for t in saver.list({"configurable": {"thread_id": "t"}}))
        with pytest.raises(SecretRefusedError, match="thread_id"):
            graph.invoke({"messages": [HumanMessage("hi")]}, {"configurable": {"thread_id": SECRET}})
        assert saver.table.namespaces() == ["t"]


def test_bad_input_is_refused_with_a_clear_error(tmp_path: Path) -> None:
    with MindcoreSaver.open(str(tmp_path / "s")) as saver:
        with pytest.raises(InvalidInputError, match="thread_id"):
            saver.get_tuple({"configurable": {}})
        with pytest.raises(InvalidInputError, match="strategy"):
            saver.prune(["t"], strategy="keep_oldest")
        with pytest.raises(InvalidInputError, match="run_ids"):
            saver.delete_for_runs("run-1")
        with pytest.raises(InvalidInputError, match="checkpoint_id"):
            saver.put_writes({"configurable": {"thread_id": "t"}}, [("ch", 1)], "task")
        with pytest.raises(InvalidInputError, match="store"):
            MindcoreSaver(42)  # type: ignore[arg-type]
        assert saver.table.namespaces() == []


def test_a_store_given_open_is_not_closed_by_the_saver(tmp_path: Path) -> None:
    store = mindcore.open(tmp_path / "s")
    with MindcoreSaver(store) as saver:
        _counter_graph(saver).invoke({"count": 0}, {"configurable": {"thread_id": "t"}})
    assert store.table_names() == ["langgraph_checkpoints"]
    assert MindcoreSaver(store).get_tuple({"configurable": {"thread_id": "t"}}) is not None
    store.close()


class _PickleSerde:
    """A serializer of the user's own (LangGraph's protocol): what it stores cannot be read back as
    plain data, so the values themselves are screened."""

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        import pickle

        return "my-pickle", pickle.dumps(obj)

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        import pickle

        return pickle.loads(data[1])  # the test's own bytes


def test_a_serializer_of_ones_own_round_trips_and_still_refuses_secrets(tmp_path: Path) -> None:
    with MindcoreSaver.open(str(tmp_path / "s"), serde=_PickleSerde()) as saver:  # type: ignore[arg-type]
        graph = _counter_graph(saver)
        config: Any = {"configurable": {"thread_id": "t"}}
        assert graph.invoke({"count": 1}, config)["count"] == 2
        assert saver.table.scan("t", mindcore.store.col("kind").eq("checkpoint"))[0]["value_type"] == "my-pickle"
        builder = StateGraph(MessagesState)
        builder.add_node("echo", lambda s: {"messages": [AIMessage("ok")]})
        builder.add_edge(START, "echo")
        builder.add_edge("echo", END)
        chat = builder.compile(checkpointer=saver)
        with pytest.raises(SecretRefusedError, match="github-token"):
            chat.invoke({"messages": [HumanMessage(f"key {SECRET}")]}, {"configurable": {"thread_id": "u"}},
                        durability="sync")
        assert saver.table.count("u") == 0
