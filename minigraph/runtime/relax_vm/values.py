"""The values a derivation holds in VM registers (tensors, tuples, storages) and the graph it
builds from them: the types the builtins' handlers (builtins.py) and the walk (derive.py)
share, so neither imports the other."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping

import numpy as np

from ...artifacts.signatures import ArgSpec
from ...errors import InputError
from .bytecode import Instr, VMExec
from .shapes import ShapeHeap, symbols_of

# the library's host functions, called while deriving: (name, arguments) -> result
Host = Callable[[str, list], object]


class Refusal(Exception):
    """Raised by a handler; vm_graph turns it into an InputError naming the instruction."""


class Tensor:
    """A tensor held in a VM register while deriving: its entry is set once it is written
    (a parameter or constant is written from the start; an alloc_tensor by its kernel)."""

    __slots__ = ("shape", "dtype", "storage", "pc", "param", "entry", "used", "base")

    def __init__(self, shape, dtype, storage, pc: int, param: str | None = None) -> None:
        self.shape, self.dtype, self.storage, self.pc = shape, dtype, storage, pc
        self.param, self.entry, self.used = param, None, False
        self.base: Tensor | None = None  # a view's source (its dtype may be learnt later)

    def learn_dtype(self, dtype: str | None) -> None:
        """A dtype found by a later use: a view's unknown dtype is its source's too."""
        t: Tensor | None = self
        while t is not None and t.dtype is None:
            t.dtype, t = dtype, t.base


@dataclass(frozen=True)
class Tup:
    items: tuple


@dataclass(frozen=True)
class Storage:
    key: tuple  # ("alloc_storage", pc, serial): an inlined function's storages stay apart
    pc: int
    nbytes: int


@dataclass(frozen=True)
class BuiltinUse:
    pc: int
    name: str
    role: str


class Builder:
    """The graph being derived: nodes, entries, constants, storages and the builtins met.
    The builtins' handlers (builtins.py) add to it; derive.py walks the bytecode with it."""

    def __init__(self, exe: VMExec, sigs: Mapping[str, tuple[ArgSpec, ...]],
                 symbols: Mapping[str, int] | None = None, host: Host | None = None) -> None:
        self.exe, self.sigs = exe, sigs
        self.symbols = dict(symbols or {})   # sizes given by name (--shape n=128)
        self.host = host                     # calls the library's shape functions
        self.heaps: list[ShapeHeap] = []     # the shape heap of each (inlined) call
        self.nodes: list[dict] = []
        self.entries: list[Tensor] = []          # per entry id
        self.consts: dict[int, Tensor] = {}
        self.builtins: list[BuiltinUse] = []
        self.op_pcs: list[int] = []
        self.storage: dict[object, tuple[str, int | None, int | None]] = {}
        self.calls: dict[str, int] = {}
        self.notes: list[str] = []
        self.fn = ""

    # -- nodes and entries ------------------------------------------------------------------
    def add_null(self, name: str, t: Tensor) -> Tensor:
        t.entry = (len(self.nodes), 0)
        self.nodes.append({"op": "null", "name": name, "inputs": []})
        self.entries.append(t)
        return t

    def add_op(self, ins: Instr, func_name: str, label: str, inputs: list[Tensor],
               outputs: list[Tensor]) -> None:
        k = self.calls[label] = self.calls.get(label, -1) + 1
        nid = len(self.nodes)
        self.nodes.append({"op": "tvm_op", "name": label if k == 0 else f"{label}_{k}",
                           "inputs": [[*t.entry, 0] for t in inputs],
                           "attrs": {"func_name": func_name, "num_inputs": str(len(inputs)),
                                     "num_outputs": str(len(outputs)), "flatten_data": "0",
                                     "vm_pc": str(ins.pc)}})
        for i, t in enumerate(outputs):
            t.entry = (nid, i)
            self.entries.append(t)
        self.op_pcs.append(ins.pc)

    def constant(self, k: int) -> object:
        value = self.exe.constants[k] if 0 <= k < len(self.exe.constants) else None
        if not isinstance(value, np.ndarray):
            return value
        if k not in self.consts:
            t = Tensor(tuple(value.shape), str(value.dtype), ("constant", k), -1)
            self.storage[t.storage] = ("constant", None, None)
            self.consts[k] = self.add_null(f"c[{k}]", t)
        return self.consts[k]

    def sizes(self) -> dict[str, int]:
        """Every named symbol's value: given, or read from an input's shape."""
        out = dict(self.symbols)
        for heap in self.heaps:
            out.update(symbols_of(heap))
        return out

    def refuse(self, ins: Instr, why: str) -> InputError:
        return InputError(f"{self.fn} instruction {ins.pc} `{self.exe.text(ins)}`: {why}")
