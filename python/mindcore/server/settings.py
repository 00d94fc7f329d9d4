"""The options of ``mindcore serve`` each serving process needs, passed to it through the
environment (``MINDCORE_SERVE_SETTINGS``, JSON): uvicorn starts ``--workers`` processes afresh."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from mindcore._http_guard import BODY_TIMEOUT, HEADER_TIMEOUT, Limits
from mindcore.server.http import DEFAULT_MAX_BODY

if TYPE_CHECKING:
    from mindcore.llm import LLM

__all__ = ["SETTINGS_ENV", "ServeSettings"]

SETTINGS_ENV = "MINDCORE_SERVE_SETTINGS"


@dataclass(frozen=True)
class ServeSettings:
    """The options of ``mindcore serve`` a serving process needs."""

    store: str | None = None
    token: str | None = None
    llm_model: str | None = None
    llm_base_url: str | None = None
    max_body: int = DEFAULT_MAX_BODY
    header_timeout: float = HEADER_TIMEOUT
    body_timeout: float = BODY_TIMEOUT
    max_connections: int = 1_024
    embed_tools: str = "background"
    workers: int = 1
    log_level: str = "info"
    log_format: str = "text"

    @property
    def limits(self) -> Limits:
        return Limits(header_timeout=self.header_timeout, body_timeout=self.body_timeout,
                      max_connections=self.max_connections)

    def llm(self) -> LLM | None:
        """The OpenAI-compatible endpoint that writes ``compacted`` summaries, when one is named."""
        if self.llm_model is None and self.llm_base_url is None:
            return None
        from mindcore.llm import OpenAICompatibleLLM

        return OpenAICompatibleLLM(self.llm_model or "default", base_url=self.llm_base_url)

    def to_env(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_env(cls) -> ServeSettings:
        raw = os.environ.get(SETTINGS_ENV)
        return cls() if not raw else cls(**json.loads(raw))
