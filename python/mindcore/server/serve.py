"""``mindcore serve``: the agentified-compatible HTTP server on uvicorn.

Options (each also read from the environment): ``--host`` (127.0.0.1), ``--port`` (9119),
``--store`` (created if missing; default ``$MINDCORE_HOME`` or ``./.mindcore``), ``--token``
(``MINDCORE_TOKEN``: required as ``Authorization: Bearer ...`` on ``/api`` requests),
``--llm-model`` / ``--llm-base-url`` (``MINDCORE_LLM_MODEL`` / ``MINDCORE_LLM_BASE_URL``: an
OpenAI-compatible endpoint for ``compacted`` summaries; without one ``compacted`` answers 422),
``--max-body`` (bytes; larger bodies get 413). One log line per request.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mindcore.llm import LLM

__all__ = ["add_arguments", "main", "serve"]

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 9119


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from mindcore.server.app import DEFAULT_MAX_BODY

    env = os.environ.get
    parser.add_argument("--host", default=DEFAULT_HOST, help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help="port (default 9119)")
    parser.add_argument("--store", default=None, help="store folder or URI (created if missing)")
    parser.add_argument("--token", default=env("MINDCORE_TOKEN"), help="bearer token required on /api requests")
    parser.add_argument("--llm-model", default=env("MINDCORE_LLM_MODEL"), help="model for compacted summaries")
    parser.add_argument("--llm-base-url", default=env("MINDCORE_LLM_BASE_URL"),
                        help="OpenAI-compatible endpoint for compacted summaries")
    parser.add_argument("--max-body", type=int, default=DEFAULT_MAX_BODY, help="largest request body in bytes")
    parser.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])


def _llm(model: str | None, base_url: str | None) -> LLM | None:
    if model is None and base_url is None:
        return None
    from mindcore.llm import OpenAICompatibleLLM

    return OpenAICompatibleLLM(model or "default", base_url=base_url)


def serve(args: argparse.Namespace) -> None:
    try:
        import uvicorn
    except ImportError:
        raise SystemExit("mindcore serve needs uvicorn: pip install 'mindcore[server]'") from None
    from mindcore.server.app import create_app

    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s",
                        stream=sys.stderr)
    app = create_app(args.store, llm=_llm(args.llm_model, args.llm_base_url), token=args.token or None,
                     max_body=args.max_body)
    logging.getLogger("mindcore.server").info("serving store %s on http://%s:%d", app.store.uri, args.host, args.port)
    uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level, access_log=False,
                lifespan="on")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mindcore serve", description="the agentified-compatible HTTP server")
    add_arguments(parser)
    serve(parser.parse_args(argv))
    return 0
