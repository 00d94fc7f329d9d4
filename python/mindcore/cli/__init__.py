"""The ``mindcore`` command (also ``python -m mindcore``): one subcommand per module of this package.

================= =====================================================================================
``demo``          every part offline on the embedded defaults
``serve``         context assembly over agentified's HTTP protocol
``mcp``           the memory tools and prompt blocks over the Model Context Protocol
``inspect``       what a store holds: tables, namespaces, kinds, rows, sizes on disk, versions; a user's
                  retired long-term memories
``restore``       bring a retired long-term memory back by its id
``inbox``         an agent's inbox dead letters: list, requeue or discard them
``recall``        query a capability from the shell (long-term memory, mind, tool discovery, working memory)
``export``        a store as JSONL (every table's rows, with their vectors or marked for re-embedding)
``import``        a JSONL export into a store, one committed write per batch
``remember-bulk`` many users' long-term memories from a Parquet, CSV or JSON-lines file
``compact``       store maintenance: merge fragments, drop old versions
``reembed``       rewrite every vector with another embedding model (resumable, readers undisturbed)
``eval``          LoCoMo recall and tool-discovery quality from the evaluation data
``bench``         run the benches, write BENCHMARKS.md and PNG plots
================= =====================================================================================

``mindcore <command> --help`` shows each command's options and an example.
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType

from mindcore import __version__
from mindcore.cli.demo import demo as demo
from mindcore.errors import MindcoreError

__all__ = ["SUBCOMMANDS", "Subcommand", "demo", "main"]


@dataclass(frozen=True, slots=True)
class Subcommand:
    """One subcommand: the module that implements it has ``HELP`` (one line), ``EXAMPLE`` (a command
    line), ``add_arguments(parser)`` and ``run(args) -> int`` (the exit code)."""

    name: str
    module: str

    def load(self) -> ModuleType:
        return importlib.import_module(self.module)


#: Every subcommand, in the order ``mindcore --help`` lists them. A new one is a module with the four
#: names above and a row here.
SUBCOMMANDS: tuple[Subcommand, ...] = (
    Subcommand("demo", "mindcore.cli.demo"),
    Subcommand("serve", "mindcore.cli.serve"),
    Subcommand("mcp", "mindcore.cli.mcp"),
    Subcommand("inspect", "mindcore.cli.inspect"),
    Subcommand("recall", "mindcore.cli.recall"),
    Subcommand("restore", "mindcore.cli.restore"),
    Subcommand("inbox", "mindcore.cli.inbox"),
    Subcommand("export", "mindcore.cli.export"),
    Subcommand("import", "mindcore.cli.import_"),
    Subcommand("remember-bulk", "mindcore.cli.remember_bulk"),
    Subcommand("compact", "mindcore.cli.compact"),
    Subcommand("reembed", "mindcore.cli.reembed"),
    Subcommand("eval", "mindcore.cli.eval"),
    Subcommand("bench", "mindcore.cli.bench"),
)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The ``mindcore`` argument parser with every subcommand of :data:`SUBCOMMANDS`.

    With ``only`` (a subcommand's name), only that subcommand's module is imported and given its
    options; the others are listed by name, so a command starts without loading every other one
    (the server's and the MCP tools' modules take most of a second).
    """
    parser = argparse.ArgumentParser(prog="mindcore", description="memory and context for LLM agents")
    parser.add_argument("--version", action="version", version=f"mindcore {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in SUBCOMMANDS:
        if only is not None and command.name != only:
            sub.add_parser(command.name)
            continue
        module = command.load()
        doc = (module.__doc__ or "").strip()
        child = sub.add_parser(
            command.name, help=module.HELP, description=doc or module.HELP,
            epilog=f"example:\n  {module.EXAMPLE}", formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        module.add_arguments(child)
        child.set_defaults(_run=module.run)
    return parser


def _command_named(argv: Sequence[str]) -> str | None:
    """The subcommand ``argv`` names (its first word when that is one), else ``None``."""
    first = next((arg for arg in argv if not arg.startswith("-")), None)
    return first if any(command.name == first for command in SUBCOMMANDS) else None


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``mindcore`` command with ``argv`` (default: the process's arguments); the exit code.

    An error mindcore raises on purpose (:class:`~mindcore.errors.MindcoreError`) is printed as one
    line on stderr with exit code 1, not as a traceback; Ctrl-C exits with 130, and a closed pipe
    on stdout (``mindcore inspect | head``) with 141, as a shell command would, silently.
    """
    words = sys.argv[1:] if argv is None else list(argv)
    args = build_parser(only=_command_named(words)).parse_args(words)
    try:
        code: int = args._run(args)
    except MindcoreError as exc:
        print(f"mindcore {args.command}: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"mindcore {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (``mindcore inspect | head``): stop quietly, as other commands do.
        # Python would flush stdout again at exit and report the same broken pipe; point it at
        # /dev/null first.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except (OSError, RuntimeError, ValueError) as exc:
        # Storage the command could not reach (a bucket that does not exist, no network, a full disk,
        # no permission): one line. Anything else is a bug, shown with its traceback.
        message = storage_error(exc)
        if message is None:
            raise
        print(f"mindcore {args.command}: {message}", file=sys.stderr)
        return 1
    return code


_RUST_SOURCE = re.compile(r",?\s*/\S+\.rs:\d+:\d+")
_S3_MESSAGE = re.compile(r"<Code>([^<]*)</Code>\s*<Message>([^<]*)</Message>")
_LANCE_MARKS = ("LanceError", "lance error", "object_store", 'store: "S3"', "Failed to connect to namespace")


def storage_error(exc: BaseException) -> str | None:
    """One line for an error of the storage underneath (the OS, or Lance's object store), without
    the Rust internals Lance appends; ``None`` for anything else."""
    text = str(exc)
    if not isinstance(exc, OSError) and not any(mark in text for mark in _LANCE_MARKS):
        return None
    service = _S3_MESSAGE.search(text)
    if service is not None:  # what the object store answered, e.g. NoSuchBucket
        return f"storage error: {service.group(2)} ({service.group(1)})"
    first = _RUST_SOURCE.sub("", text.splitlines()[0] if text else type(exc).__name__)
    first = first.removeprefix("lance error: ")
    return first if isinstance(exc, OSError) else f"storage error: {first[:300]}"
