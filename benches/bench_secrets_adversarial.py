"""Secret scanning time on adversarial inputs: 23 texts each made of one unit repeated (a vendor
prefix, a key=value opener, a PEM header, zero-width spaces, fullwidth letters, card digits, ...),
the shapes that make a backtracking regex engine go quadratic. Each is scanned and redacted at
256 KiB and at 1 MiB: time linear in the text means the second row takes about 4x the first.

Run: ``pytest benches/bench_secrets_adversarial.py --benchmark-only -q``.
"""

from __future__ import annotations

from typing import Any

import pytest
from _bench import cpu_model, finish

from mindcore.kernels import SecretScanner, simd_path

UNITS = [
    "a", "sk-", "=", "aB3+/x9Z", "-----BEGIN RSA PRIVATE KEY-----\n", "password=", "token: a", "eyJa.",
    "postgres://u:p@", "https://a:", "xoxb-1", "Q~", "Authorization: Bearer ", "a=", "k ", "A\u200b", "\uff47",
    "4111 ", "DE89 ", "my password is ", '<add key="password" value="', "STRIPE_KEY=", "xY9",
]
GROUP = f"secrets: scan and redact {len(UNITS)} adversarial inputs"


def adversarial(nbytes: int) -> list[str]:
    return [unit * (nbytes // len(unit.encode())) for unit in UNITS]


@pytest.mark.parametrize("nbytes", [256 * 1024, 1024 * 1024], ids=["256KiB", "1MiB"])
def test_adversarial_inputs(benchmark: Any, nbytes: int) -> None:
    scanner = SecretScanner()
    texts = adversarial(nbytes)
    print(f"\ncpu: {cpu_model()}; kernels: {simd_path()} path")

    def scan_all() -> None:
        for text in texts:
            scanner.scan(text)
            scanner.redact(text)

    finish(benchmark, f"mindcore, {nbytes // 1024} KiB each", GROUP, items=len(texts))
    benchmark.extra_info["bytes"] = nbytes
    benchmark.pedantic(scan_all, rounds=3, iterations=1)
