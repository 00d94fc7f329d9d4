"""`Agent`: the loop that ties a model to Mind, working memory, long-term memory and context.

Each turn builds the prompt from the capabilities (each renders its own block), fits it to the
token budget, offers the capabilities' tools and the user's, and calls the model until it answers
or ``max_steps`` model calls are spent, running every tool call it makes. After the turn the Mind
run flushes (an error flush if the turn did not end in an answer), long-term memory extracts from
the exchange in the background, and the exchange joins the thread's history.
"""

from __future__ import annotations

import asyncio
import functools
import json
import threading
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from mindcore.agent.events import (
    AgentEvent,
    AgentResult,
    Final,
    ModelCall,
    StopReason,
    ToolCallEvent,
    ToolResultEvent,
    ToolRun,
)
from mindcore.agent.prompt import Prompt, PromptParts, build_prompt
from mindcore.context.tools import tools_toolset
from mindcore.context.types import Tool
from mindcore.errors import InvalidInputError, InvalidTypeError, LLMError, SecretRefusedError
from mindcore.llm.reply import ChatLLM, Reply, ToolCall, Usage
from mindcore.policy import SecretPolicy
from mindcore.store import StoreLike, resolve_store
from mindcore.toolspec import Toolset, ToolSpec, function_tool
from mindcore.validation import check_int, check_text, describe

__all__ = ["Agent"]

#: Longest user message a turn accepts.
MAX_MESSAGE_CHARS = 200_000
#: Memories recalled per turn.
RECALL_K = 5
#: Tools discovered per turn (with ``context=``), and the longest query discovery is given.
DISCOVER_LIMIT = 5
MAX_QUERY_CHARS = 2_000


class Agent:
    """An LLM agent with memory: ``agent.run("...")`` answers one message, calling tools as needed.

    Parameters
    ----------
    store
        A :class:`~mindcore.store.Store` or anything :func:`mindcore.open` takes; every capability
        the agent makes keeps its data there.
    llm
        A chat model that can call tools (:class:`~mindcore.llm.ChatLLM`:
        :class:`~mindcore.llm.OpenAICompatibleLLM`, :class:`~mindcore.llm.ScriptedLLM`, ...).
    name
        The agent's name: its Mind (goals, beliefs, reflections) is ``Mind(store, agent=name)``.
    user_id
        Whose long-term memories to recall and extract (``"default"`` when not given).
    thread_id
        The conversation: its working memory and, with ``context=``, its session.
    instructions
        The system prompt's first part, never cut by the budget.
    tools
        The user's tools: Python functions (sync or async; schema from type hints), ``(ToolSpec,
        handler)`` pairs, :class:`~mindcore.context.Tool` objects with handlers, or Toolsets.
    mind, working_memory, long_term_memory
        ``True`` to make the capability on ``store``, an instance to use it, ``False`` for none.
    context
        A :class:`~mindcore.context.Context`: the thread's history lives in its session (assembled
        newest first within the budget); the session's tools (``agentified_discover``,
        ``agentified_get_messages``, the tools it holds, the always-included ones) are offered, and
        the registered tools that best match each message (those with a handler here) for that turn.
    consciousness
        A :class:`~mindcore.consciousness.Consciousness` (or ``True`` to make one named ``name``):
        each turn is a think cycle. The thread's history is the consciousness' (compacted by its own
        budget), the message arrives as an event of ``inbox`` and shows in the cycle's INBOX
        message, and the cycle is saved (then its events acknowledged) only when the model answers.
        :meth:`think` runs a cycle over whatever the inbox holds. Not with ``context=``.
    inbox
        The consciousness' :class:`~mindcore.consciousness.Inbox` (default: ``Inbox(store,
        agent=name)``).
    max_steps
        Model calls per turn at most; a model still calling tools then ends the turn with
        ``stop_reason="max_steps"``.
    prompt_budget
        Tokens (o200k) for the system prompt, the history and the message; tool specs not counted.
    secrets
        The :class:`~mindcore.policy.SecretPolicy` every input of a turn passes before the model is
        called (default: refuse). A message that looks like a secret ends the turn with
        ``stop_reason="refused"`` and the reason in ``error``: no model call, no tool run, no write
        (``action="redact"`` sends it on with the secret replaced). Instructions are screened when
        the agent is made. A tool result reaches the model, and the history, with any secret in
        it redacted, whatever the action.

    Examples
    --------
    >>> import mindcore
    >>> from mindcore.embed import HashEmbedder
    >>> from mindcore.llm import Reply, ScriptedLLM, ToolCall
    >>> llm = ScriptedLLM([Reply(tool_calls=(ToolCall("c1", "mind_believe",
    ...     '{"content": "The user prefers tea", "confidence": "high"}'),)), "Noted: tea it is."])
    >>> agent = mindcore.Agent("memory://agent-doc", llm, name="helper", embedder=HashEmbedder(),
    ...                        long_term_memory=False)
    >>> result = agent.run("I prefer tea over coffee.")
    >>> result.text, [t.name for t in result.tool_calls], result.stop_reason
    ('Noted: tea it is.', ['mind_believe'], 'final')
    >>> "The user prefers tea" in agent.mind.header()
    True
    """

    def __init__(
        self,
        store: StoreLike,
        llm: ChatLLM,
        *,
        name: str = "agent",
        user_id: str | None = None,
        thread_id: str | None = None,
        instructions: str = "",
        tools: Iterable[Any] | Toolset | None = None,
        mind: Any = True,
        working_memory: Any = True,
        long_term_memory: Any = True,
        context: Any = None,
        consciousness: Any = None,
        inbox: Any = None,
        max_steps: int = 8,
        prompt_budget: int = 8000,
        embedder: Any = None,
        secrets: SecretPolicy | None = None,
    ) -> None:
        if not callable(getattr(llm, "chat", None)):
            raise InvalidTypeError(f"llm: expected a chat model with chat(messages, tools=...), got {describe(llm)}")
        check_text(name, "name", max_chars=200)
        for label, value in (("user_id", user_id), ("thread_id", thread_id)):
            if value is not None:
                check_text(value, label, max_chars=1000)
        check_text(instructions, "instructions", max_chars=MAX_MESSAGE_CHARS, allow_blank=True)
        if secrets is not None and not isinstance(secrets, SecretPolicy):
            raise InvalidTypeError(f"secrets: expected a SecretPolicy, got {describe(secrets)}")
        self.secrets = secrets or SecretPolicy()
        # Tool results are redacted whatever the policy's action: the turn goes on without the secret.
        self._tool_results = SecretPolicy(action="redact", scanner=self.secrets.scanner,
                                          placeholder=self.secrets.placeholder)
        instructions = self.secrets.screen(instructions, "instructions")
        self.max_steps = check_int(max_steps, "max_steps", minimum=1)
        self.prompt_budget = check_int(prompt_budget, "prompt_budget", minimum=1)
        self.llm = llm
        self.name = name
        self.user_id = user_id or "default"
        self.thread_id = thread_id or "default"
        self.instructions = instructions
        self._user_tools = _user_toolset(tools)
        self.store = resolve_store(store)
        self._owns_store = self.store is not store
        self._made: list[Any] = []  # capabilities this agent made (and closes)
        if embedder is None and (mind is True or long_term_memory is True):
            from mindcore.embed import default_embedder

            embedder = self.store.embedder or default_embedder()
        self.mind = self._capability(mind, "mind", lambda: _mind(self.store, name, embedder))
        self.working_memory = self._capability(working_memory, "working_memory",
                                               lambda: _working(self.store, self.thread_id))
        self.long_term_memory = self._capability(long_term_memory, "long_term_memory",
                                                 lambda: _ltm(self.store, self.user_id, name, embedder, llm))
        self.context = context
        self.session = context.session(self.thread_id, namespace=self.user_id) if context is not None else None
        if consciousness is not None and consciousness is not False and context is not None:
            raise InvalidInputError("context and consciousness: give one; each keeps the thread's history")
        self.consciousness = self._capability(consciousness, "consciousness", lambda: _consciousness(self.store, name))
        self.inbox = inbox
        if self.consciousness is not None and inbox is None:
            self.inbox = _inbox(self.store, name)
            self._made.append(self.inbox)
        self._history: list[dict[str, Any]] = []  # the thread's messages when there is no context
        self._lock = threading.Lock()
        self._check_tool_names()

    def __repr__(self) -> str:
        parts = [n for n in ("mind", "working_memory", "long_term_memory", "context") if getattr(self, n) is not None]
        return f"Agent(name={self.name!r}, user_id={self.user_id!r}, thread_id={self.thread_id!r}, with={parts})"

    # -- public ---------------------------------------------------------------------------------

    def run(self, message: str) -> AgentResult:
        """Answer ``message``: one turn, tool calls included (see :class:`AgentResult`)."""
        result: AgentResult | None = None
        for event in self.stream(message):
            if isinstance(event, Final):
                result = event.result
        assert result is not None
        return result

    def think(self, query: str | None = None) -> AgentResult:
        """One think cycle over the events waiting in the inbox (a timer wake when there are none);
        needs ``consciousness=``. ``query`` is what long-term memory recalls for (default: none)."""
        if self.consciousness is None:
            raise InvalidInputError("think() runs a consciousness cycle: make the agent with consciousness=")
        if query is not None:
            check_text(query, "query", max_chars=MAX_MESSAGE_CHARS)
        result: AgentResult | None = None
        for event in self._steps(None, query):
            if isinstance(event, Final):
                result = event.result
        assert result is not None
        return result

    def stream(self, message: str) -> Iterator[AgentEvent]:
        """The turn's step events as they happen: :class:`ModelCall`, :class:`ToolCallEvent`,
        :class:`ToolResultEvent`, and last :class:`Final` with the result."""
        check_text(message, "message", max_chars=MAX_MESSAGE_CHARS)
        return self._steps(message, message)

    def _screened(self, message: str | None) -> tuple[str | None, AgentResult | None]:
        """The message as the secret policy lets it through, or the refused turn's result."""
        if message is None:
            return None, None
        try:
            return self.secrets.screen(message, "message"), None
        except SecretRefusedError as exc:
            return None, AgentResult("", [], [], Usage(), 0, "refused", str(exc))

    def _steps(self, message: str | None, query: str | None) -> Iterator[AgentEvent]:
        screened, refused = self._screened(message)
        if refused is not None:  # before anything runs: no model call, no tool, no write
            yield Final(refused)
            return
        if message is not None and screened != message:
            message = query = screened
        with self._lock:  # one turn of a thread at a time: its history is a sequence
            turn = _Turn(self, message, query)
            try:
                while True:
                    step = turn.next_step()
                    if step is None:
                        break
                    yield step
                    try:
                        reply = self.llm.chat(turn.messages, tools=turn.toolset)
                    except LLMError as exc:
                        turn.failed(exc)
                        break
                    for call in turn.on_reply(reply):
                        yield ToolCallEvent(turn.steps, call.id, call.name, call.arguments)
                        ran = turn.on_result(call, turn.toolset.call(call.name, call.arguments))
                        yield ToolResultEvent(turn.steps, ran)
            except BaseException as exc:
                turn.abort(exc)
                raise
            yield Final(turn.finish())

    async def arun(self, message: str) -> AgentResult:
        """Async twin of :meth:`run`."""
        result: AgentResult | None = None
        async for event in self.astream(message):
            if isinstance(event, Final):
                result = event.result
        assert result is not None
        return result

    async def astream(self, message: str) -> AsyncIterator[AgentEvent]:
        """Async twin of :meth:`stream`: the model through ``achat``, tools off the event loop."""
        check_text(message, "message", max_chars=MAX_MESSAGE_CHARS)
        screened, refused = await asyncio.to_thread(self._screened, message)
        if refused is not None:  # before anything runs: no model call, no tool, no write
            yield Final(refused)
            return
        message = str(screened)
        await asyncio.to_thread(self._lock.acquire)
        try:
            turn = await asyncio.to_thread(_Turn, self, message, message)
            try:
                while True:
                    step = turn.next_step()
                    if step is None:
                        break
                    yield step
                    try:
                        reply = await self.llm.achat(turn.messages, tools=turn.toolset)
                    except LLMError as exc:
                        turn.failed(exc)
                        break
                    for call in turn.on_reply(reply):
                        yield ToolCallEvent(turn.steps, call.id, call.name, call.arguments)
                        result = await turn.toolset.acall(call.name, call.arguments)
                        yield ToolResultEvent(turn.steps, turn.on_result(call, result))
            except BaseException as exc:
                await asyncio.to_thread(turn.abort, exc)
                raise
            yield Final(await asyncio.to_thread(turn.finish))
        finally:
            self._lock.release()

    @property
    def history(self) -> list[dict[str, Any]]:
        """The thread's messages so far (from the consciousness or the context's session when there is one)."""
        if self.consciousness is not None:
            return [m for m in self.consciousness.messages if m["role"] != "system"]
        if self.session is not None:
            messages, after = [], 0
            while True:  # page forward through the whole session
                page = self.session.get_messages(limit=1000, after_seq=after)
                messages += [_plain(m) for m in page.messages]
                if not page.has_more or not page.messages:
                    return messages
                after = page.messages[-1].seq
        return [dict(m) for m in self._history]

    def close(self) -> None:
        """Wait for background extraction, then close what the agent made (and the store it opened)."""
        for capability in reversed(self._made):
            capability.close()
        self._made.clear()
        if self._owns_store:
            self.store.close()

    def __enter__(self) -> Agent:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- parts ----------------------------------------------------------------------------------

    def _capability(self, value: Any, label: str, make: Callable[[], Any]) -> Any:
        if value is True:
            made = make()
            self._made.append(made)
            return made
        if value is False or value is None:
            return None
        if not callable(getattr(value, "close", None)):
            raise InvalidTypeError(f"{label}: expected True, False or an instance, got {describe(value)}")
        return value

    def _check_tool_names(self) -> None:
        ours: list[str] = []
        for capability in (self.mind, self.working_memory, self.long_term_memory):
            if capability is not None:
                ours += capability.tools.names
        clash = sorted(set(ours) & set(self._user_tools.names))
        if clash:
            raise InvalidInputError(f"tools: {', '.join(clash)} would shadow the agent's own tool of that name")

    def _prompt(self, message: str, query: str | None, mind_header: str) -> Prompt:
        """The prompt for ``message`` (the system prompt alone for a consciousness cycle, whose
        history and INBOX message the cycle supplies)."""
        memories: list[Any] = []
        render: Callable[[Sequence[Any]], str] | None = None
        if self.long_term_memory is not None and query:
            memories = self.long_term_memory.recall(query, k=RECALL_K)
            # Dated lines: of two memories that may disagree, the model sees which is newer.
            render = functools.partial(self.long_term_memory.render, dates=True)
        history: list[dict[str, Any]] = list(self._history) if self.consciousness is None else []
        if self.session is not None:
            assembled = self.session.context.messages(strategy="recent", max_tokens=self.prompt_budget).assemble()
            history = [_plain(m) for m in assembled.messages]
        parts = PromptParts(
            instructions=self.instructions,
            message=message,
            mind_header=mind_header,
            working_memory=self.working_memory.render() if self.working_memory is not None else "",
            memories=memories,
            memory_lines=[render([m]) for m in memories] if render else [],
            render_memories=render,
            history=history,
        )
        return build_prompt(parts, self.prompt_budget)


class _Turn:
    """One turn's state, driven by :meth:`Agent.stream` or :meth:`Agent.astream` (the same steps,
    sync or async): the Mind run, the messages, the tools, the usage."""

    def __init__(self, agent: Agent, message: str | None, query: str | None) -> None:
        self.agent = agent
        self.run = agent.mind.run() if agent.mind is not None else None
        self.cycle: Any = None
        self._cycle_scope: Any = None
        try:
            prompt = agent._prompt(message or "", query, self.run.header if self.run is not None else "")
            toolsets = [agent._user_tools]
            if self.run is not None:
                toolsets.append(self.run.tools)
            for capability in (agent.working_memory, agent.long_term_memory):
                if capability is not None:
                    toolsets.append(capability.tools)
            if agent.session is not None:
                # The session's tools (agentified_discover, the tools it holds, the always-included
                # ones), then this turn's best matches: offered for the turn, not held (what the
                # model finds with agentified_discover is what the session keeps).
                session_tools = agent.session.tools.without(agent._user_tools.names)
                taken = {*session_tools.names, *agent._user_tools.names}
                found = [t.tool for t in agent.context.discover((message or "")[:MAX_QUERY_CHARS], DISCOVER_LIMIT)
                         if t.name not in taken and t.tool.handler is not None]
                toolsets += [session_tools, tools_toolset(found)]
            self.toolset = Toolset.merge(*toolsets)
            self.messages: list[dict[str, Any]] = prompt.messages
            self.new: list[dict[str, Any]] = [prompt.messages[-1]]
            if agent.consciousness is not None:
                self._begin_cycle(prompt.messages[0]["content"], message)
        except BaseException as exc:
            self.abort(exc)
            raise
        self.prompt_tokens = prompt.tokens
        self.dropped = prompt.dropped
        self.tool_runs: list[ToolRun] = []
        self.usage = Usage()
        self.steps = 0
        self.text = ""
        self.stop: StopReason | None = None
        self.error: str | None = None
        self.pending_calls: list[ToolCall] = []

    def next_step(self) -> ModelCall | None:
        """The next model call, or None when the turn is over."""
        if self.stop is not None:
            return None
        if self.steps >= self.agent.max_steps:
            self.stop = "max_steps"
            self.error = f"the model was still calling tools after {self.agent.max_steps} model calls (max_steps)"
            return None
        self.steps += 1
        return ModelCall(self.steps, self.prompt_tokens)

    def on_reply(self, reply: Reply) -> list[ToolCall]:
        """Take the model's reply; the tool calls to run now (none: the turn is answered)."""
        self.usage = self.usage + reply.usage
        message = reply.message()
        self.messages.append(message)
        self.new.append(message)
        if not reply.tool_calls:
            self.text = reply.content
            self.stop = "final"
        return list(reply.tool_calls)

    def on_result(self, call: ToolCall, result: dict[str, Any]) -> ToolRun:
        result = self.agent._tool_results.screen_value(result, f"{call.name} result")  # secrets redacted
        ran = ToolRun(call.id, call.name, call.arguments, result)
        self.tool_runs.append(ran)
        message = {"role": "tool", "tool_call_id": call.id, "content": json.dumps(result, ensure_ascii=False,
                                                                                   default=str)}
        self.messages.append(message)
        self.new.append(message)
        return ran

    def failed(self, exc: LLMError) -> None:
        self.stop = "llm_error"
        self.error = str(exc)

    def _begin_cycle(self, system: str, message: str | None) -> None:
        """Start the consciousness cycle: the message (if any) goes in as an inbox event, and the
        cycle's history and INBOX message replace the prompt's."""
        agent = self.agent
        if message is not None:
            agent.inbox.push({"kind": "space_message", "space": agent.thread_id, "sender": agent.user_id,
                              "sender_type": "human", "text": message})
        self._cycle_scope = agent.consciousness.cycle(system_prompt=system, inbox=agent.inbox)
        self.cycle = self._cycle_scope.__enter__()
        self.messages = self.cycle.messages
        self.new = [self.cycle.inbox_message]

    def abort(self, exc: BaseException | None = None) -> None:
        """The turn broke off (an exception): the Mind run's drafts are error-flushed and the
        cycle's events given back, nothing saved."""
        if self.run is not None and not self.run.closed:
            self.run.flush(error=True)
        self._end_cycle(exc or RuntimeError("the turn did not end in an answer"))

    def _end_cycle(self, exc: BaseException | None) -> None:
        scope, self._cycle_scope = self._cycle_scope, None
        if scope is None:
            return
        if exc is None:
            scope.__exit__(None, None, None)  # saves the cycle, then acknowledges its events
        else:
            scope.__exit__(type(exc), exc, exc.__traceback__)  # saves nothing, gives the events back

    def finish(self) -> AgentResult:
        """Flush the Mind run and, for an answered turn, keep the exchange (history, session) and
        hand it to long-term memory's background extraction."""
        assert self.stop is not None
        ok = self.stop == "final"
        agent = self.agent
        if self.cycle is not None:
            try:
                if ok:
                    self.cycle.append([_storable(m) for m in self.new[1:]])
            except BaseException as exc:  # e.g. the secret policy refused the answer: nothing is saved
                self.abort(exc)
                raise
            self._end_cycle(None if ok else RuntimeError(self.error or "the turn did not end in an answer"))
        if self.run is not None:
            self.run.flush(error=not ok)
        if ok:
            if self.cycle is not None:
                pass  # the consciousness keeps the exchange
            elif agent.session is not None:
                agent.session.append(self.new)
            else:
                agent._history += self.new
            ltm = agent.long_term_memory
            if ltm is not None and ltm.extractor is not None:
                ltm.remember_conversation_in_background([self.new[0], self.new[-1]])
        return AgentResult(self.text, self.new, self.tool_runs, self.usage, self.steps, self.stop, self.error,
                           self.prompt_tokens, self.dropped)


# -- helpers ------------------------------------------------------------------------------------


def _mind(store: Any, name: str, embedder: Any) -> Any:
    from mindcore.mind import Mind

    return Mind(store, agent=name, embedder=embedder)


def _working(store: Any, thread_id: str) -> Any:
    from mindcore.working import WorkingMemory

    return WorkingMemory(store, thread_id=thread_id)


def _ltm(store: Any, user_id: str, name: str, embedder: Any, llm: Any) -> Any:
    from mindcore.ltm import LongTermMemory

    # The agent's own model extracts memories and judges whether a new one updates a stored one.
    extractor = llm if callable(getattr(llm, "complete", None)) else None
    return LongTermMemory(store, user_id=user_id, namespace=name, embedder=embedder, extractor=extractor,
                          resolver=extractor)


def _consciousness(store: Any, name: str) -> Any:
    from mindcore.consciousness import Consciousness

    return Consciousness(store, agent=name)


def _inbox(store: Any, name: str) -> Any:
    from mindcore.consciousness import Inbox

    return Inbox(store, agent=name)


def _storable(message: dict[str, Any]) -> dict[str, Any]:
    """``message`` as a history keeps it: tool-call arguments the model wrote as malformed JSON are
    kept as ``{"_raw": text}`` (the tool error the model got already explains them)."""
    calls = message.get("tool_calls")
    if not calls:
        return message
    fixed = []
    for call in calls:
        arguments = call["function"].get("arguments", "{}")
        try:
            ok = isinstance(json.loads(arguments or "{}"), dict)
        except (TypeError, ValueError):
            ok = False
        if not ok:
            call = {**call, "function": {**call["function"], "arguments": json.dumps({"_raw": arguments})}}
        fixed.append(call)
    return {**message, "tool_calls": fixed}


def _plain(message: Mapping[str, Any]) -> dict[str, Any]:
    out = {"role": message["role"], "content": message.get("content") or ""}
    for key in ("tool_calls", "tool_call_id"):
        if message.get(key) is not None:
            out[key] = message[key]
    return out


def _user_toolset(tools: Iterable[Any] | Toolset | None) -> Toolset:
    """The user's tools as one Toolset (a duplicate name is an error)."""
    if tools is None:
        return Toolset()
    if isinstance(tools, Toolset):
        return tools
    if isinstance(tools, str | bytes | Mapping) or not isinstance(tools, Iterable):
        raise InvalidTypeError(f"tools: expected a list of tools, got {describe(tools)}")
    parts: list[Toolset] = []
    for i, tool in enumerate(tools):
        if isinstance(tool, Toolset):
            parts.append(tool)
        elif isinstance(tool, tuple) and len(tool) == 2 and isinstance(tool[0], ToolSpec):
            parts.append(Toolset([tool]))
        elif isinstance(tool, Tool):
            if tool.handler is None:
                raise InvalidInputError(f"tools[{i}]: tool {tool.name!r} has no handler")
            parts.append(tools_toolset([tool]))
        elif callable(tool):
            parts.append(Toolset([function_tool(tool)]))
        else:
            raise InvalidTypeError(f"tools[{i}]: expected a function, a (ToolSpec, handler) pair, a Tool with a "
                                   f"handler or a Toolset, got {describe(tool)}")
    return Toolset.merge(*parts) if parts else Toolset()
