"""Chat completions over any OpenAI-compatible HTTP endpoint (OpenAI, Azure, Ollama, vLLM, llama.cpp)."""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from mindcore._openai import AsyncClients, Endpoint, explain, request_errors, resolve_endpoint
from mindcore.errors import InvalidInputError, InvalidMessageError
from mindcore.llm.base import LLMError, Message, check_max_tokens, check_messages
from mindcore.llm.messages import normalize_messages
from mindcore.llm.reply import Reply, ToolCall, ToolChoice, Tools, Usage, openai_tool_choice, openai_tools
from mindcore.validation import check_bool

if TYPE_CHECKING:
    from openai import OpenAI

__all__ = ["MAX_MESSAGE_CHARS", "OpenAICompatibleLLM"]

#: Longest text one message (or one tool call's arguments) may carry to a model.
MAX_MESSAGE_CHARS = 4_000_000


def _wire(message: dict[str, Any]) -> dict[str, Any]:
    """A checked message as the API takes it: tool-call arguments as JSON text."""
    if not message.get("tool_calls"):
        return message

    def call(c: dict[str, Any]) -> dict[str, Any]:
        function = dict(c["function"])
        args = function.get("arguments", "{}")
        function["arguments"] = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
        return {"id": c["id"], "type": "function", "function": function}

    return {**message, "tool_calls": [call(c) for c in message["tool_calls"]]}


class OpenAICompatibleLLM:
    """An :class:`~mindcore.llm.LLM` over the OpenAI chat-completions API, with the official `openai` SDK.

    Settings come from the arguments, else the environment: ``OPENAI_BASE_URL`` (default
    ``https://api.openai.com/v1``), ``OPENAI_API_KEY`` (optional for other hosts: local servers
    ignore it) and ``OPENAI_MODEL``. For Azure OpenAI use its v1 endpoint,
    ``https://<resource>.openai.azure.com/openai/v1``, with the resource's key.

    Failed requests (connection errors, timeouts, HTTP 408/409/429/5xx) are retried `max_retries`
    times with exponential backoff and jitter, honouring ``Retry-After``; what still fails raises
    :class:`~mindcore.llm.LLMError` naming the endpoint and the cause. Models that refuse
    ``max_tokens`` (OpenAI's reasoning models) are retried once with ``max_completion_tokens``, and
    the client remembers.

    Parameters
    ----------
    model
        Model name (else ``OPENAI_MODEL``).
    base_url, api_key
        Endpoint and key (else ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY``).
    timeout
        Seconds per attempt.
    max_retries
        Retries after the first attempt.
    temperature
        Sampling temperature; None leaves the server's default.

    Examples
    --------
    >>> llm = OpenAICompatibleLLM("llama3.2", base_url="http://localhost:11434/v1")  # Ollama
    >>> llm.complete([{"role": "user", "content": "Say hi"}], max_tokens=5)  # doctest: +SKIP
    'Hi!'
    """

    def __init__(
        self,
        model: str | None = None,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 60,
        max_retries: int = 3,
        temperature: float | None = None,
    ) -> None:
        self.endpoint: Endpoint = resolve_endpoint(
            model=model,
            base_url=base_url,
            api_key=api_key,
            model_env="OPENAI_MODEL",
            timeout=timeout,
            max_retries=max_retries,
        )
        if temperature is not None and (
            isinstance(temperature, bool) or not isinstance(temperature, int | float) or not math.isfinite(temperature)
        ):
            raise TypeError(f"temperature: expected a finite number or None, got {temperature!r}")
        self.temperature = temperature
        self._token_param = "max_tokens"
        self._aclients = AsyncClients(self.endpoint)

    @property
    def model(self) -> str:
        return self.endpoint.model

    @property
    def base_url(self) -> str:
        return self.endpoint.base_url

    @functools.cached_property
    def _client(self) -> OpenAI:
        return self.endpoint.sync_client()  # built on first use: importing `openai` takes ~0.5 s

    def _where(self) -> str:
        return f"chat model {self.model!r} at POST {self.endpoint.url('chat/completions')}"

    def _params(self, messages: Sequence[Message], max_tokens: int | None, json: bool) -> dict[str, Any]:
        if not isinstance(json, bool):
            raise TypeError(f"json: expected bool, got {type(json).__name__}")
        params: dict[str, Any] = {"model": self.model, "messages": check_messages(messages)}
        max_tokens = check_max_tokens(max_tokens)
        if max_tokens is not None:
            params[self._token_param] = max_tokens
        if json:
            params["response_format"] = {"type": "json_object"}
        if self.temperature is not None:
            params["temperature"] = self.temperature
        return params

    def _switch_token_param(self, exc: Exception, params: dict[str, Any]) -> bool:
        """After a 400 that asks for ``max_completion_tokens``, rename the parameter; True if retrying helps."""
        import openai

        if (
            isinstance(exc, openai.BadRequestError)
            and "max_tokens" in params
            and "max_completion_tokens" in str(exc.message)
        ):
            self._token_param = "max_completion_tokens"
            params["max_completion_tokens"] = params.pop("max_tokens")
            return True
        return False

    def _text(self, response: Any) -> str:
        try:
            choices = response.choices
            if not choices:
                raise LLMError(f"{self._where()} failed: malformed response: no choices")
            choice = choices[0]
            content = choice.message.content
        except (AttributeError, TypeError, IndexError) as exc:
            raise LLMError(f"{self._where()} failed: malformed response: {exc}") from exc
        if not isinstance(content, str):
            reason = getattr(choice, "finish_reason", None)
            refusal = getattr(choice.message, "refusal", None)
            detail = f"refusal: {refusal!r}" if refusal else f"finish_reason={reason!r}"
            raise LLMError(f"{self._where()} returned no text ({detail})")
        return content

    def _fail(self, exc: Exception) -> LLMError:
        return LLMError(f"{self._where()} failed: {explain(exc, self.endpoint)}")

    def complete(self, messages: Sequence[Message], *, max_tokens: int | None = None, json: bool = False) -> str:
        """The assistant's reply to `messages`.

        Parameters
        ----------
        messages
            ``[{"role": ..., "content": ...}, ...]``; roles: system, developer, user, assistant.
        max_tokens
            Upper bound on the reply's tokens (None: the server's default).
        json
            Ask for a JSON object (``response_format={"type": "json_object"}``). OpenAI requires
            the word "JSON" to appear in the messages in this mode.

        Raises
        ------
        TypeError, ValueError
            Malformed `messages` or arguments (the message names the item).
        LLMError
            The request failed after the retries, or the answer held no text.
        """
        return self._text(self._create(self._params(messages, max_tokens, json)))

    async def acomplete(
        self, messages: Sequence[Message], *, max_tokens: int | None = None, json: bool = False
    ) -> str:
        """Async twin of :meth:`complete` (``AsyncOpenAI``)."""
        return self._text(await self._acreate(self._params(messages, max_tokens, json)))

    def chat(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: Tools | None = None,
        tool_choice: ToolChoice = "auto",
        max_tokens: int | None = None,
        parallel_tool_calls: bool | None = None,
    ) -> Reply:
        """The model's :class:`~mindcore.llm.Reply` to `messages`, which may call `tools`.

        Parameters
        ----------
        messages
            OpenAI chat messages, including assistant messages with ``tool_calls`` and ``tool``
            messages (content-part messages convert; see :mod:`mindcore.llm.messages`).
        tools
            A :class:`~mindcore.toolspec.Toolset` or OpenAI tool specs.
        tool_choice
            ``"auto"``, ``"none"``, ``"required"`` or the name of a tool the model must call.
        parallel_tool_calls
            Whether the model may call several tools at once (None: the server's default).

        Raises
        ------
        InvalidInputError
            Malformed messages, tools or arguments (the message names the item).
        LLMError
            The request failed after the retries, or the answer is malformed.

        Examples
        --------
        >>> llm = OpenAICompatibleLLM("gpt-4.1-mini", api_key="sk-...")
        >>> reply = llm.chat([{"role": "user", "content": "Weather in Paris?"}], tools=toolset)  # doctest: +SKIP
        >>> reply.tool_calls[0].name  # doctest: +SKIP
        'get_weather'
        """
        return self._reply(self._create(self._chat_params(messages, tools, tool_choice, max_tokens,
                                                            parallel_tool_calls)))

    async def achat(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: Tools | None = None,
        tool_choice: ToolChoice = "auto",
        max_tokens: int | None = None,
        parallel_tool_calls: bool | None = None,
    ) -> Reply:
        """Async twin of :meth:`chat`."""
        return self._reply(await self._acreate(self._chat_params(messages, tools, tool_choice, max_tokens,
                                                                   parallel_tool_calls)))

    # -- requests -------------------------------------------------------------------------------

    def _create(self, params: dict[str, Any]) -> Any:
        errors = request_errors()
        try:
            return self._client.chat.completions.create(**params)
        except errors as exc:
            if not self._switch_token_param(exc, params):
                raise self._fail(exc) from exc
            try:
                return self._client.chat.completions.create(**params)
            except errors as exc2:
                raise self._fail(exc2) from exc2

    async def _acreate(self, params: dict[str, Any]) -> Any:
        client = self._aclients.get()
        errors = request_errors()
        try:
            return await client.chat.completions.create(**params)
        except errors as exc:
            if not self._switch_token_param(exc, params):
                raise self._fail(exc) from exc
            try:
                return await client.chat.completions.create(**params)
            except errors as exc2:
                raise self._fail(exc2) from exc2

    def _chat_params(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Tools | None,
        tool_choice: ToolChoice,
        max_tokens: int | None,
        parallel_tool_calls: bool | None,
    ) -> dict[str, Any]:
        params: dict[str, Any] = {"model": self.model, "messages": [
            _wire(m) for m in normalize_messages(messages, max_chars=MAX_MESSAGE_CHARS, strict=True,
                                                     json_arguments=False)]}
        if not params["messages"]:
            raise InvalidMessageError("messages: at least one message is needed")
        specs = openai_tools(tools)
        if specs:
            params["tools"] = specs
            params["tool_choice"] = openai_tool_choice(tool_choice, [s["function"]["name"] for s in specs])
            if parallel_tool_calls is not None:
                params["parallel_tool_calls"] = check_bool(parallel_tool_calls, "parallel_tool_calls")
        elif tool_choice not in ("auto", "none"):
            raise InvalidInputError(f"tool_choice: {tool_choice!r} needs tools")
        max_tokens = check_max_tokens(max_tokens)
        if max_tokens is not None:
            params[self._token_param] = max_tokens
        if self.temperature is not None:
            params["temperature"] = self.temperature
        return params

    def _reply(self, response: Any) -> Reply:
        try:
            choice = response.choices[0]
            message = choice.message
            calls = tuple(
                ToolCall(str(c.id), str(c.function.name), c.function.arguments or "{}")
                for c in (message.tool_calls or ())
            )
            usage = response.usage
            used = Usage(int(getattr(usage, "prompt_tokens", 0) or 0), int(getattr(usage, "completion_tokens", 0) or 0))
        except (AttributeError, TypeError, IndexError) as exc:
            raise LLMError(f"{self._where()} failed: malformed response: {exc}") from exc
        content = message.content
        if not isinstance(content, str):
            if not calls:
                refusal = getattr(message, "refusal", None)
                detail = f"refusal: {refusal!r}" if refusal else f"finish_reason={choice.finish_reason!r}"
                raise LLMError(f"{self._where()} returned neither text nor tool calls ({detail})")
            content = ""
        return Reply(content, calls, used, getattr(choice, "finish_reason", None))

    def __repr__(self) -> str:
        return f"OpenAICompatibleLLM(model={self.model!r}, base_url={self.base_url!r})"
