"""Argument types and argument groups shared by the CLI's commands (argparse only, no I/O)."""
from __future__ import annotations

import argparse
from typing import Callable


def int_at_least(low: int, what: str | None = None) -> Callable[[str], int]:
    """argparse type: an int >= low (argparse turns the error into usage + exit 2)."""
    what = what or f"an integer >= {low}"

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, got '{text}'") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"expected {what}, got {value}")
        return value
    return parse


# one definition for every command's counts (--batch, --repeat, ...): one message for all
positive_int = int_at_least(1)
non_negative_int = int_at_least(0)


def add_model_args(p: argparse.ArgumentParser) -> None:
    """model.so, graph.json, --params and --force: what every command that runs a model takes."""
    p.add_argument("lib", help="model.so (kernels)")
    p.add_argument("graph", help="graph.json (TVM graph-executor format)")
    p.add_argument("--params", default=None, help="default: model.params beside graph.json")
    p.add_argument("--force", action="store_true",
                   help="allocate even if the storage plan looks too large for available memory")


def add_threads_arg(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument("--threads", type=positive_int, default=None,
                   help=f"{what} (default: every CPU this process may use)")
