"""Language model clients behind one protocol: `LLM.complete(messages) -> str` and its async twin.

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

from mindcore.llm.base import LLM, LLMError, Message
from mindcore.llm.openai_compat import OpenAICompatibleLLM
from mindcore.llm.scripted import ScriptedCall, ScriptedLLM, ScriptExhaustedError

__all__ = ["LLM", "LLMError", "Message", "OpenAICompatibleLLM", "ScriptExhaustedError", "ScriptedCall", "ScriptedLLM"]
