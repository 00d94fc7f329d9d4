"""The working-memory tool the model updates its scratchpad with, and its handlers.

``working_memory_update`` is also accepted under the seed's name ``working-memory/update`` (not a
valid tool name for every provider). The seed's legacy ``updateWorkingMemory`` function call is
handled by :func:`call_legacy`: a bad update is logged and ignored instead of returned as an error.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mindcore.errors import WorkingMemoryError
from mindcore.toolspec import ToolError, Toolset, ToolSpec, parse_arguments
from mindcore.working.schema import StateSchema

if TYPE_CHECKING:
    from mindcore.working.memory import WorkingMemory

__all__ = ["LEGACY_TOOL_NAME", "SEED_TOOL_NAME", "TOOL_NAME", "build_toolset", "call_legacy", "update_spec"]

log = logging.getLogger("mindcore.working")

TOOL_NAME = "working_memory_update"
# The seed's tool name (not valid for every provider) and its legacy function-call convention.
SEED_TOOL_NAME = "working-memory/update"
LEGACY_TOOL_NAME = "updateWorkingMemory"


def update_spec(schema: StateSchema | None) -> ToolSpec:
    """The update tool's spec: the schema's fields (all optional: updates merge) or one ``content``."""
    description = (
        "Update your working memory (a scratchpad kept across turns). "
        + (
            "Send only the fields to change: objects are merged, arrays and values replace."
            if schema is not None
            else "Send the complete new content; it replaces the previous text."
        )
    )
    if schema is not None:
        parameters = schema.tool_parameters()
    else:
        parameters = {
            "type": "object",
            "properties": {"content": {"type": "string", "description": "The full new working memory text."}},
            "required": ["content"],
            "additionalProperties": False,
        }
    return ToolSpec(TOOL_NAME, description, parameters)


def build_toolset(wm: WorkingMemory) -> Toolset:
    """The :class:`~mindcore.toolspec.Toolset` behind :attr:`WorkingMemory.tools`."""

    def update(args: dict[str, Any]) -> dict[str, Any]:
        try:
            return {"status": "ok", "state": wm.update(args)}
        except WorkingMemoryError as exc:
            raise ToolError(str(exc)) from None

    return Toolset([(update_spec(wm.schema), update)], aliases={SEED_TOOL_NAME: TOOL_NAME})


def call_legacy(wm: WorkingMemory, arguments: str | bytes | Mapping[str, Any] | None) -> dict[str, Any]:
    """The seed's legacy ``updateWorkingMemory`` call: a bad update logs a warning and leaves the
    state unchanged."""
    try:
        args = parse_arguments(arguments)
        state = wm.update(args)
    except (ToolError, WorkingMemoryError) as exc:
        log.warning("updateWorkingMemory ignored: %s", exc)
        return {"status": "ignored", "warning": str(exc)}
    return {"status": "ok", "state": state}
