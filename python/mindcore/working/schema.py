"""One adapter over the two schema kinds users hand working memory: a pydantic model class or a
JSON Schema dict."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from mindcore.errors import InvalidInputError, InvalidTypeError

__all__ = ["StateSchema"]


class StateSchema:
    """Validates a whole state and derives the update tool's (all-optional) parameters.

    >>> s = StateSchema({"type": "object", "properties": {"goal": {"type": "string"}}, "required": ["goal"]})
    >>> s.error({"goal": 3})
    "goal: 3 is not of type 'string'"
    >>> s.tool_parameters()["required"]
    []
    """

    def __init__(self, schema: type[Any] | Mapping[str, Any]) -> None:
        self._model: Any = None
        if isinstance(schema, Mapping):
            import jsonschema

            as_dict = copy.deepcopy(dict(schema))
            cls = jsonschema.validators.validator_for(as_dict, default=jsonschema.Draft202012Validator)
            try:
                cls.check_schema(as_dict)
            except jsonschema.SchemaError as exc:
                raise InvalidInputError(f"schema: not a valid JSON Schema: {exc.message}") from None
            self._validator: Any = cls(as_dict)
            self.json_schema: dict[str, Any] = as_dict
        elif isinstance(schema, type) and hasattr(schema, "model_validate"):
            self._model = schema
            self.json_schema = schema.model_json_schema()
        else:
            raise InvalidTypeError(f"schema: expected a pydantic model class or a JSON Schema dict, got {schema!r}")
        if self.json_schema.get("type", "object") != "object":
            raise InvalidInputError("schema: working memory state must be an object (type 'object')")

    def error(self, state: Mapping[str, Any]) -> str | None:
        """``None`` when ``state`` is valid, else a message naming the first failing field."""
        if self._model is not None:
            from pydantic import ValidationError

            try:
                self._model.model_validate(dict(state))
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(str(p) for p in first["loc"]) or "(state)"
                return f"{where}: {first['msg']}"
            return None
        errors = sorted(self._validator.iter_errors(dict(state)), key=lambda e: [str(p) for p in e.path])
        if not errors:
            return None
        where = ".".join(str(p) for p in errors[0].absolute_path) or "(state)"
        return f"{where}: {errors[0].message}"

    def tool_parameters(self) -> dict[str, Any]:
        """The schema with every ``required`` list emptied, at every depth: updates are partial, and the
        merged state (not the patch) is what must validate."""
        params: dict[str, Any] = _relax(copy.deepcopy(self.json_schema))
        params["type"] = "object"
        params.setdefault("properties", {})
        params.pop("title", None)
        return params


def _relax(node: Any) -> Any:
    if isinstance(node, dict):
        if "required" in node and isinstance(node["required"], list):
            node["required"] = []
        for value in node.values():
            _relax(value)
    elif isinstance(node, list):
        for value in node:
            _relax(value)
    return node
