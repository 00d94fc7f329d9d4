"""An agent's inbox dead letters: the events delivered ``max_attempts`` times without an ack (see
``Inbox.dead_letters``). List them, put them back in the live queue with their attempts reset, or
delete them for good.

``--store`` is the store the agent's ``Inbox`` lives in (a folder or a URI), or the Redis URL of a
``RedisInbox`` (``redis://``, ``rediss://``, ``unix://``; its default key prefix and group). Every
id given must be a dead letter of the agent, else nothing is done (exit 1).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC

from mindcore.blocks import one_line
from mindcore.cli._common import add_store_argument, open_store, store_location
from mindcore.consciousness.inbox import BaseInbox, DeadLetter
from mindcore.errors import MindcoreError

HELP = "an agent's inbox dead letters: list, requeue or discard them"
EXAMPLE = "mindcore inbox dead-letters --store ./memory --agent assistant"

_ACTIONS = {
    "dead-letters": ("list the events delivered max_attempts times without an ack, oldest pushed first",
                     "mindcore inbox dead-letters --store ./memory --agent assistant --json"),
    "requeue": ("put dead letters back in the live queue, their attempts reset",
                "mindcore inbox requeue --store ./memory --agent assistant 01m8fkmwrx39n2qewstfnpf814"),
    "discard": ("delete dead letters for good",
                "mindcore inbox discard --store redis://127.0.0.1:6379/0 --agent assistant 1771491600000-0"),
}
_REDIS = ("redis://", "rediss://", "unix://")
_PAYLOAD_CHARS = 120


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    for name, (help_text, example) in _ACTIONS.items():
        child = sub.add_parser(name, help=help_text, description=help_text, epilog=f"example:\n  {example}",
                               formatter_class=argparse.RawDescriptionHelpFormatter)
        add_store_argument(child, help="the store the inbox lives in (a folder or a URI), or a Redis URL")
        child.add_argument("--agent", required=True, help="the agent whose inbox it is")
        if name == "dead-letters":
            child.add_argument("--json", action="store_true", help="print one JSON list instead of lines")
        else:
            child.add_argument("ids", nargs="+", metavar="ID", help="the id of a dead letter")


@contextmanager
def open_inbox(args: argparse.Namespace) -> Iterator[BaseInbox | None]:
    """The agent's inbox, or ``None`` for a store that never held an inbox (nothing is created)."""
    location = store_location(args)
    if location.startswith(_REDIS):
        from mindcore.consciousness import RedisInbox

        with RedisInbox(location, agent=args.agent) as inbox:
            yield inbox
        return
    from mindcore.consciousness import Inbox
    from mindcore.consciousness._inbox_repo import TABLE

    with open_store(args, read_only=False) as store:
        if TABLE not in store.table_names():
            yield None
            return
        with Inbox(store, agent=args.agent) as inbox:
            yield inbox


def line(d: DeadLetter) -> str:
    died = d.died_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    payload = one_line(json.dumps(d.payload, ensure_ascii=False))
    if len(payload) > _PAYLOAD_CHARS:
        payload = payload[:_PAYLOAD_CHARS - 3] + "..."
    error = one_line(d.error) if d.error else "(no error given: its leases ran out)"
    return f"{d.id}  attempts={d.attempts}  died {died}  {error}  {payload}"


def run(args: argparse.Namespace) -> int:
    with open_inbox(args) as inbox:
        dead = [] if inbox is None else inbox.dead_letters()
        if args.action == "dead-letters":
            if args.json:
                print(json.dumps([d.to_dict() for d in dead], indent=2, ensure_ascii=False))
            elif not dead:
                print(f"no dead letters in the inbox of agent {args.agent!r}")
            else:
                print("\n".join(line(d) for d in dead))
            return 0
        known = {d.id for d in dead}
        missing = [i for i in args.ids if i not in known]
        if missing or inbox is None:
            raise MindcoreError(f"{(missing or args.ids)[0]}: no dead letter with this id in the inbox of agent "
                                f"{args.agent!r} (mindcore inbox dead-letters lists them); nothing was done")
        if args.action == "requeue":
            for old, new in inbox.requeue(args.ids).items():
                print(f"requeued {old}" if old == new else f"requeued {old} as {new}")
        else:
            for gone in inbox.discard(args.ids):
                print(f"discarded {gone}")
    return 0
