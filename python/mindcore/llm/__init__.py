"""Language model clients: `LLM.complete(messages) -> str` for text, and `ChatLLM.chat(messages,
tools=...) -> Reply` (text, tool calls, usage) for agents that call tools; each with an async twin.

- :class:`OpenAICompatibleLLM`: any OpenAI-compatible chat endpoint (OpenAI, Azure, Ollama,
  vLLM, llama.cpp server), with timeouts, retries and errors that name the endpoint.
- :class:`ScriptedLLM`: scripted replies for tests and demos; records every call.

Examples
--------
>>> from mindcore.llm import ScriptedLLM
>>> llm = ScriptedLLM(["Paris."])
>>> llm.complete([{"role": "user", "content": "Capital of France?"}])
'Paris.'
"""

from __future__ import annotations

from mindcore.llm.anthropic import AnthropicLLM
from mindcore.llm.base import LLM, LLMError, Message
from mindcore.llm.openai_compat import OpenAICompatibleLLM
from mindcore.llm.reply import ChatLLM, Reply, ToolCall, Usage
from mindcore.llm.scripted import ScriptedCall, ScriptedLLM, ScriptExhaustedError

__all__ = [
    "LLM",
    "AnthropicLLM",
    "ChatLLM",
    "LLMError",
    "Message",
    "OpenAICompatibleLLM",
    "Reply",
    "ScriptExhaustedError",
    "ScriptedCall",
    "ScriptedLLM",
    "ToolCall",
    "Usage",
]
