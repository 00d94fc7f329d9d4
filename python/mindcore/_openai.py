"""What the OpenAI-compatible clients (chat and embeddings) share: endpoint settings from arguments
or the environment, the `openai` SDK clients, and error messages that say what failed and why.

The SDK does the retrying: exponential backoff with jitter (0.5 s doubling, capped at 8 s), on
connection errors, timeouts, HTTP 408/409/429 and 5xx, honouring ``Retry-After`` headers.
"""

from __future__ import annotations

import asyncio
import math
import os
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from openai import AsyncOpenAI, OpenAI

__all__ = ["Endpoint", "explain", "resolve_endpoint"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
# Local servers (Ollama, vLLM, llama.cpp) ignore the key, but the SDK insists on one.
_NO_KEY = "not-needed"


def _env(name: str) -> str | None:
    value = os.environ.get(name, "").strip()
    return value or None


def _positive(value: float, arg: str, *, integer: bool = False, zero_ok: bool = False) -> None:
    kind = "int" if integer else "number"
    if isinstance(value, bool) or not isinstance(value, int if integer else (int, float)):
        raise TypeError(f"{arg}: expected {kind}, got {type(value).__name__}")
    if not math.isfinite(value) or value < 0 or (value == 0 and not zero_ok):
        raise ValueError(f"{arg}: must be {'>= 0' if zero_ok else '> 0'}, got {value}")


@dataclass(frozen=True)
class Endpoint:
    """A resolved OpenAI-compatible endpoint."""

    base_url: str
    api_key: str
    model: str
    timeout: float
    max_retries: int

    def url(self, path: str) -> str:
        return f"{self.base_url}/{path}"

    def sync_client(self) -> OpenAI:
        from openai import OpenAI

        return OpenAI(base_url=self.base_url, api_key=self.api_key, timeout=self.timeout, max_retries=self.max_retries)

    def async_client(self) -> AsyncOpenAI:
        from openai import AsyncOpenAI

        return AsyncOpenAI(
            base_url=self.base_url, api_key=self.api_key, timeout=self.timeout, max_retries=self.max_retries
        )


def resolve_endpoint(
    *, model: str | None, base_url: str | None, api_key: str | None, model_env: str, timeout: float, max_retries: int
) -> Endpoint:
    """Arguments first, then ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY`` / `model_env`."""
    for arg, value in (("model", model), ("base_url", base_url), ("api_key", api_key)):
        if value is not None and not isinstance(value, str):
            raise TypeError(f"{arg}: expected str or None, got {type(value).__name__}")
    _positive(timeout, "timeout")
    _positive(max_retries, "max_retries", integer=True, zero_ok=True)
    resolved_model = model or _env(model_env)
    if not resolved_model:
        raise ValueError(f"model: not given and {model_env} is not set")
    url = (base_url or _env("OPENAI_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"base_url: expected an http(s) URL, got {url!r}")
    key = api_key or _env("OPENAI_API_KEY")
    if key is None:
        if url == DEFAULT_BASE_URL:
            raise ValueError(f"api_key: not given and OPENAI_API_KEY is not set (needed for {url})")
        key = _NO_KEY
    return Endpoint(url, key, resolved_model, float(timeout), max_retries)


class AsyncClients:
    """One `AsyncOpenAI` per event loop: its connection pool belongs to the loop that opened it."""

    def __init__(self, endpoint: Endpoint) -> None:
        self._endpoint = endpoint
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, AsyncOpenAI] = weakref.WeakKeyDictionary()

    def get(self) -> AsyncOpenAI:
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            client = self._clients[loop] = self._endpoint.async_client()
        return client


def _status_message(body: Any) -> str:
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return str(inner["message"])
        if isinstance(inner, str):
            return inner
    text = " ".join(str(body).split()) if body is not None else ""
    return text[:300] or "(empty body)"


_HINTS = {
    401: "check api_key / OPENAI_API_KEY",
    403: "check api_key / OPENAI_API_KEY and the model's access rights",
    404: "check base_url / OPENAI_BASE_URL and the model name",
}


def explain(exc: BaseException, endpoint: Endpoint) -> str:
    """The cause of a failed request, in words (the endpoint is named by the caller)."""
    import openai

    attempts = endpoint.max_retries + 1
    tries = f"{attempts} attempt{'s' if attempts > 1 else ''}"
    if isinstance(exc, openai.APITimeoutError):
        return f"timed out after {endpoint.timeout:g} s ({tries})"
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__ or exc
        return f"connection failed: {cause} ({tries})"
    if isinstance(exc, openai.APIStatusError):
        message = f"HTTP {exc.status_code}: {_status_message(exc.body)}"
        if exc.status_code in (408, 409, 429) or exc.status_code >= 500:
            message += f" ({tries})"
        hint = _HINTS.get(exc.status_code)
        return f"{message}; {hint}" if hint else message
    if isinstance(exc, openai.APIResponseValidationError | ValueError):
        return f"malformed response: {exc}"
    return f"{type(exc).__name__}: {exc}"


def request_errors() -> tuple[type[Exception], ...]:
    """The exceptions a request to the SDK raises for a failed or malformed exchange."""
    import openai

    # ValueError covers a body that is not JSON (json.JSONDecodeError) and pydantic's ValidationError.
    return (openai.APIError, ValueError)
