"""Relax VM bytecode -> Graph: a static-shape function derived, instruction by instruction.

Walks the function as ``VirtualMachineImpl::RunLoop`` would, over symbolic values instead of
data: every kernel call (a packed function of the executable's library, destination-passing:
inputs, then the fresh tensors it writes) becomes a ``tvm_op`` node; ``vm.builtin.reshape``
becomes a ``__nop`` whose output shares its input's storage, ``vm.builtin.to_device`` (to the
CPU) a ``__copy``; the function's parameters and the tensor constants it uses become arg nodes
(constants named ``c[k]`` after their place in the constant pool, as ``as_text()`` names them).
Storage identity is the VM's own: one storage id per ``vm.builtin.alloc_storage`` that holds a
tensor, so the plan shown and run is the one the Relax compiler made (StaticPlanBlockMemory).

Every other builtin is accounted for in ``Derivation.builtins`` with the role it plays
(builtins.py); anything that is not static (shape heaps, control flow, closures, calls
outside the library, non-zero offsets) is refused with an InputError naming the instruction.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Mapping

import numpy as np

from ...artifacts.graph import Graph
from ...artifacts.graph_json import parse_graph
from ...artifacts.signatures import ArgSpec
from ...errors import InputError, last_line
from .builtins import BUILTINS, is_builtin
from .bytecode import VM_REG, VOID_REG, FuncInfo, Instr, VMExec
from .shapes import ShapeHeap, eval_dim, given_by
from .values import Builder, BuiltinUse, Host, Refusal, Tensor, Tup

_MAX_DEPTH = 16  # nested VM function calls inlined; deeper is recursion, not a static graph


@dataclass(frozen=True)
class StorageInfo:
    """One storage id of the derived graph, as the VM provides it."""

    sid: int
    kind: str             # alloc_storage | input | constant | to_device
    pc: int | None        # the instruction that allocates it (alloc_storage, to_device)
    vm_nbytes: int | None  # the size the VM allocates (alloc_storage's own size)


@dataclass(frozen=True)
class Derivation:
    """A derived graph and what it took: embedded constants, the VM's storages, every builtin."""

    function: str
    graph: Graph
    constants: dict[str, np.ndarray]
    storages: tuple[StorageInfo, ...]
    builtins: tuple[BuiltinUse, ...]
    op_pcs: tuple[int, ...]           # per op node in execution order: its call's pc
    notes: tuple[str, ...] = ()
    sizes: dict[str, int] = field(default_factory=dict)  # symbolic dimension -> its value

    def role_counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for b in self.builtins:
            out[b.role] = out.get(b.role, 0) + 1
        return out


class _Deriver(Builder):
    """The walk over a function's instructions (``VirtualMachineImpl::RunLoop`` over symbolic
    values)."""

    # -- the walk ---------------------------------------------------------------------------
    def value(self, ins: Instr, regs: dict, arg) -> object:
        if arg.kind == "reg":
            if arg.value == VOID_REG:
                return None
            if arg.value == VM_REG:
                return "%vm"
            if arg.value not in regs:
                raise self.refuse(ins, f"reads register %{arg.value} before it is written")
            return regs[arg.value]
        if arg.kind == "imm":
            return arg.value
        if arg.kind == "const":
            return self.constant(arg.value)
        raise self.refuse(ins, "passes a function as a value (closures are not a static graph)")

    def run(self, f: FuncInfo, args: list, depth: int = 0) -> object:
        if f.kind != "vm_func":
            raise InputError(f"{f.name} is a {f.kind}, not bytecode (built with "
                             "exec_mode='compiled'?); only bytecode functions can be derived")
        regs: dict[int, object] = dict(enumerate(args))
        for pc in range(f.start, f.end):
            ins = self.exe.instrs[pc]
            if ins.op == "ret":
                if ins.reg not in regs:
                    raise self.refuse(ins, "returns a register that was never written")
                return regs[ins.reg]
            if ins.op != "call":
                raise self.refuse(ins, "control flow (R.If / loops) cannot be derived as a "
                                  "static graph; only straight-line functions are supported")
            out = self.call(ins, [self.value(ins, regs, a) for a in ins.args], depth)
            if ins.dst < VOID_REG:
                regs[ins.dst] = out
        raise InputError(f"{f.name}: runs past its last instruction without `ret`")

    def call(self, ins: Instr, args: list, depth: int) -> object:
        f = self.exe.functions[ins.func_idx] if 0 <= ins.func_idx < len(self.exe.functions) \
            else None
        if f is None:
            raise self.refuse(ins, "calls a function index outside the function table")
        if f.kind != "packed_func":
            if depth >= _MAX_DEPTH:
                raise self.refuse(ins, "nests VM function calls too deeply (recursion?)")
            if len(args) != f.num_args:
                raise self.refuse(ins, f"passes {len(args)} arguments, {f.name} takes "
                                  f"{f.num_args}")
            self.builtins.append(BuiltinUse(ins.pc, f.name, "inline"))
            return self.run(f, args, depth + 1)
        handler = BUILTINS.get(f.name)
        if is_builtin(f.name):
            if handler is None:
                raise self.refuse(ins, f"{f.name} is not a static-graph builtin (KV caches, "
                                  "closures, shape heaps and callbacks cannot be derived)")
            try:
                role, out = handler(self, ins, args)
            except Refusal as why:
                raise self.refuse(ins, str(why)) from None
            except (IndexError, TypeError, ValueError):  # too few or mistyped arguments
                raise self.refuse(ins, f"{f.name} is called with arguments it cannot take "
                                  "(a corrupt executable?)") from None
            self.builtins.append(BuiltinUse(ins.pc, f.name, role))
            return out
        if any(isinstance(a, ShapeHeap) for a in args) or (args and all(
                isinstance(a, int) for a in args)):
            return self.host_call(ins, f.name, args)
        self.kernel(ins, f.name, args)
        return None

    def host_call(self, ins: Instr, name: str, args: list) -> object:
        """A shape function of the library (``shape_func``: reads and writes the heap; or
        ``compute_symbolic_expr``: ints in, an int out), run for the sizes known now."""
        if self.host is None:
            raise self.refuse(ins, f"'{name}' computes sizes in the library, which is not "
                              "loaded while deriving here")
        heaps = [a for a in args if isinstance(a, ShapeHeap)]
        if heaps and (len(args) != 1 or ins.dst != VOID_REG):
            raise self.refuse(ins, f"'{name}' mixes the shape heap with other arguments")
        try:
            out = self.host(name, [a.slots if isinstance(a, ShapeHeap) else a for a in args])
        except Exception as err:  # noqa: BLE001 - the library's own check, e.g. a bad size
            raise self.refuse(ins, f"'{name}' failed: {last_line(err)}") from None
        if heaps:
            heaps[0].slots[:] = [int(v) for v in out]  # type: ignore[union-attr]
            self.builtins.append(BuiltinUse(ins.pc, name, "shape"))
            return None
        self.builtins.append(BuiltinUse(ins.pc, name, "shape"))
        return int(out)  # type: ignore[arg-type]

    def kernel(self, ins: Instr, name: str, args: list) -> None:
        """A destination-passing kernel: the trailing fresh tensors are what it writes."""
        if not all(isinstance(a, Tensor) for a in args):
            bad = next(type(a).__name__ for a in args if not isinstance(a, Tensor))
            raise self.refuse(ins, f"passes a non-tensor ({bad}) to kernel '{name}'; only "
                              "static tensor arguments can be graph entries")
        n_in = len(args)
        while n_in and args[n_in - 1].entry is None:
            n_in -= 1
        inputs, outputs = args[:n_in], args[n_in:]
        if not outputs:
            what = "returns a value instead of writing a tensor it is given" \
                if ins.dst != VOID_REG else "writes no fresh tensor (an in-place kernel?)"
            raise self.refuse(ins, f"'{name}' {what}; only destination-passing calls "
                              "(call_tir, call_dps_packed) can be graph nodes")
        if len(set(map(id, outputs))) != len(outputs):
            raise self.refuse(ins, f"kernel '{name}' is passed one output tensor twice")
        for k, t in enumerate(inputs):
            if t.entry is None:
                raise self.refuse(ins, f"argument {k} of '{name}' was never written")
            t.used = True
            self.learn(ins, name, k, t)
        for k, t in enumerate(outputs, n_in):
            self.learn(ins, name, k, t)
        self.add_op(ins, name, name, inputs, outputs)

    def learn(self, ins: Instr, name: str, k: int, t: Tensor) -> None:
        """A parameter's shape and dtype from the kernel signature the library records (when
        no check in the bytecode gave them); the executor checks every argument against these
        signatures before the first call (load.check_graph_args)."""
        specs = self.sigs.get(name)
        if specs is None or k >= len(specs) or specs[k].shape is None:
            return
        spec = specs[k]
        if t.shape is None:
            sizes = self.sizes()
            dims = [d if d is not None else eval_dim(text, sizes)
                    for d, text in zip(spec.shape, spec.dims or [""] * len(spec.shape))]
            if None in dims:
                unknown = [text for d, text in zip(dims, spec.dims) if d is None]
                raise self.refuse(ins, f"kernel '{name}' argument {k} has the symbolic shape "
                                  f"{spec.describe()} and nothing gives "
                                  f"{', '.join(unknown) or 'its size'}: give --shape for it")
            t.shape = tuple(int(d) for d in dims)  # type: ignore[arg-type]
        t.learn_dtype(spec.dtype)

    # -- the result -------------------------------------------------------------------------
    def heads(self, ins_ret: str, value: object) -> list[list[int]]:
        if isinstance(value, Tup):
            return [h for v in value.items for h in self.heads(ins_ret, v)]
        if isinstance(value, Tensor) and value.entry is not None:
            value.used = True
            return [[*value.entry, 0]]
        what = "nothing" if value is None else type(value).__name__
        raise InputError(f"{self.fn} returns {what}, not tensors; only tensors and tuples of "
                         "tensors can be graph outputs")


def _storage_ids(d: _Deriver) -> tuple[list[int], list[StorageInfo]]:
    ids: dict[object, int] = {}
    infos: list[StorageInfo] = []
    for t in d.entries:
        if t.storage not in ids:
            ids[t.storage] = len(ids)
            kind, pc, nbytes = d.storage[t.storage]
            infos.append(StorageInfo(ids[t.storage], kind, pc, nbytes))
    return [ids[t.storage] for t in d.entries], infos


def derive(exe: VMExec, sigs: Mapping[str, tuple[ArgSpec, ...]],
           known: Mapping[str, tuple[tuple[int, ...], str]] | None = None,
           function: str | None = None, symbols: Mapping[str, int] | None = None,
           host: Host | None = None) -> Derivation:
    """The graph of ``function`` (default ``main``, or the only Relax function) for the sizes
    given. ``sigs``: kernel signatures from the library; ``known``: shapes of parameters (from
    a params blob or the inputs given), used where the bytecode does not check a parameter's
    shape, and to fill the shape heap; ``symbols``: sizes by name (``n=128``); ``host`` runs
    the library's shape functions (shapes.py)."""
    f = exe.entry(function)
    d = _Deriver(exe, sigs, symbols, host)
    d.fn = f.name
    params = []
    for i, name in enumerate(f.param_names):
        shape, dtype = (known or {}).get(name, (None, None))
        t = Tensor(shape, dtype, ("input", i), -1, param=name)
        d.storage[t.storage] = ("input", None, None)
        params.append(d.add_null(name, t))
    heads = d.heads("ret", d.run(f, list(params)))
    notes = d.notes + _finish_params(d, params)
    sids, infos = _storage_ids(d)
    doc = {"nodes": d.nodes, "arg_nodes": [i for i, n in enumerate(d.nodes) if n["op"] == "null"],
           "heads": heads, "node_row_ptr": _row_ptr(d.nodes),
           "attrs": {"shape": ["list_shape", [list(t.shape or ()) for t in d.entries]],
                     "dltype": ["list_str", [t.dtype or "float32" for t in d.entries]],
                     "storage_id": ["list_int", sids]}}
    graph = parse_graph(json.dumps(doc))
    consts = {f"c[{k}]": exe.constants[k] for k in d.consts}
    _check_symbols(d)
    return Derivation(f.name, graph, consts, tuple(infos), tuple(d.builtins),  # type: ignore
                      tuple(d.op_pcs), tuple(notes), d.sizes())


def _named(d: _Deriver) -> set[str]:
    return {n for heap in d.heaps for n in heap.names.values()}


def _check_symbols(d: _Deriver) -> None:
    """Every size given names a symbolic dimension, and agrees with the inputs given."""
    named = _named(d)
    unused = sorted(set(d.symbols) - named)
    if unused:
        raise InputError(f"{d.fn}: no symbolic dimension named {', '.join(unused)}"
                         + (f" (its symbols: {', '.join(sorted(named))})" if named
                            else " (its shapes are static)"))
    for heap in d.heaps:
        for k, name in heap.names.items():
            if name in d.symbols and heap.slots[k] != d.symbols[name]:
                given = d.symbols[name]
                raise InputError(f"{d.fn}: {name} is {heap.slots[k]} from {heap.where[k]}'s "
                                 f"shape, but {given_by(given)} gives {name}={given}")


def _finish_params(d: _Deriver, params: list[Tensor]) -> list[str]:
    """Every parameter needs a shape: an unused, unchecked one gets a scalar, said in a note."""
    notes = []
    for t in params:
        if t.shape is not None and t.dtype is None:
            t.dtype = "float32"
            notes.append(f"parameter '{t.param}': no check or kernel signature gives its dtype "
                         "(bound as float32)")
        if t.shape is not None:
            continue
        if t.used:
            raise InputError(f"{d.fn}: cannot tell the shape of parameter '{t.param}': the "
                             "bytecode does not check it and no kernel signature names it; "
                             "pass --params with it")
        t.shape, t.dtype = (), t.dtype or "float32"
        notes.append(f"parameter '{t.param}' is never used by {d.fn}; its shape is unknown "
                     "(bound as a scalar)")
    return notes


def _row_ptr(nodes: list[dict]) -> list[int]:
    out = [0]
    for n in nodes:
        out.append(out[-1] + (int(n["attrs"]["num_outputs"]) if n["op"] == "tvm_op" else 1))
    return out

