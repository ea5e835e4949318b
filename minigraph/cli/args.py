"""Argument types and argument groups shared by the CLI's commands (argparse only, no I/O)."""
from __future__ import annotations

import argparse
import math
import shutil
from typing import Callable

from ..errors import InputError
from ..runtime.doors import locate
from ..threadpool.config import MAX_THREADS
from ..values.policy import FILL_HELP, FILLS


def int_at_least(low: int, what: str | None = None, high: int | None = None
                 ) -> Callable[[str], int]:
    """argparse type: an int >= low (and <= high; argparse turns the error into usage +
    exit 2)."""
    what = what or (f"an integer >= {low}" if high is None else f"an integer {low} to {high}")

    def parse(text: str) -> int:
        try:
            value = int(text) if len(text) < 100 else None
        except ValueError:
            value = None
        if value is None or value < low or (high is not None and value > high):
            raise argparse.ArgumentTypeError(f"expected {what}, got '{text[:40]}'")
        return value
    return parse


def number_within(low: float, high: float, what: str, strict: bool = False
                  ) -> Callable[[str], float]:
    """argparse type: a finite number from low to high (strictly between them with
    ``strict``); ``nan`` and ``inf`` are no setting."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        inside = low < value < high if strict else low <= value <= high
        if not (math.isfinite(value) and inside):
            raise argparse.ArgumentTypeError(f"expected {what}, got '{text[:40]}'")
        return value
    return parse


def bounded(limits: tuple[float, float], what: str = "an integer") -> Callable[[str], int]:
    """argparse type of a count or budget with (low, high) limits (results/profile.py LIMITS,
    diagnose/spec.py LIMITS): an integer from low to high."""
    low, high = int(limits[0]), int(limits[1])
    return int_at_least(low, f"{what} {low} to {high}", high=high)


def within(limits: tuple[float, float]) -> str:
    """'1 to 1000': a bound as the help says it."""
    return f"{limits[0]:g} to {limits[1]:g}"


# one definition for every command's counts (--batch, --repeat, ...): one message for all
positive_int = int_at_least(1)
non_negative_int = int_at_least(0)


def add_model_args(p: argparse.ArgumentParser) -> None:
    """MODEL [GRAPH], --params and --force: what every command that runs a model takes."""
    p.add_argument("model", metavar="MODEL",
                   help="the model library (model.so), a build directory holding it, or a "
                        "Relax VM executable (tvm.compile(...).export_library; no GRAPH)")
    p.add_argument("graph", metavar="GRAPH", nargs="?", default=None,
                   help="graph.json (TVM graph-executor format); default: the one in the "
                        "build directory")
    p.add_argument("--params", default=None,
                   help="TVM param blob or numpy .npz (np.savez(f, **params)); default: model.params beside graph.json (for an "
                        "executable: values of its function's parameters, by name)")
    p.add_argument("--force", action="store_true",
                   help="allocate even if the storage plan looks too large for available memory")
    p.add_argument("--fill", choices=FILLS, default=None,
                   help=f"{FILL_HELP}; default: refuse to time a model whose weights were "
                        "not given")
    p.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy",
                   help="an input from a .npy file (repeatable); the others get seeded data. "
                        "A Relax VM function's symbolic sizes are read from their shapes")
    add_shape_arg(p)


def add_shape_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--shape", action="append", default=[], type=shape_item, metavar="NAME=N",
                   help="the size of a Relax VM function's symbolic dimension (repeatable), "
                        "e.g. --shape n=128; default: read from the inputs given")


MAX_SIZE = (1 << 63) - 1  # a symbolic dimension's largest size: TVM's shapes are int64


def size_value(text: str) -> int | None:
    """A symbolic dimension's size from text: a whole number from 1 to MAX_SIZE, else None."""
    digits = text.strip()
    if not (digits.isascii() and digits.isdigit()) or len(digits.lstrip("0")) > 19:
        return None
    return int(digits) if 1 <= int(digits) <= MAX_SIZE else None


def shape_item(text: str) -> tuple[str, int]:
    """argparse type of one --shape NAME=N."""
    name, sep, value = text.partition("=")
    size = size_value(value) if sep and name.isidentifier() else None
    if size is None:
        raise argparse.ArgumentTypeError(f"expected NAME=N with N from 1 to 2**63-1, got "
                                         f"'{text[:60]}'")
    return name, size


def shapes(args: argparse.Namespace) -> dict[str, int]:
    """--shape as a dict; a name given twice is a usage error."""
    out: dict[str, int] = {}
    for name, value in getattr(args, "shape", []):
        if name in out and out[name] != value:
            raise InputError(f"--shape {name} is given twice ({out[name]} and {value})")
        out[name] = value
    return out


def model_files(args: argparse.Namespace):
    """The files named by add_model_args's arguments (runtime/doors.py)."""
    return locate(args.model, args.graph, args.params)


def add_threads_arg(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument("--threads", type=int_at_least(1, high=MAX_THREADS), default=None,
                   help=f"{what}, 1 to {MAX_THREADS} (default: TVM_NUM_THREADS when set, "
                        "else every CPU this process may use)")


def add_html_arg(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument("--html", metavar="FILE",
                   help=f"save {what} as a self-contained HTML report with charts (one file, "
                        "inline SVG, nothing loaded from the network)")


def add_view_args(p: argparse.ArgumentParser) -> None:
    """How the table is shown: shared by profile and show."""
    p.add_argument("--order", choices=["exec", "time"], default="exec",
                   help="rows in execution order (exec), or by time: by warm median (the first "
                        "per-op mode measured when warm was not), largest first")
    p.add_argument("--aggregate", action="store_true",
                   help="one row per kernel hash and argument shapes, times summed")
    add_wide_arg(p)


def add_wide_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--wide", action="store_true",
                   help="everything, uncut: no line is cut or wrapped to the terminal (and "
                        "profile tables gain argument shapes, hashes, per-mode sample counts "
                        "and spreads); for profile, the full report instead of its one-screen "
                        "default (show prints the full one too); default: fit $COLUMNS or the "
                        "terminal, 120 if none")


def text_width(args: argparse.Namespace) -> int | None:
    """The width reports are fitted to: None (no limit) with --wide, else $COLUMNS or the
    terminal's width, 120 when stdout is not a terminal."""
    if getattr(args, "wide", False):
        return None
    return max(40, shutil.get_terminal_size((120, 24)).columns)
