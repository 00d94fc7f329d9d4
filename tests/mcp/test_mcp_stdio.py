"""``python -m mindcore.mcp`` as a real subprocess on stdio, driven by the ``mcp`` package's own
client: every tool, every resource, tool errors a model can read, and a clean shutdown."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp.client.stdio")

from _mcp_helpers import command, payload, server_env
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

import mindcore
from mindcore.embed import HashEmbedder
from mindcore.mcp.server import RESOURCE_NOT_FOUND
from mindcore.mcp.service import MemoryService

SERVER_OPTIONS = ("--agent", "support", "--user-id", "user-7", "--thread-id", "t-1", "--dataset", "shop")
SECRET = "my token is ghp_abcdefghijklmnopqrstuvwxyz0123456789"


def with_client(store: Path, scenario: Callable[[Client], Awaitable[Any]], *, mode: str = "auto") -> Any:
    """Run ``scenario`` against a fresh server subprocess on ``store``."""
    argv = command(store, *SERVER_OPTIONS)
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=server_env())

    async def main() -> Any:
        async with Client(stdio_client(params), mode=mode) as client:  # type: ignore[arg-type]
            return await scenario(client)

    return asyncio.run(main())


async def read(client: Client, uri: str) -> str:
    result = await client.read_resource(uri)
    assert len(result.contents) == 1 and result.contents[0].uri == uri
    text: str = result.contents[0].text  # type: ignore[union-attr]
    return text


async def call(client: Client, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    result = await client.call_tool(name, arguments or {})
    data = payload(result)
    assert result.is_error is False, data
    return data


async def call_failing(client: Client, name: str, arguments: Any) -> str:
    """The error text of a call that must come back as an MCP tool error."""
    result = await client.call_tool(name, arguments)
    data = payload(result)
    assert result.is_error is True, data
    assert data["status"] in ("error", "refused"), data
    message: str = data["error"]
    return message


@pytest.mark.parametrize("mode", ["auto", "legacy"])  # the 2026 protocol and the handshake era
def test_lists_every_memory_tool_and_resource(tmp_path: Path, mode: str) -> None:
    async def scenario(client: Client) -> None:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        with MemoryService(tmp_path / "same", embedder=HashEmbedder()) as service:
            expected = service.tools.mcp()  # the capabilities' own specs, as MCP entries
        assert list(tools) == [e["name"] for e in expected]
        assert {"mind_believe", "mind_recall", "working_memory_update", "ltm_recall", "ltm_remember",
                "agentified_discover", "agentified_get_messages"} <= set(tools)
        for entry in expected:
            tool = tools[entry["name"]]
            assert tool.description == entry["description"] and tool.input_schema == entry["inputSchema"]
        resources = (await client.list_resources()).resources
        assert [r.uri for r in resources] == ["mindcore://mind/header", "mindcore://working-memory"]
        templates = (await client.list_resource_templates()).resource_templates
        assert [t.uri_template for t in templates] == ["mindcore://ltm/recall/{query}"]

    with_client(tmp_path / "store", scenario, mode=mode)


def test_every_tool_and_the_resources_that_show_it(tmp_path: Path) -> None:
    store_path = tmp_path / "store"

    async def scenario(client: Client) -> None:
        # The Mind: each call a run of its own, committed when it returns.
        assert await read(client, "mindcore://mind/header") == ""
        believed = await call(client, "mind_believe", {"content": "Order #1234 shipped late", "confidence": "high"})
        assert believed["action"] == "created"
        header = await read(client, "mindcore://mind/header")
        assert "Order #1234 shipped late (high confidence)" in header
        goal = await call(client, "mind_set_goal", {"description": "Refund order #1234", "priority": "high"})
        await call(client, "mind_update_goal", {"id": goal["id"], "progress": "refund requested"})
        assert "Refund order #1234" in await read(client, "mindcore://mind/header")
        await call(client, "mind_complete_goal", {"id": goal["id"], "outcome": "refunded"})
        assert "Refund order #1234" not in await read(client, "mindcore://mind/header")
        reflected = await call(client, "mind_reflect", {"content": "Late orders need a proactive note", "pin": True})
        assert "Late orders need a proactive note" in await read(client, "mindcore://mind/header")
        await call(client, "mind_unpin_reflection", {"id": reflected["id"]})
        recalled = await call(client, "mind_recall", {"query": "order #1234 shipped late", "type": "belief"})
        assert [r["content"] for r in recalled["results"]] == ["Order #1234 shipped late"]

        # Working memory, then its block.
        assert await read(client, "mindcore://working-memory") == ""
        updated = await call(client, "working_memory_update", {"content": "Step 2: refund approved"})
        assert updated["state"] == "Step 2: refund approved"
        assert await read(client, "mindcore://working-memory") == (
            "<working_memory>\nStep 2: refund approved\n</working_memory>")

        # Long-term memory: remember, recall (tool and resource template).
        remembered = await call(client, "ltm_remember", {"text": "Prefers email over phone", "kind": "preference"})
        assert remembered["status"] == "ok"
        again = await call(client, "ltm_remember", {"text": "Prefers email over phone"})
        assert again["status"] == "duplicate"
        hits = await call(client, "ltm_recall", {"query": "prefers email or phone?", "k": 3})
        assert [m["text"] for m in hits["memories"]] == ["Prefers email over phone"]
        block = await read(client, MemoryService.recall_uri("how to contact: email or phone?"))
        assert block.startswith("<recalled-memories>") and "- [preference] Prefers email over phone" in block

        # Context: a tool registered by another process (this test), then discovered by the server.
        with mindcore.open(store_path, embedder=HashEmbedder()) as store:
            context = mindcore.Context(store, dataset="shop")
            context.register([mindcore.Tool("track_parcel", "Track a parcel by its tracking number"),
                              mindcore.Tool("issue_refund", "Refund an order to the customer")])
            context.session("t-1", namespace="user-7").append(
                [{"role": "user", "content": "Where is my parcel?"},
                 {"role": "assistant", "content": "Let me check."}])
        found = await call(client, "agentified_discover", {"query": "track my parcel", "limit": 1})
        assert [t["name"] for t in found["tools"]] == ["track_parcel"]
        page = await call(client, "agentified_get_messages", {"limit": 10})
        assert [m["content"] for m in page["messages"]] == ["Where is my parcel?", "Let me check."]

    with_client(store_path, scenario)

    # Every write landed in the store, under the names the server was given.
    with mindcore.open(store_path, embedder=HashEmbedder()) as store:
        mind = mindcore.Mind(store, agent="support")
        assert [b.content for b in mind.beliefs()] == ["Order #1234 shipped late"]
        assert mindcore.WorkingMemory(store, thread_id="t-1").state == "Step 2: refund approved"
        ltm = mindcore.LongTermMemory(store, user_id="user-7", namespace="support", embedder=HashEmbedder())
        assert [m.text for m in ltm.recall("email", k=5)] == ["Prefers email over phone"]
        ltm.close()


def test_bad_calls_are_tool_errors_the_model_reads_and_change_nothing(tmp_path: Path) -> None:
    async def scenario(client: Client) -> None:
        await call(client, "mind_believe", {"content": "The warehouse closes at 6pm"})
        await call(client, "working_memory_update", {"content": "kept"})
        header = await read(client, "mindcore://mind/header")

        wrong_type = await call_failing(client, "mind_believe", {"content": 5})
        assert "content" in wrong_type and "not of type 'string'" in wrong_type
        missing = await call_failing(client, "ltm_remember", {"kind": "preference"})
        assert "'text' is a required property" in missing
        extra = await call_failing(client, "working_memory_update", {"content": "x", "mood": "sunny"})
        assert "mood" in extra
        out_of_range = await call_failing(client, "ltm_recall", {"query": "x", "k": 10_000})
        assert "k" in out_of_range
        unknown_id = await call_failing(client, "mind_complete_goal", {"id": "no-such-goal"})
        assert "no-such-goal" in unknown_id
        unknown = await call_failing(client, "mind_forget_everything", {})
        assert "unknown tool 'mind_forget_everything'" in unknown and "mind_believe" in unknown

        # Secrets are refused by the capabilities' policy, and say so.
        refused = await client.call_tool("ltm_remember", {"text": SECRET})
        assert refused.is_error is True and payload(refused)["reason"] == "secret"
        assert "secret" in await call_failing(client, "mind_believe", {"content": SECRET})
        assert "secret" in await call_failing(client, "working_memory_update", {"content": SECRET})

        # Nothing a refused call carried was stored.
        assert await read(client, "mindcore://mind/header") == header
        assert await read(client, "mindcore://working-memory") == "<working_memory>\nkept\n</working_memory>"
        assert "ghp_" not in await read(client, MemoryService.recall_uri("token"))

        # Resources: an unknown URI is MCP's resource-not-found error; a blank query is refused.
        with pytest.raises(MCPError) as unknown_resource:
            await client.read_resource("mindcore://secrets")
        assert unknown_resource.value.code == RESOURCE_NOT_FOUND
        assert "mindcore://mind/header" in unknown_resource.value.message
        with pytest.raises(MCPError, match="blank"):
            await client.read_resource(MemoryService.recall_uri("   "))

    with_client(tmp_path / "store", scenario)


def start_serving(store: Path) -> subprocess.Popen[str]:
    """A server process, returned once it logs that its store is open."""
    proc = subprocess.Popen(command(store, "--log-level", "info"), env=server_env(), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    for line in proc.stderr:
        if "serving store" in line:
            break
    return proc


def assert_stopped_cleanly(proc: subprocess.Popen[str], store: Path) -> None:
    out, err = proc.communicate(input="", timeout=60)  # closes stdin: the client went away, if it was not yet
    assert proc.returncode == 0, err
    assert "Traceback" not in err
    assert f"closed store {store}" in err
    assert all(json.loads(line)["error"]["code"] == -32700 for line in out.splitlines())  # protocol only


@pytest.mark.parametrize("stop", ["stdin", "sigterm at start", "sigterm while reading", "sigint while reading"])
def test_exits_cleanly_when_the_client_closes_stdin_or_on_a_stop_signal(tmp_path: Path, stop: str) -> None:
    store = tmp_path / "store"
    proc = start_serving(store)
    assert proc.stdin is not None and proc.stdout is not None
    if stop.endswith("while reading"):
        # A line answered proves the reader is up; its next read of stdin then blocks, as a
        # signal usually finds it, and no signal interrupts that read.
        proc.stdin.write("not json\n")
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline())["error"]["code"] == -32700
    if stop != "stdin":
        proc.send_signal(signal.SIGINT if stop.startswith("sigint") else signal.SIGTERM)
        proc.wait(timeout=60)  # stopped by the signal, its stdin still open
    assert_stopped_cleanly(proc, store)
    with mindcore.open(store) as reopened:  # nothing left half-open
        reopened.check_writable()


def test_a_second_stop_signal_does_not_cut_the_close_short(tmp_path: Path) -> None:
    store = tmp_path / "store"
    proc = start_serving(store)
    for _ in range(5):  # an impatient supervisor: TERM, then Ctrl-C, again and again
        proc.send_signal(signal.SIGTERM)
        proc.send_signal(signal.SIGINT)
    proc.wait(timeout=60)
    assert_stopped_cleanly(proc, store)


def test_refuses_bad_options_with_a_message(tmp_path: Path) -> None:
    done = subprocess.run(command(tmp_path / "store", "--user-id", ""), env=server_env(), capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode == 2 and done.stdout == ""
    assert "mindcore mcp: user_id" in done.stderr and "Traceback" not in done.stderr


def test_help_shows_an_example() -> None:
    done = subprocess.run([sys.executable, "-m", "mindcore.mcp", "--help"], env=server_env(), capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0
    assert "mindcore mcp --store" in done.stdout and "--http" in done.stdout and "for testing" in done.stdout


def test_raw_json_rpc_arguments_missing_or_not_an_object(tmp_path: Path) -> None:
    """On the wire: missing arguments reach the tool (a tool error naming the required field);
    arguments that are not an object break the protocol itself (JSON-RPC invalid params)."""
    proc = subprocess.Popen(command(tmp_path / "store"), env=server_env(), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdin is not None and proc.stdout is not None

    def ask(message: dict[str, Any]) -> dict[str, Any]:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps(message) + "\n")
        proc.stdin.flush()
        if "id" not in message:
            return {}
        answer: dict[str, Any] = json.loads(proc.stdout.readline())
        assert answer["id"] == message["id"]
        return answer

    try:
        hello = ask({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}})
        assert hello["result"]["serverInfo"]["name"] == "mindcore"
        ask({"jsonrpc": "2.0", "method": "notifications/initialized"})
        missing = ask({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "mind_believe"}})
        assert missing["result"]["isError"] is True
        assert "'content' is a required property" in json.loads(missing["result"]["content"][0]["text"])["error"]
        listed = ask({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                      "params": {"name": "mind_believe", "arguments": ["not", "an", "object"]}})
        assert listed["error"]["code"] == -32602
        # A request the protocol's strict parser refuses (an escaped lone surrogate) is answered
        # with a parse error under its id; the server goes on serving.
        proc.stdin.write('{"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "mind_believe", '
                         '"arguments": {"content": "\\ud800"}}}\n')
        proc.stdin.flush()
        broken = json.loads(proc.stdout.readline())
        assert (broken["id"], broken["error"]["code"]) == (4, -32700)
        proc.stdin.write("{not json\n")
        proc.stdin.flush()
        garbled = json.loads(proc.stdout.readline())
        assert (garbled["id"], garbled["error"]["code"]) == (None, -32700)
        after = ask({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "mind_believe",
                                                                                "arguments": {"content": "ok"}}})
        assert after["result"]["isError"] is False
    finally:
        proc.stdin.close()
        assert proc.wait(timeout=60) == 0


def test_the_mindcore_command_serves_it_too(tmp_path: Path) -> None:
    """``mindcore mcp`` (the CLI's subcommand) is the same server as ``python -m mindcore.mcp``."""
    argv = [sys.executable, "-m", "mindcore", "mcp", *command(tmp_path / "store", *SERVER_OPTIONS)[3:]]
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=server_env())

    async def main() -> dict[str, Any]:
        async with Client(stdio_client(params)) as client:  # type: ignore[arg-type]
            assert "mind_believe" in [t.name for t in (await client.list_tools()).tools]
            return await call(client, "ltm_remember", {"text": "Prefers window seats", "kind": "preference"})

    assert asyncio.run(main())["status"] == "ok"


def test_a_stop_signal_is_recognised_bare_or_inside_a_task_groups_exception_group() -> None:
    from mindcore.mcp.command import _is_a_stop

    assert _is_a_stop(KeyboardInterrupt())
    assert _is_a_stop(BaseExceptionGroup("tasks", [KeyboardInterrupt(), BaseExceptionGroup("inner", [KeyboardInterrupt()])]))
    assert not _is_a_stop(BaseExceptionGroup("tasks", [KeyboardInterrupt(), ValueError("a real failure")]))
    assert not _is_a_stop(ValueError("a real failure"))
