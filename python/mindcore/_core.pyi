# Stubs for the native module mindcore._core (rust/python). Checked against the built module by
# tests/test_stubs.py (mypy.stubtest). Each kernel keeps its own section.


__version__: str

# --- scoring ---

# --- dedupe ---

# --- tokens ---

# --- secrets ---

# --- packing ---

# --- bm25 ---

# --- hashing ---
