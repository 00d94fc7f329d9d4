"""The `mindcore.kernels` package as a whole: its public names, its place at the bottom of the import
graph, and one error family for bad input (from Rust and from the Python checks alike)."""

from __future__ import annotations

import ast
import importlib
import pkgutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import mindcore.kernels as kernels
from mindcore.errors import KernelError, KernelTypeError, MindcoreError


def _kernel_modules() -> list[str]:
    return [f"mindcore.kernels.{m.name}" for m in pkgutil.iter_modules(kernels.__path__)]


def test_all_lists_every_public_kernel_name() -> None:
    public = {name for mod in _kernel_modules() for name in importlib.import_module(mod).__all__}
    assert sorted(kernels.__all__) == sorted(public)
    assert len(set(kernels.__all__)) == len(kernels.__all__)
    for name in kernels.__all__:
        assert getattr(kernels, name) is not None
    assert "BM25Index" in kernels.__all__ and "hybrid_topk" in kernels.__all__


def test_kernels_import_only_the_native_module_and_the_errors() -> None:
    """The kernels sit at the bottom: no import of the package face (`from mindcore import ...`),
    a capability or the store, so nothing they load can import back up."""
    allowed = {"mindcore._core", "mindcore.errors"}
    for path in Path(kernels.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                if name == "mindcore" or name.startswith("mindcore."):
                    assert name in allowed or name.startswith("mindcore.kernels"), f"{path.name} imports {name}"


_F32 = np.ones((2, 3), dtype=np.float32)

BAD_VALUES: list[tuple[str, Callable[[], Any]]] = [
    ("k", lambda: kernels.hybrid_topk(_F32[0], _F32, k=0)),  # Rust
    ("query", lambda: kernels.hybrid_topk(np.ones(4, dtype=np.float32), _F32, k=1)),  # Rust, dimension
    ("matrix", lambda: kernels.hybrid_topk(_F32[0], np.ones(3, dtype=np.float32), k=1)),  # Rust, ndim
    ("threshold", lambda: kernels.near_duplicates(_F32, _F32, threshold=float("nan"))),
    ("k", lambda: kernels.BM25Index(["a"]).top_k("a", 0)),  # Python check
    ("k1", lambda: kernels.BM25Index(k1=-1.0)),  # Rust
    ("budget", lambda: kernels.pack_budget([1], budget=-1)),  # Python check
    ("encoding", lambda: kernels.count_tokens("x", encoding="nope")),  # type: ignore[arg-type]
    ("dim", lambda: kernels.hash_embed(["x"], dim=0)),
]

BAD_TYPES: list[tuple[str, Callable[[], Any]]] = [
    ("query", lambda: kernels.hybrid_topk(np.ones(3), _F32, k=1)),  # Rust, dtype
    ("matrix", lambda: kernels.hybrid_topk(_F32[0], [[1.0, 2.0, 3.0]], k=1)),  # type: ignore[arg-type]
    ("documents", lambda: kernels.BM25Index("one string")),  # Python check
    ("text", lambda: kernels.bm25_tokenize(b"x")),  # type: ignore[arg-type]
    ("ids", lambda: kernels.decode([1, "x"])),  # type: ignore[list-item]
    ("texts", lambda: kernels.hash_embed("x")),
]


@pytest.mark.parametrize(("arg", "call"), BAD_VALUES, ids=[f"{a}-{i}" for i, (a, _) in enumerate(BAD_VALUES)])
def test_bad_values_raise_kernel_error(arg: str, call: Callable[[], Any]) -> None:
    with pytest.raises(KernelError, match=arg) as info:
        call()
    assert isinstance(info.value, ValueError) and isinstance(info.value, MindcoreError)


@pytest.mark.parametrize(("arg", "call"), BAD_TYPES, ids=[f"{a}-{i}" for i, (a, _) in enumerate(BAD_TYPES)])
def test_bad_types_raise_kernel_type_error(arg: str, call: Callable[[], Any]) -> None:
    with pytest.raises(KernelTypeError, match=arg) as info:
        call()
    assert isinstance(info.value, TypeError) and isinstance(info.value, MindcoreError)
    assert isinstance(info.value, KernelError)  # one class catches every refusal of a kernel
