"""MindcoreStore, LangGraph's BaseStore on mindcore: LangGraph's store semantics (batch order,
namespace prefixes, list_namespaces with max_depth / prefix / suffix / wildcards, filters, TTL and
its refresh on read), search through hybrid recall with and without an index, secrets and bad input
refused with nothing written, and a graph whose second run, in another process, reads what the first
stored through LangGraph's runner."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("langgraph", reason="the langgraph extra (in the test extra) is not installed")

from langgraph.store.base import GetOp, InvalidNamespaceError, ListNamespacesOp, PutOp, SearchOp

import mindcore
from mindcore.embed import HashEmbedder
from mindcore.errors import InvalidInputError, SecretRefusedError
from mindcore.integrations.langgraph import MindcoreStore

SECRET = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"


def _store(tmp_path: Path, **kwargs: Any) -> MindcoreStore:
    return MindcoreStore.open(str(tmp_path / "store"), **kwargs)


def test_put_get_delete_and_created_at_kept_across_updates(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.put(("users", "ada"), "prefs", {"theme": "dark"})
    first = store.get(("users", "ada"), "prefs")
    assert first is not None and first.value == {"theme": "dark"} and first.namespace == ("users", "ada")
    time.sleep(0.01)
    store.put(("users", "ada"), "prefs", {"theme": "light"})
    second = store.get(("users", "ada"), "prefs")
    assert second is not None and second.value == {"theme": "light"}
    assert second.created_at == first.created_at and second.updated_at > first.updated_at
    assert store.get(("users", "bob"), "prefs") is None
    store.delete(("users", "ada"), "prefs")
    assert store.get(("users", "ada"), "prefs") is None
    store.close()


def test_batch_runs_reads_before_puts_and_keeps_the_order_of_results(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.put(("a",), "k", {"n": 1})
    results = store.batch([
        PutOp(("a",), "k", {"n": 2}),
        GetOp(("a",), "k"),
        SearchOp(("a",), limit=10),
        ListNamespacesOp(limit=10),
        PutOp(("a",), "k", {"n": 3}),  # the last put of a key wins
        PutOp(("b",), "j", {"n": 4}),
        GetOp(("b",), "j"),
    ])
    assert results[0] is None and results[4] is None and results[5] is None
    assert results[1] is not None and results[1].value == {"n": 1}  # read before the batch's puts
    assert [i.value for i in results[2]] == [{"n": 1}]
    assert results[3] == [("a",)]
    assert results[6] is None
    assert store.get(("a",), "k").value == {"n": 3}  # type: ignore[union-attr]
    assert store.get(("b",), "j").value == {"n": 4}  # type: ignore[union-attr]
    assert asyncio.run(store.abatch([GetOp(("b",), "j")]))[0].value == {"n": 4}  # type: ignore[union-attr]


def test_namespace_prefixes_and_list_namespaces(tmp_path: Path) -> None:
    store = _store(tmp_path)
    for ns in [("users", "ada", "memories"), ("users", "ada", "prefs"), ("users", "bob", "memories"),
               ("docs", "v1"), ("docs", "v2", "drafts")]:
        store.put(ns, "k", {"ns": list(ns)})
    assert {tuple(i.value["ns"]) for i in store.search(("users",))} == {
        ("users", "ada", "memories"), ("users", "ada", "prefs"), ("users", "bob", "memories")}
    assert [tuple(i.value["ns"]) for i in store.search(("users", "ada", "prefs"))] == [("users", "ada", "prefs")]
    assert store.search(("user",)) == []  # a prefix is whole labels
    assert len(store.search(())) == 5
    assert store.list_namespaces() == sorted([("users", "ada", "memories"), ("users", "ada", "prefs"),
                                              ("users", "bob", "memories"), ("docs", "v1"), ("docs", "v2", "drafts")])
    assert store.list_namespaces(prefix=("users",), max_depth=2) == [("users", "ada"), ("users", "bob")]
    assert store.list_namespaces(suffix=("memories",)) == [("users", "ada", "memories"), ("users", "bob", "memories")]
    assert store.list_namespaces(prefix=("users", "*", "prefs")) == [("users", "ada", "prefs")]
    assert store.list_namespaces(max_depth=1) == [("docs",), ("users",)]
    assert store.list_namespaces(limit=2, offset=1) == [("docs", "v2", "drafts"), ("users", "ada", "memories")]
    store.delete(("docs", "v1"), "k")
    assert ("docs", "v1") not in store.list_namespaces()
    with pytest.raises(InvalidNamespaceError):
        store.put(("a.b",), "k", {})
    with pytest.raises(InvalidNamespaceError):
        store.batch([PutOp(("a.b",), "k", {})])


def test_filters_limits_and_offsets(tmp_path: Path) -> None:
    store = _store(tmp_path)
    for i in range(6):
        store.put(("items",), f"k{i}", {"n": i, "kind": "even" if i % 2 == 0 else "odd", "tags": {"x": i % 3}})
    keys = lambda items: sorted(i.key for i in items)  # noqa: E731
    assert keys(store.search(("items",), filter={"kind": "even"})) == ["k0", "k2", "k4"]
    assert keys(store.search(("items",), filter={"n": {"$gte": 2, "$lt": 5}})) == ["k2", "k3", "k4"]
    assert keys(store.search(("items",), filter={"n": {"$ne": 0}, "tags": {"x": 0}})) == ["k3"]
    assert [i.key for i in store.search(("items",), limit=2)] == ["k5", "k4"]  # newest first
    assert [i.key for i in store.search(("items",), limit=2, offset=2)] == ["k3", "k2"]
    with pytest.raises(InvalidInputError, match="operator"):
        store.search(("items",), filter={"n": {"$regex": "."}})


def test_ttl_expires_items_and_a_read_refreshes_it(tmp_path: Path) -> None:
    store = _store(tmp_path, ttl={"default_ttl": 10.0, "refresh_on_read": True})  # minutes
    store.put(("s",), "kept", {"v": 1})
    store.put(("s",), "left", {"v": 2})
    store.put(("s",), "forever", {"v": 3}, ttl=None)
    rows = {r["id"]: r for r in store.table.scan("s")}
    assert rows["forever"]["expires_at"] is None
    kept_expiry, left_expiry = rows["kept"]["expires_at"], rows["left"]["expires_at"]
    kept_updated = store.get(("s",), "kept", refresh_ttl=False).updated_at  # type: ignore[union-attr]
    time.sleep(0.05)
    assert store.get(("s",), "kept") is not None  # refreshed by this read
    assert store.get(("s",), "left", refresh_ttl=False) is not None
    rows = {r["id"]: r for r in store.table.scan("s")}
    assert rows["kept"]["expires_at"] > kept_expiry
    assert rows["left"]["expires_at"] == left_expiry
    # A refresh moves the expiry only: the item's updated_at is when its value was put.
    assert store.get(("s",), "kept", refresh_ttl=False).updated_at == kept_updated  # type: ignore[union-attr]
    # Expiry, made to have passed: the item is gone from every read, and swept from the table.
    store.table.update("s", ["left"], {"expires_at": 1})
    assert store.get(("s",), "left") is None
    assert [i.key for i in store.search(("s",))] == ["forever", "kept"]
    assert store.sweep_ttl() == 1
    assert sorted(r["id"] for r in store.table.scan("s")) == ["forever", "kept"]
    with pytest.raises(InvalidInputError, match="ttl"):
        store.put(("s",), "bad", {"v": 1}, ttl=-1)


def test_search_with_an_index_ranks_by_meaning_and_words(tmp_path: Path) -> None:
    store = _store(tmp_path, index={"dims": 64, "embed": HashEmbedder(dim=64), "fields": ["text"]})
    store.put(("mem",), "tea", {"text": "Ada drinks green tea every morning", "n": 1})
    store.put(("mem",), "bees", {"text": "Ada keeps bees in her garden", "n": 2})
    store.put(("mem",), "raw", {"text": "not indexed: bees bees bees"}, index=False)
    hits = store.search(("mem",), query="which insects does Ada keep in the garden")
    assert hits[0].key == "bees" and hits[0].score is not None and hits[0].score > hits[1].score  # type: ignore[operator]
    assert {h.key for h in hits} == {"tea", "bees", "raw"}
    assert store.search(("mem",), query="green tea", filter={"n": 1})[0].key == "tea"
    vectors = {r["id"]: r["vectors"] for r in store.table.scan("mem")}
    assert vectors["raw"] is None and np.frombuffer(vectors["tea"], dtype=np.float32).shape == (64,)

    calls: list[list[str]] = []

    def embed(texts: list[str]) -> list[list[float]]:  # a plain function, as LangGraph allows
        calls.append(list(texts))
        return [list(v) for v in HashEmbedder(dim=64).embed(texts)]

    other = MindcoreStore(store.store, index={"dims": 64, "embed": embed, "fields": ["text", "title"]}, table="other")
    other.put(("mem",), "doc", {"title": "Bee keeping", "text": "Hives need space."})
    assert calls == [["Hives need space.", "Bee keeping"]]
    assert other.search(("mem",), query="bee keeping")[0].key == "doc"


def test_search_without_an_index_ranks_by_words(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.put(("mem",), "tea", {"text": "Ada drinks green tea"})
    store.put(("mem",), "bees", {"text": "Ada keeps bees"})
    assert [h.key for h in store.search(("mem",), query="bees")] == ["bees", "tea"]


def test_secrets_and_bad_values_are_refused_and_nothing_of_the_batch_is_written(tmp_path: Path) -> None:
    store = _store(tmp_path)
    for ops in (
        [PutOp(("ok",), "a", {"v": 1}), PutOp(("ok",), "b", {"note": {"deep": [f"key {SECRET}"]}})],
        [PutOp(("ok",), "a", {"v": 1}), PutOp(("ok",), SECRET, {"v": 1})],
        [PutOp(("ok", SECRET), "a", {"v": 1})],
    ):
        with pytest.raises(SecretRefusedError, match="github-token"):
            store.batch(ops)
    with pytest.raises(InvalidInputError, match="JSON"):
        store.put(("ok",), "a", {"v": {1, 2}})
    with pytest.raises(mindcore.errors.InvalidTypeError, match="dict"):
        store.batch([PutOp(("ok",), "a", ["not", "a", "dict"])])  # type: ignore[arg-type]
    assert store.list_namespaces() == []
    assert store.table.namespaces() == []


def test_items_persist_across_opens(tmp_path: Path) -> None:
    with _store(tmp_path) as store:
        store.put(("users", "ada"), "prefs", {"theme": "dark"})
    with _store(tmp_path) as store:
        assert store.get(("users", "ada"), "prefs").value == {"theme": "dark"}  # type: ignore[union-attr]


GRAPH = textwrap.dedent('''
    import sys
    from langgraph.config import get_store
    from langgraph.graph import END, START, MessagesState, StateGraph
    from langchain_core.messages import AIMessage, HumanMessage
    from mindcore.embed import HashEmbedder
    from mindcore.integrations.langgraph import MindcoreSaver, MindcoreStore

    def model(state: MessagesState, config) -> dict:
        store, user = get_store(), config["configurable"]["user_id"]
        text = state["messages"][-1].content
        if text.startswith("Remember "):
            store.put(("memories", user), str(len(store.search(("memories", user)))), {"text": text[9:]})
            return {"messages": [AIMessage("Saved.")]}
        found = store.search(("memories", user), query=text, limit=1)
        return {"messages": [AIMessage(found[0].value["text"] if found else "I do not know.")]}

    builder = StateGraph(MessagesState)
    builder.add_node("model", model)
    builder.add_edge(START, "model")
    builder.add_edge("model", END)
    folder, thread, user, text = sys.argv[1:5]
    with MindcoreSaver.open(folder) as saver, MindcoreStore.open(
            folder, index={"dims": 64, "embed": HashEmbedder(dim=64), "fields": ["text"]}) as store:
        graph = builder.compile(checkpointer=saver, store=store)
        config = {"configurable": {"thread_id": thread, "user_id": user}}
        print(graph.invoke({"messages": [HumanMessage(text)]}, config)["messages"][-1].content)
''')


def _run(folder: Path, thread: str, user: str, text: str) -> str:
    done = subprocess.run([sys.executable, "-c", GRAPH, str(folder), thread, user, text],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    return done.stdout.strip()


def test_a_new_thread_in_another_process_recalls_what_an_earlier_one_stored(tmp_path: Path) -> None:
    folder = tmp_path / "state"
    assert _run(folder, "t1", "ada", "Remember my cat is called Miso") == "Saved."
    assert _run(folder, "t1", "ada", "Remember I live in Lyon") == "Saved."
    # A new thread: nothing of t1's messages, only the store's memories.
    assert _run(folder, "t2", "ada", "what is my cat called") == "my cat is called Miso"
    assert _run(folder, "t3", "bob", "what is my cat called") == "I do not know."


# The issue names create_react_agent; LangGraph 1.x marks it moved to langchain.agents.create_agent.
@pytest.mark.filterwarnings("ignore:create_react_agent has been moved")
def test_a_react_agent_with_langmem_memory_tools_works_unchanged(tmp_path: Path) -> None:
    langmem = pytest.importorskip("langmem", reason="langmem is in the test extra")
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langgraph.prebuilt import create_react_agent

    from mindcore.integrations.langgraph import MindcoreSaver

    class Scripted(BaseChatModel):
        """Stores what it is told to remember with manage_memory, answers questions with
        search_memory, and says what the tool returned."""

        @property
        def _llm_type(self) -> str:
            return "scripted"

        def bind_tools(self, tools: Any, **kwargs: Any) -> Scripted:  # type: ignore[override]
            return self

        def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                      **kwargs: Any) -> ChatResult:
            last = messages[-1]
            if isinstance(last, ToolMessage):
                reply = AIMessage(f"tool: {last.content}")
            elif str(last.content).startswith("Remember "):
                reply = AIMessage("", tool_calls=[{"name": "manage_memory", "id": "c1",
                                                   "args": {"content": str(last.content)[9:], "action": "create"}}])
            else:
                reply = AIMessage("", tool_calls=[{"name": "search_memory", "id": "c2", "args": {"query": str(last.content)}}])
            return ChatResult(generations=[ChatGeneration(message=reply)])

    namespace = ("memories", "{langgraph_user_id}")
    tools = [langmem.create_manage_memory_tool(namespace=namespace), langmem.create_search_memory_tool(namespace=namespace)]
    index = {"dims": 64, "embed": HashEmbedder(dim=64), "fields": ["content"]}

    def run(thread: str, text: str) -> str:
        with MindcoreSaver.open(str(tmp_path / "state")) as saver, \
                MindcoreStore.open(str(tmp_path / "state"), index=index) as store:  # type: ignore[arg-type]
            agent = create_react_agent(Scripted(), tools, checkpointer=saver, store=store)
            config: Any = {"configurable": {"thread_id": thread, "langgraph_user_id": "ada"}}
            return str(agent.invoke({"messages": [HumanMessage(text)]}, config)["messages"][-1].content)

    assert run("t1", "Remember my cat is called Miso").startswith("tool: created memory")
    answer = run("t2", "what is my cat called")  # a new thread: only the store remembers
    assert "my cat is called Miso" in answer
    with MindcoreStore.open(str(tmp_path / "state")) as store:
        items = store.search(("memories", "ada"))
        assert [i.value["content"] for i in items] == ["my cat is called Miso"]
