"""The import graph points down only: CLI and servers → eval/runner → capabilities → foundation
(store, embed, llm, toolspec) → kernels → errors/validation and the Rust core. A capability never
imports another capability. Checked on every import statement of the package, including the ones
inside functions (``mindcore/__init__.py``, the package face with its lazy names, is exempt)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "python" / "mindcore"

LAYERS: dict[str, int] = {
    "_core": 0, "errors": 0,
    "validation": 1, "_background": 1, "_argtypes": 1, "tracing": 1, "_http_logs": 1,
    "kernels": 2, "_openai": 2, "_http_guard": 2,
    "_http_metrics": 3,
    "store": 3, "embed": 3, "llm": 3, "toolspec": 3, "blocks": 3, "policy": 3, "relations": 3,
    "mind": 4, "working": 4, "ltm": 4, "context": 4, "consciousness": 4,
    "eval": 5, "agent": 5, "batch": 5,
    "server": 6, "mcp": 6, "integrations": 6,
    "cli": 7, "__main__": 8,
}
CAPABILITIES = {name for name, layer in LAYERS.items() if layer == 4}
# Inside the foundation, these arrows are allowed (the store records its embedder's identity).
FOUNDATION_ARROWS = {("store", "embed")}
# The package face lazily loads capabilities: only the layers above them may use it.
FACE_LAYER = 4
# Deprecated modules that forward to a new home higher up, kept so old imports still work.
FORWARDERS = {Path("ltm/locomo.py")}


def _part(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if parts[0] == "mindcore" and len(parts) > 1 else None


def _imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
            if node.module == "mindcore" and all(alias.name in LAYERS for alias in node.names):
                # `from mindcore import _core`: submodules, not names of the package face
                found[-1:] = [(node.lineno, f"mindcore.{alias.name}") for alias in node.names]
    return found


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if p != PACKAGE / "__init__.py")


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_point_down(path: Path) -> None:
    rel = path.relative_to(PACKAGE)
    own = rel.parts[0].removesuffix(".py")
    assert own in LAYERS, f"{rel}: place the new module {own!r} in a layer of tests/test_layers.py"
    if rel in FORWARDERS:
        return
    wrong = []
    for line, module in _imports(path):
        if module == "mindcore" and LAYERS[own] > FACE_LAYER:
            continue
        if module == "mindcore":
            wrong.append(f"line {line}: imports the package face 'mindcore'; import the module that defines the name")
            continue
        target = _part(module)
        if target is None or target == own:
            continue
        assert target in LAYERS, f"{rel}: unknown part {target!r}"
        same_layer_ok = (own, target) in FOUNDATION_ARROWS
        if LAYERS[target] > LAYERS[own] or (LAYERS[target] == LAYERS[own] and not same_layer_ok):
            wrong.append(f"line {line}: {own} (layer {LAYERS[own]}) imports {module} (layer {LAYERS[target]})")
    assert not wrong, f"{rel}:\n" + "\n".join(wrong)


def test_capabilities_do_not_import_each_other() -> None:
    for path in _modules():
        own = path.relative_to(PACKAGE).parts[0].removesuffix(".py")
        if own in CAPABILITIES:
            others = {_part(m) for _, m in _imports(path)} & (CAPABILITIES - {own})
            assert not others, f"{path.relative_to(PACKAGE)} imports {others}"
