"""Serve context assembly over agentified's HTTP protocol (its SDKs work unchanged) on uvicorn.

Each option is also read from the environment: ``MINDCORE_TOKEN`` (a bearer token required on
``/api`` requests), ``MINDCORE_LLM_MODEL`` / ``MINDCORE_LLM_BASE_URL`` (an OpenAI-compatible
endpoint for ``compacted`` summaries).
"""

from __future__ import annotations

import argparse

from mindcore.server.serve import add_arguments as _add_server_arguments
from mindcore.server.serve import serve

HELP = "serve context assembly over agentified's HTTP protocol"
EXAMPLE = "mindcore serve --store ./memory --port 9119"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    _add_server_arguments(parser)


def run(args: argparse.Namespace) -> int:
    serve(args)
    return 0
