"""What each Relax VM builtin becomes in a derived graph (one table: ``BUILTINS``).

A builtin is either modelled (a ``__nop`` view, a ``__copy``, a storage id, a tuple of entries)
or accounted for as executor work the graph executor does differently (``ROLES`` says how);
none is dropped silently: derive.py records every one it meets with its role. The semantics
follow src/runtime/vm/builtin.cc (TVM 0.27): ``MatchShapeCode`` 0 assert-equal-to-immediate,
1 store-to-heap, 2 no-op, 3 assert-equal-to-load; ``MakeShapeCode`` 0 immediate, 1 load.
"""
from __future__ import annotations

import math
from typing import Callable

from ...artifacts.dlpack import DLTYPE_BITS, KDLCPU, entry_nbytes
from .bytecode import Instr
from .shapes import ShapeHeap, annotation_dims, given_by, is_symbol
from .values import Builder, Refusal, Storage, Tensor, Tup

ROLES = {
    "check": "argument check; Executor.set_input checks every input's dtype and shape",
    "storage": "allocation; done once before the first run (storage ids of the plan)",
    "free": "reference drop (kill_object); pools live as long as the executor",
    "alias": "register or tuple bookkeeping; no work",
    "shape": "shape value; folded while deriving",
    "view": "__nop node; its output shares its input's storage",
    "copy": "__copy node",
    "inline": "call of another Relax function; its body is inlined",
}


def _nbytes(shape: tuple[int, ...], dtype: str) -> int:
    if dtype not in DLTYPE_BITS:
        raise Refusal(f"uses dtype '{dtype}', which minigraph cannot allocate; supported: "
                      f"{', '.join(DLTYPE_BITS)}")
    return entry_nbytes(shape, dtype)


def _sized(d: Builder, shape: tuple[int, ...], dtype: str, what: str) -> int:
    """The bytes of an allocation; a negative dimension or 2**63 bytes or more is the sizes
    given overflowing the int64 arithmetic of the VM's shape functions (a 300-digit or
    negative byte count would say nothing)."""
    nbytes = _nbytes(shape, dtype)
    if min(shape, default=0) < 0 or nbytes >= 1 << 63:
        given = {**d.sizes(), **d.symbols}  # the heap's copies of given sizes are plain ints
        sizes = ", ".join(f"{given_by(v)} {k}={v}" for k, v in sorted(given.items()))
        size = "a negative size" if min(shape, default=0) < 0 else "2**63 bytes or more"
        raise Refusal(f"{what} comes out as {dtype}{list(shape)}, {size}: the sizes given "
                      f"({sizes or 'by the inputs'}) overflow the int64 arithmetic of TVM's "
                      "shapes; give smaller sizes")
    return nbytes


def _tensor(x: object, what: str) -> Tensor:
    if not isinstance(x, Tensor):
        raise Refusal(f"{what} is {type(x).__name__}, expected a tensor")
    return x


def _static_shape(x: object, what: str) -> tuple[int, ...]:
    if not isinstance(x, tuple) or not all(isinstance(d, int) for d in x):
        raise Refusal(f"{what} is not a static shape")
    return tuple(x)


def check_tensor_info(d: Builder, ins: Instr, args: list):
    t = _tensor(args[0], "the checked value")
    ndim = args[1] if len(args) > 1 else -1
    dtype = args[2] if len(args) == 4 and isinstance(args[2], str) else None
    if t.dtype is None:
        t.dtype = dtype
    if t.shape is not None and ndim not in (-1, len(t.shape)):
        raise Refusal(f"checks ndim {ndim} of a tensor of shape {list(t.shape)}")
    return "check", None


def _heap(x: object) -> ShapeHeap:
    if not isinstance(x, ShapeHeap):
        raise Refusal("reads a shape heap that is not one (a corrupt executable?)")
    return x


def alloc_shape_heap(d: Builder, ins: Instr, args: list):
    """``vm.builtin.alloc_shape_heap(vm, size)``: the int64 slots of one call's sizes."""
    heap = ShapeHeap([None] * int(args[1]))
    d.heaps.append(heap)
    return "shape", heap


def _unbound(d: Builder, slot: int, name: str | None, where: str) -> str:
    what = f"symbol '{name}'" if name else f"shape heap slot {slot}"
    give = f"--shape {name}=N" if name and is_symbol(name) else "--shape NAME=N"
    gave = ", ".join(f"{given_by(v)} gave {k}" for k, v in sorted(d.symbols.items()))
    other = f" ({gave}, which it does not name here)" if d.symbols else ""
    return (f"needs a value for {what} ({where}): give {give}, or the input itself "
            f"(--input NAME=FILE.npy), whose shape gives it{other}")


def _dims(d: Builder, t_shape, heap, codes, names, where) -> list[int | None]:
    """Each matched dimension's value: known, given by name, or read from the heap."""
    out: list[int | None] = []
    for i in range(len(codes) // 2):
        code, v = codes[2 * i], codes[2 * i + 1]
        name = names[i] if i < len(names) else None
        if t_shape is not None:
            out.append(t_shape[i])
        elif code == 0:
            out.append(v)
        elif code in (1, 3):
            known = heap.slots[v] if heap is not None else None
            out.append(known if known is not None else d.symbols.get(name or ""))
            if out[-1] is None:
                raise Refusal(_unbound(d, v, name, f"{where} dim {i}"))
        else:
            out.append(None)
    return out


def _store(heap: ShapeHeap | None, dims, codes, names, where: str, err: str) -> None:
    """What the VM does with known dims: store (1), assert (0, 3); a mismatch is its error."""
    for i, got in enumerate(dims):
        code, v = codes[2 * i], codes[2 * i + 1]
        want = v if code == 0 else heap.slots[v] if code == 3 and heap is not None else None
        if code == 1 and heap is not None:
            if heap.slots[v] is None:
                heap.slots[v] = got
                if i < len(names) and is_symbol(names[i]):
                    heap.names[v], heap.where[v] = names[i], f"{where} dim {i}"
                continue
            want = heap.slots[v]
        if want is not None and got is not None and got != want:
            raise Refusal(f"the VM's own check fails: {err.strip() or where}: dimension {i} "
                          f"is {got}, the executable requires {want}")


def match_shape(d: Builder, ins: Instr, args: list):
    """``vm.builtin.match_shape(value, heap, ndim, (code, value) x ndim, err_ctx)``: fills the
    heap from a known shape, or a parameter's shape from the heap and the sizes given."""
    size = args[2]
    codes = args[3:3 + 2 * size]
    heap = args[1] if isinstance(args[1], ShapeHeap) else None
    err = args[3 + 2 * size] if len(args) > 3 + 2 * size else ""
    names, param = annotation_dims(err)
    where = f"param {param}" if param else "a matched value"
    if isinstance(args[0], tuple):  # a shape value
        _store(heap, list(args[0]), codes, names, where, str(err))
        return "check", None
    t = _tensor(args[0], "the matched value")
    dims = _dims(d, t.shape, heap, codes, names, where)
    if t.shape is None and None not in dims:
        t.shape = tuple(dims)  # type: ignore[arg-type]
    _store(heap, dims, codes, names, where, str(err))
    return "check", None


def alloc_storage(d: Builder, ins: Instr, args: list):
    shape = _static_shape(args[1], "the storage size")
    device = args[2]
    scope = args[4] if len(args) > 4 else "global"
    if device not in (0, -1):
        raise Refusal(f"allocates on device index {device}; only the CPU (0) is supported")
    if scope not in ("global", None):
        raise Refusal(f"allocates in memory scope '{scope}'; only 'global' is supported")
    dtype = args[3] if isinstance(args[3], str) else "uint8"
    s = Storage(("alloc_storage", ins.pc, len(d.storage)), ins.pc,
                _sized(d, shape, dtype, "its storage"))
    d.storage[s.key] = ("alloc_storage", s.pc, s.nbytes)
    return "storage", s


def alloc_tensor(d: Builder, ins: Instr, args: list):
    s = args[0]
    if not isinstance(s, Storage):
        raise Refusal("allocates from something that is not a storage")
    if args[1] != 0:
        raise Refusal(f"places a tensor at byte offset {args[1]} of its storage; a graph "
                      "entry always starts at offset 0")
    shape, dtype = _static_shape(args[2], "the tensor shape"), str(args[3])
    if _sized(d, shape, dtype, "the tensor") > s.nbytes:
        raise Refusal(f"allocates {dtype}{list(shape)} from a {s.nbytes}-byte storage")
    return "storage", Tensor(shape, dtype, s.key, ins.pc)


def _view(d: Builder, ins: Instr, src: object, shape: tuple[int, ...], dtype: str):
    """A __nop node whose output entry shares the input's storage id (offset 0)."""
    src = _tensor(src, "the viewed value")
    if src.entry is None:
        raise Refusal("makes a view of a tensor no kernel has written yet")
    if src.shape is None:  # an unchecked parameter: only its size is known, from the view
        src.shape = (math.prod(shape),)
        d.notes.append(f"parameter '{src.param}' is not checked by the bytecode and first "
                       f"used through a view: bound flat, {src.shape[0]} elements "
                       "(--params gives its real shape)")
    if dtype is not None and src.dtype is not None and \
            _nbytes(shape, dtype) > _nbytes(src.shape, src.dtype):
        raise Refusal(f"views {src.dtype}{list(src.shape)} as a larger {dtype}{list(shape)}")
    src.used = True
    out = Tensor(shape, dtype, src.storage, ins.pc)
    out.base = src
    d.add_op(ins, "__nop", "reshape_view", [src], [out])
    return "view", out


def reshape(d: Builder, ins: Instr, args: list):
    """``vm.builtin.reshape``: ``Tensor::CreateView`` with the same dtype."""
    src = _tensor(args[0], "the reshaped value")
    shape = _static_shape(args[1], "the new shape")
    if src.shape is not None and math.prod(shape) != math.prod(src.shape):
        raise Refusal(f"reshapes {list(src.shape)} to {list(shape)}: element counts differ")
    return _view(d, ins, src, shape, src.dtype)


def create_view(d: Builder, ins: Instr, args: list):
    """``runtime.TVMTensorCreateView`` (R.memory.view lowered): a view at offset 0 only."""
    if len(args) > 3 and args[3] not in (0, None):
        raise Refusal(f"makes a view at byte offset {args[3]}; a graph entry starts at 0")
    shape = _static_shape(args[1], "the view's shape")
    dtype = str(args[2]) if isinstance(args[2], str) else _tensor(args[0], "the value").dtype
    return _view(d, ins, args[0], shape, dtype)


def to_device(d: Builder, ins: Instr, args: list):
    """A copy to the CPU: a __copy node writing a fresh storage (Tensor::CopyTo)."""
    src = _tensor(args[0], "the copied value")
    if args[1] != KDLCPU:
        raise Refusal(f"copies to device type {args[1]}; only the CPU (1) is supported")
    if src.entry is None or src.shape is None:
        raise Refusal("copies a tensor that is not written or has no known shape")
    src.used = True
    key = ("to_device", ins.pc, len(d.storage))
    d.storage[key] = ("to_device", ins.pc, None)
    out = Tensor(src.shape, src.dtype, key, ins.pc)
    d.add_op(ins, "__copy", "to_device", [src], [out])
    return "copy", out


def _load(heap: ShapeHeap | None, code: int, v: int) -> int:
    """MakeShapeCode: 0 the immediate, 1 a heap slot (known by now, or the size is unknown)."""
    if code == 0:
        return v
    if heap is None or heap.slots[v] is None:
        raise Refusal(f"reads shape heap slot {v}, which no input and no shape function set")
    return int(heap.slots[v])  # type: ignore[arg-type]


def make_shape(d: Builder, ins: Instr, args: list):
    """``vm.builtin.make_shape(heap, ndim, (code, value) x ndim)``: a concrete shape."""
    heap = args[0] if isinstance(args[0], ShapeHeap) else None
    size, codes = args[1], args[2:]
    return "shape", tuple(_load(heap, codes[2 * i], codes[2 * i + 1]) for i in range(size))


def make_prim_value(d: Builder, ins: Instr, args: list):
    """``vm.builtin.make_prim_value(heap, code, value)``: one int from the heap."""
    return "shape", _load(args[0] if isinstance(args[0], ShapeHeap) else None, args[1], args[2])


def match_prim_value(d: Builder, ins: Instr, args: list):
    """``vm.builtin.match_prim_value(value, heap, code, slot, err_ctx)``."""
    if not isinstance(args[0], int):
        raise Refusal("matches a scalar that is not a known integer")
    _store(args[1] if isinstance(args[1], ShapeHeap) else None, [args[0]], args[2:4], [],
           "a scalar", str(args[4]) if len(args) > 4 else "")
    return "check", None


def shape_of(d: Builder, ins: Instr, args: list):
    t = _tensor(args[0], "the value")
    if t.shape is None:
        raise Refusal(f"takes the shape of parameter '{t.param}', which is not checked")
    return "shape", tuple(t.shape)


def tuple_getitem(d: Builder, ins: Instr, args: list):
    if not isinstance(args[0], Tup) or not 0 <= args[1] < len(args[0].items):
        raise Refusal("takes an item of something that is not a tuple, or out of range")
    return "alias", args[0].items[args[1]]


def _alias(d, ins, args):
    return "alias", args[0]


def _free(d, ins, args):
    return "free", None


def _refuse(why: str) -> Callable:
    def handler(d, ins, args):
        raise Refusal(why)
    return handler


_DYNAMIC = _refuse("computes shapes from tensor contents at run time (data-dependent "
                   "shapes): sizes known only by running it cannot make a static graph")
_CLOSURE = _refuse("makes or calls a closure: higher-order functions are not a static graph")

BUILTINS: dict[str, Callable] = {
    "vm.builtin.alloc_shape_heap": alloc_shape_heap,
    "vm.builtin.call_tir_dyn": _refuse("calls a kernel with sizes passed as arguments "
                                       "(call_tir_dyn); minigraph's graph has tensor arguments "
                                       "only"),
    "vm.builtin.match_prim_value": match_prim_value,
    "vm.builtin.make_prim_value": make_prim_value,
    "vm.builtin.tensor_to_shape": _DYNAMIC,
    "vm.builtin.read_if_cond": _refuse("reads the condition of an R.If: control flow cannot be "
                                       "derived as a static graph"),
    "vm.builtin.make_closure": _CLOSURE,
    "vm.builtin.invoke_closure": _CLOSURE,
    "vm.builtin.check_tensor_info": check_tensor_info,
    "vm.builtin.check_shape_info": lambda d, i, a: ("check", None),
    "vm.builtin.check_tuple_info": lambda d, i, a: ("check", None),
    "vm.builtin.check_func_info": lambda d, i, a: ("check", None),
    "vm.builtin.match_shape": match_shape,
    "vm.builtin.alloc_storage": alloc_storage,
    "vm.builtin.alloc_tensor": alloc_tensor,
    "vm.builtin.null_value": _free,
    "vm.builtin.tuple_reset_item": _free,
    "vm.builtin.reshape": reshape,
    "runtime.TVMTensorCreateView": create_view,
    "vm.builtin.to_device": to_device,
    "vm.builtin.copy": _alias,             # returns its argument: a register alias in the VM
    "vm.builtin.ensure_zero_offset": _alias,  # every derived entry is at offset 0
    "vm.builtin.make_tuple": lambda d, i, a: ("alias", Tup(tuple(a))),
    "vm.builtin.tuple_getitem": tuple_getitem,
    "vm.builtin.make_shape": make_shape,
    "vm.builtin.shape_of": shape_of,
}


def is_builtin(name: str) -> bool:
    """A VM builtin (``vm.*``, or a runtime function the VM's lowering calls), not a kernel."""
    return name in BUILTINS or name.startswith("vm.")
