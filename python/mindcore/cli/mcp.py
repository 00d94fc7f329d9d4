"""Serve a store's memory tools (the Mind's, working memory's, long-term memory's, tool discovery's)
and its prompt blocks as read-only resources over the Model Context Protocol, on stdio (what a
desktop client launches) or on streamable HTTP (``--http``). Needs ``pip install 'mindcore[mcp]'``.
"""

from __future__ import annotations

import argparse

from mindcore.mcp import command

HELP = "serve the memory tools and prompt blocks over MCP (stdio or streamable HTTP)"
EXAMPLE = "mindcore mcp --store ./memory --agent support --user-id user-7"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    command.add_arguments(parser)


def run(args: argparse.Namespace) -> int:
    return command.run(args)
