"""The seven LLM-callable mind tools: names, parameters and descriptions (the seed's, since
models are prompted with them) and their handlers, bound to one run by :func:`build_toolset`.

The handlers check what a JSON schema cannot express well (blank text, durations, dates) and
name arguments as the model spells them (``expiresIn``, ``dueBy``); a refused call comes back as
``{"status": "error", "error": "..."}`` and leaves the run's draft untouched.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mindcore.mind.validate import (
    MAX_LIMIT,
    MAX_TAG_CHARS,
    MAX_TAGS,
    MAX_TEXT_CHARS,
    check_duration,
    check_text,
)
from mindcore.toolspec import Toolset, ToolSpec

if TYPE_CHECKING:
    from mindcore.mind.mind import Mind, MindRun

__all__ = [
    "MAX_TAGS",
    "MAX_TAG_CHARS",
    "MAX_TEXT_CHARS",
    "TOOL_NAMES",
    "TOOL_SPECS",
    "build_standalone_toolset",
    "build_toolset",
]

_TAGS: dict[str, Any] = {
    "type": "array",
    "items": {"type": "string", "minLength": 1, "maxLength": MAX_TAG_CHARS},
    "maxItems": MAX_TAGS,
}


def _text(description: str) -> dict[str, Any]:
    # No maxLength here: a schema violation message quotes the whole value back to the model;
    # text_arg() reports the length instead.
    return {"type": "string", "description": f"{description} At most {MAX_TEXT_CHARS:,} characters."}


def _enum(values: tuple[str, ...], description: str) -> dict[str, Any]:
    return {"type": "string", "enum": list(values), "description": description}


def _spec(name: str, description: str, properties: dict[str, Any], required: list[str]) -> ToolSpec:
    return ToolSpec(
        name,
        description,
        {"type": "object", "properties": properties, "required": required, "additionalProperties": False},
    )


_ID = {"type": "string", "minLength": 1, "maxLength": 200}

TOOL_SPECS: tuple[ToolSpec, ...] = (
    _spec(
        "mind_recall",
        "Search the agent's persistent memory. Free-text query: semantic search on beliefs and "
        "reflections, keyword matching on goals. Reads the committed store only: writes made during "
        "the current run (mind_believe, mind_reflect, ...) are not visible until the next run.",
        {
            "query": _text("Free-text query. Used for semantic search on beliefs and reflections; keyword "
                           "matching on goals."),
            "type": _enum(("belief", "reflection", "goal", "all"), "Entry type to search. Default 'all'."),
            "status": _enum(("active", "completed"), "For goal queries only. Default 'active'."),
            "tags": {**_TAGS, "description": "Filter to entries that have all of these tags."},
            "pinned": {"type": "boolean", "description": "When true, return only pinned reflections."},
            "includeExpired": {"type": "boolean",
                               "description": "Whether to include archived (expired) beliefs. Default false."},
            "threshold": {"type": "number", "minimum": 0, "maximum": 1,
                          "description": "Composite score override (0-1) for this call. Ignored for goals."},
            "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT,
                      "description": "Maximum entries to return per type. Default 5."},
        },
        ["query"],
    ),
    _spec(
        "mind_believe",
        "Record a new belief. The same statement, or its explicit negation, updates the belief already "
        "held instead of creating a duplicate; when this belief makes another one untrue, pass that "
        "belief's id (from mind_recall) as replaces. A belief that only reads like a held one is kept "
        "beside it. Written when the run finishes.",
        {
            "content": _text("The belief statement."),
            "confidence": _enum(("low", "medium", "high"), "Certainty level at write time. Default 'medium'."),
            "tags": {**_TAGS, "description": "Tags for structured filtering via mind_recall."},
            "expiresIn": {"type": "string", "maxLength": 32,
                          "description": "TTL override for this belief: <n>d, <n>h, <n>m or <n>s, e.g. '7d', '90d'."},
            "allowDowngrade": {"type": "boolean",
                               "description": "If true, allows confidence to be lowered when updating an "
                                              "existing belief. By default only upgrades are applied."},
            "replaces": {"type": "string", "minLength": 1, "maxLength": 128,
                         "description": "The id of a held belief (from mind_recall) that this one replaces."},
        },
        ["content"],
    ),
    _spec(
        "mind_reflect",
        "Log a post-task observation about agent performance. Reflections are append-only and never "
        "deduplicated. pin=true makes it a standing rule shown at the start of every run (capped; "
        "unpin outdated rules with mind_unpin_reflection). Written when the run finishes.",
        {
            "content": _text("The observation to record."),
            "pin": {"type": "boolean",
                    "description": "If true, marks as a standing rule always shown in the header. Default false."},
            "tags": {**_TAGS, "description": "Tags for filtering via mind_recall."},
            "relatedTo": _text("Informational context (e.g. a PR number or task ID). Not filterable."),
        },
        ["content"],
    ),
    _spec(
        "mind_unpin_reflection",
        "Remove the pin flag from a standing-rule reflection. It stays in memory as a regular reflection.",
        {"id": {**_ID, "description": "ID of the pinned reflection to unpin. Obtain via mind_recall with "
                                      "type:'reflection' and pinned:true."}},
        ["id"],
    ),
    _spec(
        "mind_set_goal",
        "Create a new active goal to track across sessions. A description identical to an active goal's "
        "(ignoring case and spacing) returns that goal's id and changes nothing (use mind_update_goal to "
        "change it). Fails when the active goal cap is reached.",
        {
            "description": _text("The goal statement."),
            "priority": _enum(("low", "normal", "high"), "Goal priority. Shown in the header. Default 'normal'."),
            "tags": {**_TAGS, "description": "Tags for filtering via mind_recall."},
            "dueBy": {"type": "string", "maxLength": 64,
                      "description": "Optional deadline: an ISO 8601 date (e.g. '2026-06-01') or a duration "
                                     "(e.g. '30d'). Metadata only."},
        },
        ["description"],
    ),
    _spec(
        "mind_update_goal",
        "Partially update an active goal. progress appends a note to the goal's history. Does not "
        "complete the goal: use mind_complete_goal.",
        {
            "id": {**_ID, "description": "ID of the goal to update. Obtain via mind_recall with type:'goal'."},
            "description": _text("Revised goal description."),
            "priority": _enum(("low", "normal", "high"), "Updated priority."),
            "progress": _text("A progress note to append to the goal's history (an append, not a replacement)."),
        },
        ["id"],
    ),
    _spec(
        "mind_complete_goal",
        "Mark an active goal as completed and archive it. Takes effect immediately (not at the end of "
        "the run). Completed goals leave the header but stay queryable via mind_recall with status:'completed'.",
        {
            "id": {**_ID, "description": "ID of the goal to complete. Obtain via mind_recall with type:'goal'."},
            "outcome": _text("Summary of what was accomplished."),
        },
        ["id"],
    ),
)

TOOL_NAMES: tuple[str, ...] = tuple(s.name for s in TOOL_SPECS)


def build_toolset(run: MindRun) -> Toolset:
    """The :class:`~mindcore.toolspec.Toolset` behind :attr:`MindRun.tools`: the seven tools,
    writing to ``run``'s draft buffer."""

    def recall(a: dict[str, Any]) -> dict[str, Any]:
        limit = a.get("limit", 5)
        if isinstance(limit, float) and limit.is_integer():
            limit = int(limit)  # JSON schema counts 2.0 as an integer; so do we
        results = run.recall(
            a["query"], type=a.get("type", "all"), status=a.get("status", "active"), tags=a.get("tags"),
            pinned=a.get("pinned"), include_expired=a.get("includeExpired", False), threshold=a.get("threshold"),
            limit=limit,
        )
        return {"status": "ok", "results": [r.to_dict() for r in results]}

    def believe(a: dict[str, Any]) -> dict[str, Any]:
        check_text(a["content"], "content")
        expires = a.get("expiresIn")
        ttl = None if expires is None else check_duration(expires, "expiresIn")
        r = run._believe(a["content"], a.get("confidence", "medium"), a.get("tags"), ttl,
                         a.get("allowDowngrade", False), a.get("replaces"))
        out: dict[str, Any] = {"status": "ok", "action": r.action, "id": r.id}
        if r.replaced is not None:
            # Tell the model it changed its mind, and from what.
            out["replaced"] = {"content": r.replaced.content, "relation": r.replaced.relation,
                               "reason": r.replaced.reason}
        return out

    def reflect(a: dict[str, Any]) -> dict[str, Any]:
        check_text(a["content"], "content")
        check_text(a.get("relatedTo"), "relatedTo", optional=True)
        r = run._reflect(a["content"], a.get("pin", False), a.get("tags"), a.get("relatedTo"))
        out: dict[str, Any] = {"status": "ok", "id": r.id}
        if r.warning:
            out["warning"] = r.warning
        return out

    def unpin(a: dict[str, Any]) -> dict[str, Any]:
        run.unpin_reflection(a["id"])
        return {"status": "ok"}

    def set_goal(a: dict[str, Any]) -> dict[str, Any]:
        check_text(a["description"], "description")
        gid = run._set_goal(a["description"], a.get("priority", "normal"), a.get("tags"), a.get("dueBy"), "dueBy")
        return {"status": "ok", "id": gid}

    def update_goal(a: dict[str, Any]) -> dict[str, Any]:
        run.update_goal(a["id"], description=a.get("description"), priority=a.get("priority"),
                        progress=a.get("progress"))
        return {"status": "ok"}

    def complete_goal(a: dict[str, Any]) -> dict[str, Any]:
        run.complete_goal(a["id"], a.get("outcome"))
        return {"status": "ok"}

    handlers = {
        "mind_recall": recall, "mind_believe": believe, "mind_reflect": reflect, "mind_unpin_reflection": unpin,
        "mind_set_goal": set_goal, "mind_update_goal": update_goal, "mind_complete_goal": complete_goal,
    }
    # A MindError from the run's checks reaches the model as a tool error (Toolset.call).
    return Toolset([(spec, handlers[spec.name]) for spec in TOOL_SPECS])


def build_standalone_toolset(mind: Mind) -> Toolset:
    """The :class:`~mindcore.toolspec.Toolset` behind :attr:`Mind.tools`: the same seven tools,
    each call a run of its own, committed when the call returns (like ``mind.believe(...)``)."""

    def in_own_run(name: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
        def handler(args: dict[str, Any]) -> dict[str, Any]:
            with mind.run() as run:
                return run.tools.call(name, args)

        return handler

    return Toolset([(spec, in_own_run(spec.name)) for spec in TOOL_SPECS])
