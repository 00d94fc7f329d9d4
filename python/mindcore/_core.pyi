# Stubs for the native module mindcore._core (rust/python). Checked against the built module by
# tests/test_stubs.py (mypy.stubtest). Each kernel keeps its own section.

from typing import final

__version__: str

# --- scoring ---

# --- dedupe ---

# --- tokens ---

# --- secrets ---
@final
class SecretScanner:
    def __new__(cls, rules: list[tuple[str, str]], builtin: bool) -> SecretScanner: ...
    @property
    def rule_ids(self) -> list[str]: ...
    def scan(self, text: str) -> list[tuple[str, int, int]]: ...
    def scan_batch(self, texts: list[str]) -> list[list[tuple[str, int, int]]]: ...
    def contains(self, text: str) -> bool: ...
    def contains_batch(self, texts: list[str]) -> list[bool]: ...
    def redact(self, text: str, placeholder: str) -> str: ...
    def redact_batch(self, texts: list[str], placeholder: str) -> list[str]: ...

def secret_builtin_rules() -> list[tuple[str, str, str, str, int, int]]: ...

# --- packing ---

# --- bm25 ---

# --- hashing ---
