"""Kernel signatures read from model.so (runtime/load.py checks graph.json's arguments with them).

TVM 0.27's packed kernels validate their arguments in generated code and raise with the
kernel's signature, e.g. ``mean(lv7: Tensor([T.int64(1), T.int64(8)], float32), ...)``; that
signature is a string constant in the library. Reading it from the file lets the executor
compare every op's argument shapes and dtypes with what its kernel expects *before* the first
call, and name the node and graph.json field that disagree. A library without such strings
(another TVM version, hand-written kernels) is simply not pre-checked: the kernel's own check
still runs, and ``DebugExecutor.run_op`` attributes its error to the op.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Iterable

from . import elf

_TENSOR = re.compile(r"(?P<name>[^:\s]+): Tensor\(\[(?P<dims>.*)\], (?P<dtype>[\w.]+)\)")
_DIM = re.compile(r"(?:T\.int(?:32|64)\()?(\d+)\)?")
_IDENT = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.")
_MAX_SIG = 1 << 16  # bytes; a signature longer than this is not one


@dataclass(frozen=True)
class ArgSpec:
    """One kernel parameter; shape dims are None where symbolic, shape None if not a Tensor."""

    name: str
    shape: tuple[int | None, ...] | None
    dtype: str | None
    dims: tuple[str, ...] = ()   # each dimension as the signature prints it ("n", "n * 2")

    def describe(self) -> str:
        dims = ", ".join("?" if d is None else str(d) for d in self.shape or ())
        return f"{self.dtype}[{dims}]"


def _split_args(text: str) -> list[str] | None:
    """'a: X, b: Tensor([1, 2], f)' -> ['a: X', 'b: Tensor([1, 2], f)'] at bracket depth 0."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += 1 if ch in "([" else -1 if ch in ")]" else 0
        if depth < 0:
            return None
        if ch == "," and depth == 0:
            out.append(text[start:i].strip())
            start = i + 1
    tail = text[start:].strip()
    return out + [tail] if tail else out


def parse_signature(name: str, text: str) -> tuple[ArgSpec, ...] | None:
    """The parameters of ``name(...)``, or None if ``text`` is not such a signature."""
    if not (text.startswith(name + "(") and text.endswith(")")):
        return None
    parts = _split_args(text[len(name) + 1:-1])
    if parts is None:
        return None
    specs = []
    for part in parts:
        m = _TENSOR.fullmatch(part)
        if m is None:
            specs.append(ArgSpec(part.partition(":")[0], None, None))
            continue
        dims = [d.strip() for d in _split_args(m["dims"]) or []]
        shape = tuple(int(dm[1]) if (dm := _DIM.fullmatch(d)) else None for d in dims)
        specs.append(ArgSpec(m["name"], shape, m["dtype"], tuple(dims)))
    return tuple(specs)


def _find(data, name: str) -> tuple[ArgSpec, ...] | None:
    key, pos = name.encode() + b"(", 0
    while (pos := data.find(key, pos)) >= 0:
        start, pos = pos, pos + 1
        if start and data[start - 1] in _IDENT:  # inside a longer name
            continue
        end = data.find(b"\0", start, start + _MAX_SIG)
        raw = bytes(data[start:end if end >= 0 else start]).rstrip(b"`,")
        specs = parse_signature(name, raw.decode("utf-8", "replace"))
        if specs is not None:
            return specs
    return None


def read_signatures(path: str | os.PathLike, names: Iterable[str]
                    ) -> dict[str, tuple[ArgSpec, ...]]:
    """func_name -> its parameters, for the names whose signature the library records."""
    out: dict[str, tuple[ArgSpec, ...]] = {}
    try:
        with elf.mapped(path) as data:
            for name in names:
                specs = _find(data, name)
                if specs is not None:
                    out[name] = specs
    except OSError:
        return {}
    return out
