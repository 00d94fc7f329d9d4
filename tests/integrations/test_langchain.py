"""mindcore.integrations.langchain: the chat history's contract (order, types, tool calls, clear,
async, several writers, secrets and bad input), the retriever's per-user scope, and one
conversation continued by a second process through LangChain's own ``RunnableWithMessageHistory``
and a retrieval chain."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

pytest.importorskip("langchain_core", reason="the langchain extra (in the test extra) is not installed")

from langchain_core.documents import Document
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

import mindcore
from mindcore.embed import HashEmbedder
from mindcore.errors import ContextError, InvalidInputError, SecretRefusedError
from mindcore.integrations.langchain import MindcoreChatMessageHistory, MindcoreRetriever
from mindcore.ltm import LongTermMemory

SECRET = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"


def _history(tmp_path: Path, session: str = "chat-1") -> MindcoreChatMessageHistory:
    return MindcoreChatMessageHistory.open(str(tmp_path / "store"), session)


def test_messages_come_back_in_order_with_their_types_and_tool_calls(tmp_path: Path) -> None:
    history = _history(tmp_path)
    conversation = [
        SystemMessage("Be brief."),
        HumanMessage("What is 6 x 7?"),
        AIMessage("", tool_calls=[{"name": "multiply", "args": {"a": 6, "b": 7}, "id": "call-1"}]),
        ToolMessage("42", tool_call_id="call-1"),
        AIMessage("42."),
    ]
    history.add_messages(conversation[:2])
    history.add_message(conversation[2])
    history.add_messages(conversation[3:])
    got = history.messages
    assert [type(m) for m in got] == [type(m) for m in conversation]
    assert [m.content for m in got] == [m.content for m in conversation]
    assert isinstance(got[2], AIMessage)
    assert got[2].tool_calls == [{"name": "multiply", "args": {"a": 6, "b": 7}, "id": "call-1", "type": "tool_call"}]
    assert isinstance(got[3], ToolMessage) and got[3].tool_call_id == "call-1"
    # Another history on the same store and session reads the same messages; another session none.
    assert [m.content for m in _history(tmp_path).messages] == [m.content for m in conversation]
    assert _history(tmp_path, "chat-2").messages == []
    history.clear()
    assert history.messages == []
    history.add_user_message("again")
    assert [m.content for m in history.messages] == ["again"]
    history.close()


def test_a_long_history_is_read_whole(tmp_path: Path) -> None:
    history = _history(tmp_path)
    history.add_messages([HumanMessage(f"m{i}") for i in range(2_345)])
    assert [m.content for m in history.messages] == [f"m{i}" for i in range(2_345)]


def test_async_methods(tmp_path: Path) -> None:
    history = _history(tmp_path)

    async def run() -> tuple[list[str], list[str]]:
        await history.aadd_messages([HumanMessage("hi"), AIMessage("hello")])
        before = [str(m.content) for m in await history.aget_messages()]
        await history.aclear()
        return before, [str(m.content) for m in await history.aget_messages()]

    assert asyncio.run(run()) == (["hi", "hello"], [])


def test_writers_in_several_threads_lose_nothing(tmp_path: Path) -> None:
    history = _history(tmp_path)
    start = threading.Barrier(8)

    def write(t: int) -> None:
        start.wait()
        for i in range(10):
            history.add_messages([HumanMessage(f"t{t}-q{i}"), AIMessage(f"t{t}-a{i}")])

    threads = [threading.Thread(target=write, args=(t,)) for t in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    got = [str(m.content) for m in history.messages]
    assert sorted(got) == sorted(f"t{t}-{x}{i}" for t in range(8) for i in range(10) for x in "qa")
    for t in range(8):  # each call's pair stays together, in order
        for i in range(10):
            assert got.index(f"t{t}-a{i}") == got.index(f"t{t}-q{i}") + 1


def test_secrets_and_bad_messages_are_refused_and_nothing_is_stored(tmp_path: Path) -> None:
    history = _history(tmp_path)
    history.add_messages([HumanMessage("hello")])
    with pytest.raises(SecretRefusedError, match="github-token"):
        history.add_messages([HumanMessage("fine"), AIMessage(f"the key is {SECRET}")])
    with pytest.raises(ContextError, match="image"):
        history.add_messages([HumanMessage(content=[{"type": "image_url", "image_url": {"url": "https://x/y.png"}}])])
    with pytest.raises(InvalidInputError, match=r"messages\[1\]"):
        history.add_messages([HumanMessage("fine"), "not a message"])  # type: ignore[list-item]
    assert [m.content for m in history.messages] == ["hello"]
    with pytest.raises(SecretRefusedError):
        MindcoreChatMessageHistory.open(str(tmp_path / "store"), SECRET)


# -- the retriever ---------------------------------------------------------------------------------


def test_the_retriever_recalls_in_one_users_scope(tmp_path: Path) -> None:
    store = mindcore.open(tmp_path / "store")
    alice = LongTermMemory(store, user_id="alice", embedder=HashEmbedder())
    bob = LongTermMemory(store, user_id="bob", embedder=HashEmbedder())
    alice.remember("Alice is allergic to peanuts", kind="fact", importance=0.9)
    alice.remember("Alice lives in Lyon")
    bob.remember("Bob is allergic to cats")
    docs = MindcoreRetriever(memory=alice, k=5).invoke("what is she allergic to?")
    assert all(isinstance(d, Document) for d in docs)
    assert docs[0].page_content == "Alice is allergic to peanuts"
    assert {d.page_content for d in docs} <= {"Alice is allergic to peanuts", "Alice lives in Lyon"}
    assert docs[0].metadata["kind"] == "fact" and docs[0].metadata["importance"] == pytest.approx(0.9)
    assert docs[0].metadata["score"] is not None and docs[0].id == docs[0].metadata["id"]
    assert [d.page_content for d in MindcoreRetriever(memory=bob, k=1).invoke("allergic")] == ["Bob is allergic to cats"]
    assert asyncio.run(MindcoreRetriever(memory=bob, k=5).ainvoke("allergic"))[0].page_content == "Bob is allergic to cats"
    assert MindcoreRetriever(memory=alice).invoke("   ") == []
    alice.close()
    bob.close()
    store.close()


# -- two sessions through LangChain's runner -------------------------------------------------------

# The model is a function of what it is given: the history LangChain loads from the store, and the
# memories the retriever recalls. The second process can only answer from the first one's writes.
SESSION = textwrap.dedent('''
    import sys
    import warnings
    import mindcore
    from langchain_core.messages import AIMessage, HumanMessage
    from langchain_core.runnables import RunnableLambda
    from langchain_core.runnables.history import RunnableWithMessageHistory
    from mindcore.embed import HashEmbedder
    from mindcore.integrations.langchain import MindcoreChatMessageHistory, MindcoreRetriever
    from mindcore.ltm import LongTermMemory

    # LangChain 1.x marks its history runner deprecated in favour of LangGraph's checkpointers
    # (mindcore has one: MindcoreSaver); it is still the runner chat histories are made for.
    warnings.filterwarnings("ignore", message="RunnableWithMessageHistory is deprecated")
    folder, text = sys.argv[1], sys.argv[2]
    store = mindcore.open(folder)
    memory = LongTermMemory(store, user_id="ada", embedder=HashEmbedder())
    retriever = MindcoreRetriever(memory=memory, k=3)

    def model(inputs: dict) -> AIMessage:
        said = [m.content for m in inputs["history"] if isinstance(m, HumanMessage)]
        known = [d.page_content for d in retriever.invoke(inputs["input"])]
        if inputs["input"].endswith("?"):
            return AIMessage(f"Earlier you said: {' | '.join(said)}. I remember: {' | '.join(known)}.")
        memory.remember(inputs["input"])
        return AIMessage("Noted.")

    chain = RunnableWithMessageHistory(
        RunnableLambda(model),
        lambda session_id: MindcoreChatMessageHistory.open(store, session_id),
        input_messages_key="input", history_messages_key="history",
    )
    reply = chain.invoke({"input": text}, config={"configurable": {"session_id": "ada-chat"}})
    print(reply.content)
    memory.close()
    store.close()
''')


def _run(folder: Path, text: str) -> str:
    done = subprocess.run([sys.executable, "-c", SESSION, str(folder), text], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    return done.stdout.strip()


def test_a_second_process_answers_from_what_the_first_stored(tmp_path: Path) -> None:
    folder = tmp_path / "store"
    assert _run(folder, "I keep bees in my garden") == "Noted."
    assert _run(folder, "Which insects do I keep?") == (
        "Earlier you said: I keep bees in my garden. I remember: I keep bees in my garden."
    )
    history = MindcoreChatMessageHistory.open(str(folder), "ada-chat")
    assert [type(m).__name__ for m in history.messages] == ["HumanMessage", "AIMessage"] * 2
    history.close()
