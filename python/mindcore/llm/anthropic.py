"""Claude models through Anthropic's Messages API (the official ``anthropic`` package), behind the
same ``complete`` and ``chat`` as every mindcore LLM: OpenAI-form messages and tools in,
:class:`~mindcore.llm.Reply` out."""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from mindcore.errors import InvalidInputError, InvalidMessageError, LLMError
from mindcore.llm.base import Message, check_max_tokens
from mindcore.llm.messages import normalize_messages
from mindcore.llm.reply import Reply, ToolCall, ToolChoice, Tools, Usage, openai_tool_choice, openai_tools
from mindcore.validation import check_int, check_number, check_text, describe

if TYPE_CHECKING:
    from anthropic import Anthropic, AsyncAnthropic

__all__ = ["AnthropicLLM"]

#: Anthropic requires a reply length; this one is used when a call gives none.
DEFAULT_MAX_TOKENS = 4096
_MAX_CHARS = 4_000_000
_STOP = {"end_turn": "stop", "stop_sequence": "stop", "tool_use": "tool_calls", "max_tokens": "length"}


class AnthropicLLM:
    """A Claude model as a :class:`~mindcore.llm.LLM` and :class:`~mindcore.llm.ChatLLM`.

    Settings come from the arguments, else the environment (``ANTHROPIC_API_KEY``,
    ``ANTHROPIC_BASE_URL``, ``ANTHROPIC_MODEL``). The SDK retries connection errors, timeouts,
    HTTP 408/409/429 and 5xx ``max_retries`` times with backoff; what still fails raises
    :class:`~mindcore.errors.LLMError` naming the model and the cause.

    Messages are OpenAI's form, converted for the Messages API: system messages become the
    ``system`` parameter, an assistant's ``tool_calls`` become ``tool_use`` blocks and ``tool``
    messages ``tool_result`` blocks of one user message.

    Examples
    --------
    >>> llm = AnthropicLLM("claude-sonnet-4-5", api_key="sk-ant-...")  # doctest: +SKIP
    >>> llm.chat([{"role": "user", "content": "Weather in Paris?"}], tools=toolset).tool_calls  # doctest: +SKIP
    (ToolCall(id='toolu_01...', name='get_weather', arguments='{"city": "Paris"}'),)
    """

    def __init__(
        self,
        model: str | None = None,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = 60,
        max_retries: int = 3,
        temperature: float | None = None,
    ) -> None:
        resolved = model or os.environ.get("ANTHROPIC_MODEL", "").strip()
        if not resolved:
            raise InvalidInputError("model: not given and ANTHROPIC_MODEL is not set")
        check_text(resolved, "model", max_chars=200)
        self.model: str = resolved
        self.api_key = api_key or os.environ.get("ANTHROPIC_API_KEY") or None
        self.base_url = base_url or os.environ.get("ANTHROPIC_BASE_URL") or None
        self.timeout = check_number(timeout, "timeout", minimum=0.001)
        self.max_retries = check_int(max_retries, "max_retries", minimum=0)
        self.temperature = None if temperature is None else check_number(temperature, "temperature", minimum=0)

    def __repr__(self) -> str:
        return f"AnthropicLLM(model={self.model!r})"

    @functools.cached_property
    def _client(self) -> Anthropic:
        from anthropic import Anthropic

        return Anthropic(api_key=self.api_key, base_url=self.base_url, timeout=self.timeout,
                         max_retries=self.max_retries)

    @functools.cached_property
    def _aclient(self) -> AsyncAnthropic:
        from anthropic import AsyncAnthropic

        return AsyncAnthropic(api_key=self.api_key, base_url=self.base_url, timeout=self.timeout,
                              max_retries=self.max_retries)

    # -- LLM ------------------------------------------------------------------------------------

    def complete(self, messages: Sequence[Message], *, max_tokens: int | None = None, json: bool = False) -> str:
        """The reply's text (``json=True`` asks for a JSON object in the system prompt: the
        Messages API has no JSON mode)."""
        return self.chat(_json_mode(messages, json), max_tokens=max_tokens).content

    async def acomplete(self, messages: Sequence[Message], *, max_tokens: int | None = None, json: bool = False) -> str:
        return (await self.achat(_json_mode(messages, json), max_tokens=max_tokens)).content

    # -- ChatLLM --------------------------------------------------------------------------------

    def chat(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: Tools | None = None,
        tool_choice: ToolChoice = "auto",
        max_tokens: int | None = None,
    ) -> Reply:
        """The model's :class:`~mindcore.llm.Reply` to ``messages``, which may call ``tools``."""
        params = self._params(messages, tools, tool_choice, max_tokens)
        try:
            response = self._client.messages.create(**params)
        except Exception as exc:
            raise self._fail(exc) from exc
        return self._reply(response)

    async def achat(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: Tools | None = None,
        tool_choice: ToolChoice = "auto",
        max_tokens: int | None = None,
    ) -> Reply:
        params = self._params(messages, tools, tool_choice, max_tokens)
        try:
            response = await self._aclient.messages.create(**params)
        except Exception as exc:
            raise self._fail(exc) from exc
        return self._reply(response)

    # -- conversion -----------------------------------------------------------------------------

    def _params(self, messages: Sequence[Mapping[str, Any]], tools: Tools | None, tool_choice: ToolChoice,
                max_tokens: int | None) -> dict[str, Any]:
        system, converted = to_anthropic(
            normalize_messages(messages, max_chars=_MAX_CHARS, strict=True, json_arguments=False))
        params: dict[str, Any] = {"model": self.model, "messages": converted,
                                  "max_tokens": check_max_tokens(max_tokens) or DEFAULT_MAX_TOKENS}
        if system:
            params["system"] = system
        specs = openai_tools(tools)
        if specs:
            params["tools"] = [{"name": s["function"]["name"], "description": s["function"].get("description", ""),
                                "input_schema": s["function"].get("parameters") or {"type": "object"}} for s in specs]
            params["tool_choice"] = _tool_choice(tool_choice, [s["function"]["name"] for s in specs])
        elif tool_choice not in ("auto", "none"):
            raise InvalidInputError(f"tool_choice: {tool_choice!r} needs tools")
        if self.temperature is not None:
            params["temperature"] = self.temperature
        return params

    def _reply(self, response: Any) -> Reply:
        try:
            texts: list[str] = []
            calls: list[ToolCall] = []
            for block in response.content:
                if block.type == "text":
                    texts.append(block.text)
                elif block.type == "tool_use":
                    calls.append(ToolCall(str(block.id), str(block.name),
                                          json.dumps(block.input, ensure_ascii=False)))
            usage = Usage(int(response.usage.input_tokens or 0), int(response.usage.output_tokens or 0))
        except (AttributeError, TypeError) as exc:
            raise LLMError(f"Anthropic model {self.model!r} failed: malformed response: {exc}") from exc
        reason = getattr(response, "stop_reason", None)
        return Reply("".join(texts), tuple(calls), usage, _STOP.get(reason, reason) if isinstance(reason, str) else None)

    def _fail(self, exc: Exception) -> LLMError:
        import anthropic

        if isinstance(exc, anthropic.APITimeoutError):
            cause = f"timed out after {self.timeout:g} s ({self.max_retries + 1} attempts)"
        elif isinstance(exc, anthropic.APIConnectionError):
            cause = f"connection failed: {exc.__cause__ or exc} ({self.max_retries + 1} attempts)"
        elif isinstance(exc, anthropic.APIStatusError):
            cause = f"HTTP {exc.status_code}: {exc.message}"
        else:
            cause = f"{type(exc).__name__}: {exc}"
        where = f" at {self.base_url}" if self.base_url else ""
        return LLMError(f"Anthropic model {self.model!r}{where} failed: {cause}")


def to_anthropic(messages: Sequence[Mapping[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    """Checked OpenAI-form messages as ``(system, messages)`` for the Messages API.

    >>> to_anthropic([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"},
    ...     {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function",
    ...      "function": {"name": "f", "arguments": "{}"}}]},
    ...     {"role": "tool", "tool_call_id": "c1", "content": "42"}])  # doctest: +NORMALIZE_WHITESPACE
    ('Be brief.', [{'role': 'user', 'content': 'Hi'},
     {'role': 'assistant', 'content': [{'type': 'tool_use', 'id': 'c1', 'name': 'f', 'input': {}}]},
     {'role': 'user', 'content': [{'type': 'tool_result', 'tool_use_id': 'c1', 'content': '42'}]}])
    """
    system: list[str] = []
    out: list[dict[str, Any]] = []
    for m in messages:
        role, content = m["role"], m.get("content") or ""
        if role in ("system", "developer"):
            system.append(content)
        elif role == "tool":
            block = {"type": "tool_result", "tool_use_id": m.get("tool_call_id"), "content": content}
            if out and out[-1]["role"] == "user" and isinstance(out[-1]["content"], list) \
                    and out[-1]["content"] and out[-1]["content"][0].get("type") == "tool_result":
                out[-1]["content"].append(block)  # results of one step travel in one user message
            else:
                out.append({"role": "user", "content": [block]})
        elif role == "assistant" and m.get("tool_calls"):
            blocks: list[dict[str, Any]] = [{"type": "text", "text": content}] if content else []
            for call in m["tool_calls"]:
                blocks.append({"type": "tool_use", "id": call["id"], "name": call["function"]["name"],
                               "input": _arguments(call["function"].get("arguments", "{}"))})
            out.append({"role": "assistant", "content": blocks})
        else:
            out.append({"role": role, "content": content})
    return "\n\n".join(system), out


def _arguments(raw: Any) -> dict[str, Any]:
    """A tool call's arguments as the object ``tool_use.input`` must be (malformed text the model
    wrote travels as ``{"_raw": text}`` so the conversation stays valid)."""
    if isinstance(raw, Mapping):
        return dict(raw)
    try:
        value = json.loads(raw) if str(raw).strip() else {}
    except json.JSONDecodeError:
        return {"_raw": raw}
    return value if isinstance(value, dict) else {"_raw": raw}


def _tool_choice(choice: ToolChoice, names: Sequence[str]) -> dict[str, Any]:
    chosen = openai_tool_choice(choice, names)  # checks it, in OpenAI's terms
    if isinstance(chosen, dict):
        return {"type": "tool", "name": chosen["function"]["name"]}
    return {"type": "any"} if chosen == "required" else {"type": chosen}


def _json_mode(messages: Sequence[Message], json_mode: bool) -> list[dict[str, Any]]:
    if not isinstance(json_mode, bool):
        raise InvalidMessageError(f"json: expected bool, got {describe(json_mode)}")
    out = [dict(m) for m in messages]
    if json_mode:
        out.insert(0, {"role": "system", "content": "Answer with one JSON object and nothing else."})
    return out
