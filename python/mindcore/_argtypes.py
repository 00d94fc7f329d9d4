"""``argparse`` types for the numbers the command line and the servers take: each turns the
option's text into a value or raises ``argparse.ArgumentTypeError`` with a line saying what was
expected (argparse prints it as a usage error, exit 2).

>>> positive_int("3"), positive_seconds("0.5")
(3, 0.5)
"""

from __future__ import annotations

import argparse

__all__ = ["non_negative_float", "port_number", "positive_int", "positive_seconds"]


def positive_int(text: str) -> int:
    """An argparse ``type``: an int of at least 1 (a count, a limit, a batch size)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a number of at least 1, got {value}")
    return value


def non_negative_float(text: str) -> float:
    """An argparse ``type``: a finite number of at least 0 (a duration in seconds)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"expected a finite number of at least 0, got {text}")
    return value


def positive_seconds(text: str) -> float:
    """An argparse ``type``: a finite number of seconds above 0 (a timeout)."""
    value = non_negative_float(text)
    if value == 0:
        raise argparse.ArgumentTypeError("expected a number of seconds above 0, got 0")
    return value


def port_number(text: str) -> int:
    """An argparse ``type``: a TCP port, 0 (any free port) to 65535."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number, got {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"expected a port in 0..65535, got {value}")
    return value
