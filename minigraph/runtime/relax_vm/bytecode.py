"""A Relax VM executable's bytes -> its function table, constant pool and instructions (pure).

Mirrors ``VMExecutable::LoadFromBytes`` (src/runtime/vm/executable.cc, VM format "0.14"):
header (magic, version), global section (``VMFuncInfo`` per function), memory scopes (V2
magic only), constant pool (tensors, shapes, strings, ints, floats, dtypes), code section
(``instr_offset``, ``instr_data``). Instructions decode as ``VMExecutable::GetInstruction``;
``Instr.text`` prints them as ``as_text()`` does, so an error can quote the instruction the
user would see there. Tensors are decoded by the param-blob reader (same ``SaveDLTensor``
format). Every count is checked against the bytes that remain: a corrupt executable is an
InputError naming the section, never a crash.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

from ...artifacts import elf
from ...artifacts.dlpack import dtype_name
from ...artifacts.library_bin import VM_KIND, LibraryBin, library_bin_of
from ...artifacts.params import read_array
from ...artifacts.stream import Reader
from ...errors import InputError, ParamsError

MAGICS = (0xD225DE2F4214151D, 0xD225DE2F4214151E)  # kTVMVMBytecodeMagic, ...MagicV2
VERSION = "0.14"
OPCODES = {1: "call", 2: "ret", 3: "goto", 4: "if"}
ARG_KINDS = ("reg", "imm", "const", "func")  # Instruction::ArgKind 0..3
FUNC_KINDS = ("packed_func", "vm_func", "vm_tir_func")  # VMFuncInfo::FuncKind 0..2
VOID_REG, VM_REG = 1 << 54, (1 << 54) + 1  # kVoidRegister, kVMRegister
# ffi::TypeIndex of the constant pool's cells (tvm_ffi/c_api.h)
_T_INT, _T_FLOAT, _T_DTYPE, _T_STR, _T_SHAPE, _T_TENSOR = 1, 3, 5, 65, 69, 70


class Shape(tuple):
    """An ``ffi::Shape`` constant (kept apart from a tuple of ints the code builds)."""


class DType(str):
    """A ``DLDataType`` constant, as TVM spells it ('float32')."""


@dataclass(frozen=True)
class FuncInfo:
    """``VMFuncInfo``: one entry of the function table."""

    kind: str
    name: str
    start: int
    end: int
    num_args: int
    register_file_size: int
    param_names: tuple[str, ...]


@dataclass(frozen=True)
class Arg:
    kind: str   # reg | imm | const | func
    value: int


@dataclass(frozen=True)
class Instr:
    """One decoded instruction (``Instruction``); unused fields are 0 / ()."""

    pc: int
    op: str                       # call | ret | goto | if
    func_idx: int = 0             # call
    args: tuple[Arg, ...] = ()    # call
    dst: int = VOID_REG           # call
    reg: int = 0                  # ret: result; if: cond
    offset: int = 0               # goto: pc_offset; if: false_offset


@dataclass(frozen=True)
class VMExec:
    functions: tuple[FuncInfo, ...]
    constants: tuple[object, ...]   # np.ndarray | Shape | DType | str | int | float
    instrs: tuple[Instr, ...]

    def function(self, name: str) -> FuncInfo | None:
        return next((f for f in self.functions if f.name == name), None)

    def vm_functions(self) -> tuple[FuncInfo, ...]:
        return tuple(f for f in self.functions if f.kind != "packed_func")

    def entry(self, name: str | None = None) -> FuncInfo:
        """The Relax function ``name``; by default ``main``, or the only one there is."""
        funcs = self.vm_functions()
        listed = ", ".join(x.name for x in funcs) or "none"
        f = self.function(name or "main")
        if f is not None and f.kind != "packed_func":
            return f
        if name is None and len(funcs) == 1:
            return funcs[0]
        raise InputError(f"no Relax function '{name}' in the executable (it has {listed})"
                         if name else f"the executable has no 'main' but several Relax "
                         f"functions ({listed}); `minigraph import --function NAME` derives one")

    def text(self, ins: Instr) -> str:
        """The instruction as ``as_text()`` prints it, e.g. ``call reshape in: %8, %10 dst: %void``."""
        if ins.op == "call":
            args = ", ".join(self._arg(a) for a in ins.args)
            return f"call {self._func(ins.func_idx)} in: {args} dst: {reg_name(ins.dst)}"
        if ins.op == "ret":
            return f"ret {reg_name(ins.reg)}"
        if ins.op == "goto":
            return f"goto {ins.offset}"
        return f"If {reg_name(ins.reg)}, {ins.offset}"

    def callee(self, ins: Instr) -> str:
        return self._func(ins.func_idx)

    def _func(self, idx: int) -> str:
        return self.functions[idx].name if 0 <= idx < len(self.functions) else \
            f"unknown_func_index({idx})"

    def _arg(self, a: Arg) -> str:
        return {"reg": lambda v: reg_name(v), "imm": lambda v: f"i{v}",
                "const": lambda v: f"c[{v}]", "func": lambda v: f"f[{self._func(v)}]"}[a.kind](a.value)


def reg_name(reg: int) -> str:
    return "%void" if reg == VOID_REG else "%vm" if reg == VM_REG else f"%{reg}"


def _func_info(r: Reader, i: int) -> FuncInfo:
    (kind,) = r.unpack("i", f"function {i} kind")
    name = r.str_(f"function {i} name")
    start, end, num_args, regs = r.unpack("qqqq", f"function {name} header")
    names = tuple(r.str_(f"{name} parameter name") for _ in range(r.count(f"{name} params", 8)))
    if not 0 <= kind < len(FUNC_KINDS):
        raise ParamsError(f"function {name} has unknown kind {kind}")
    return FuncInfo(FUNC_KINDS[kind], name, start, end, num_args, regs, names)


def _dtype(code: int, bits: int, lanes: int) -> DType:
    return DType(dtype_name(code, bits, lanes))


def _constant(r: Reader, i: int) -> object:
    (tag,) = r.unpack("i", f"constant {i} type")
    if tag == _T_TENSOR:
        return read_array(r, f"c[{i}]")
    if tag == _T_SHAPE:
        return Shape(r.i64s(f"constant {i} shape"))
    if tag == _T_STR:
        return r.str_(f"constant {i} string")
    if tag == _T_INT:
        return r.unpack("q", f"constant {i}")[0]
    if tag == _T_FLOAT:
        return r.unpack("d", f"constant {i}")[0]
    if tag == _T_DTYPE:
        return _dtype(*r.unpack("BBH", f"constant {i} dtype"))
    raise ParamsError(f"constant {i} has a type ({tag}) the VM cannot load")


def _arg(pc: int, word: int) -> Arg:
    """``Instruction::Arg``: kind in the top 8 bits, a sign-extended 56-bit value below."""
    w = word & (2**64 - 1)
    kind, value = w >> 56, w & ((1 << 56) - 1)
    if kind >= len(ARG_KINDS):
        raise ParamsError(f"instruction {pc} has an argument of unknown kind {kind}")
    return Arg(ARG_KINDS[kind], value - (1 << 56) if value >= 1 << 55 else value)


def _decode(pc: int, words: tuple[int, ...], at: int) -> Instr:
    def word(k: int) -> int:
        if not 0 <= at + k < len(words):
            raise ParamsError(f"instruction {pc} runs past the code section")
        return words[at + k]
    op = OPCODES.get(word(0))
    if op == "call":
        n = word(3)
        if n < 0 or at < 0 or at + 4 + n > len(words):
            raise ParamsError(f"instruction {pc} has {n} arguments past the code section")
        args = tuple(_arg(pc, w) for w in words[at + 4:at + 4 + n])
        return Instr(pc, op, func_idx=word(2), args=args, dst=word(1))
    if op == "ret":
        return Instr(pc, op, reg=word(1))
    if op == "goto":
        return Instr(pc, op, offset=word(1))
    if op == "if":
        return Instr(pc, op, reg=word(1), offset=word(2))
    raise ParamsError(f"instruction {pc} has unknown opcode {words[at]}")


def parse_executable(blob: bytes) -> VMExec:
    """``VMExecutable::LoadFromBytes`` in Python; ``InputError`` names the corrupt section."""
    r = Reader(blob, "executable")
    section = "header"
    try:
        magic = r.u64("magic")
        if magic not in MAGICS:
            raise ParamsError(f"bad magic {magic:#x}")
        version = r.str_("version")
        if version != VERSION:
            raise ParamsError(f"VM format {version!r}, this TVM reads {VERSION!r}")
        section = "global"
        funcs = tuple(_func_info(r, i) for i in range(r.count("function table", 48)))
        section = "memory scope"
        if magic == MAGICS[1]:
            for _ in range(r.count("memory scopes", 16)):
                r.unpack("q", "scope constant"), r.str_("scope")
        section = "constant"
        consts = tuple(_constant(r, i) for i in range(r.count("constant pool", 4)))
        section = "code"
        offsets, words = r.i64s("instr_offset"), r.i64s("instr_data")
        instrs = tuple(_decode(pc, words, at) for pc, at in enumerate(offsets))
        section = "global"
        for f in funcs:
            if f.kind != "packed_func" and not (0 <= f.start <= f.end <= len(instrs)):
                raise ParamsError(f"function {f.name} spans instructions {f.start}..{f.end} "
                                  f"of {len(instrs)}")
    except (ParamsError, struct.error) as err:
        raise InputError(f"corrupt Relax VM executable ({section} section: {err})") from None
    return VMExec(funcs, consts, instrs)


def executable_of(lib_bin: LibraryBin | None, path) -> VMExec | None:
    """The Relax VM executable in a library's embedded module tree (None: it embeds none)."""
    blob = None if lib_bin is None else lib_bin.find(VM_KIND)
    if blob is None:
        return None
    try:
        return parse_executable(blob)
    except InputError as err:
        raise InputError(f"{path}: {err}") from None


def read_executable(path) -> VMExec | None:
    """The Relax VM executable embedded in the library at ``path`` (None: it embeds none);
    for tools and tests: the door takes it from the facts the classifier read."""
    return executable_of(library_bin_of(elf.read_image(path)), path)
