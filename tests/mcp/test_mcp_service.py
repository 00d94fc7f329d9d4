"""`MemoryService`, what the MCP server serves, in process (no ``mcp`` package needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

import mindcore
from mindcore.embed import HashEmbedder
from mindcore.errors import InvalidInputError, UnknownResourceError
from mindcore.mcp import MemoryService
from mindcore.mcp.service import LTM_RECALL_TEMPLATE, MIND_HEADER_URI, WORKING_MEMORY_URI, failed


def test_serves_the_capabilities_own_tool_specs(tmp_path: Path) -> None:
    with MemoryService(tmp_path / "store", agent="a", embedder=HashEmbedder()) as service:
        own = [*service.mind.tools, *service.working_memory.tools, *service.long_term_memory.tools]
        session = [s for s in service.session.tools if s.name.startswith("agentified_")]
        assert service.tools.specs == own + session  # the same specs, none re-declared
        assert service.tools.names[-2:] == ["agentified_discover", "agentified_get_messages"]
        assert "working-memory/update" in service.tools  # the capabilities' aliases still answer


def test_tools_held_by_the_session_are_not_served(tmp_path: Path) -> None:
    with mindcore.open(tmp_path / "store", embedder=HashEmbedder()) as store:
        context = mindcore.Context(store, dataset="d")
        context.register([mindcore.Tool("send_invoice", "Send an invoice by email")])
        context.session("t", namespace="u").discover("invoice")  # now held by that session
        with MemoryService(store, user_id="u", thread_id="t", dataset="d") as service:
            assert "send_invoice" in service.session.tools
            assert "send_invoice" not in service.tools  # its handler lives in the agent that registered it
        store.check_writable()  # a store given as a Store is left open


def test_resources_read_the_prompt_blocks_and_refuse_what_is_not_served(tmp_path: Path) -> None:
    with MemoryService(tmp_path / "store", embedder=HashEmbedder()) as service:
        assert [r.uri for r in service.resources()] == [MIND_HEADER_URI, WORKING_MEMORY_URI]
        assert [t.uri for t in service.resource_templates()] == [LTM_RECALL_TEMPLATE]
        service.long_term_memory.remember("Lives in Lisbon", kind="identity")
        uri = MemoryService.recall_uri("where does the user live?")
        assert service.read(uri) == service.long_term_memory.render(
            service.long_term_memory.recall("where does the user live?", touch=False))
        with pytest.raises(UnknownResourceError, match="mindcore://mind/header"):
            service.read("mindcore://nothing")
        with pytest.raises(InvalidInputError, match="blank"):
            service.read(MemoryService.recall_uri(" "))


def test_shares_memories_with_an_agent_of_the_same_name(tmp_path: Path) -> None:
    with MemoryService(tmp_path / "store", agent="support", user_id="u", embedder=HashEmbedder()) as service:
        assert service.call("ltm_remember", {"text": "Prefers email"})["status"] == "ok"
        store = service.store
        agent = mindcore.Agent(store, llm=mindcore.llm.ScriptedLLM([]), name="support", user_id="u",
                               embedder=HashEmbedder())
        assert [m.text for m in agent.long_term_memory.recall("email")] == ["Prefers email"]
        agent.close()


def test_failed_statuses() -> None:
    assert all(failed({"status": s}) for s in ("error", "refused", "not_stored"))
    assert not any(failed({"status": s}) for s in ("ok", "duplicate", "completed"))
    assert not failed({"result": 1})


def test_bad_names_open_nothing(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="thread_id"):
        MemoryService(tmp_path / "store", thread_id="", embedder=HashEmbedder())
    assert not (tmp_path / "store").exists()
