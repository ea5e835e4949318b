"""Symbolic dimensions, made concrete: the VM's shape heap evaluated for the sizes given.

A Relax function with a symbolic dimension (``n``: a sequence length, a batch) keeps its
sizes in a shape heap (``vm.builtin.alloc_shape_heap``, an int64 array): ``match_shape``
stores an argument's dimension into a slot (or checks it against one), the library's
``shape_func`` PrimFuncs compute derived sizes into other slots (every storage's byte size
among them), and ``make_shape`` reads them back (src/runtime/vm/builtin.cc; MatchShapeCode 0
assert-equal-to-immediate, 1 store-to-heap, 2 no-op, 3 assert-equal-to-load; MakeShapeCode 0
immediate, 1 load). Here the heap holds Python ints: a slot is filled from an input's shape,
or from ``--shape n=128`` through the name the ErrorContext annotation gives the dimension.
"""
from __future__ import annotations

import ast
import operator
import re
from dataclasses import dataclass, field

_ANNOTATION = re.compile(r"annotation=R\.(?:Tensor|Shape)\(\(?\[?([^\])]*)")
_PARAM = re.compile(r"param=([^,)]+)")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
        ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod}


class Size(int):
    """A size given by name and the option that gave it, for the messages about it: a sweep
    (``--sweep n=16,32``) gives ``Size(16, "--sweep")``; a plain int was given by ``--shape``.
    It is an int everywhere else (a heap slot, a shape, a saved document)."""

    option: str

    def __new__(cls, value: int, option: str) -> "Size":
        size = super().__new__(cls, value)
        size.option = option
        return size


def given_by(value: object) -> str:
    """The option that gave a size: '--shape', or a Size's own."""
    return getattr(value, "option", "--shape")


@dataclass
class ShapeHeap:
    """The heap of one function call: slot values (None: not known yet), and for each slot
    filled from a named dimension, its name and where it was met."""

    slots: list[int | None]
    names: dict[int, str] = field(default_factory=dict)
    where: dict[int, str] = field(default_factory=dict)


def annotation_dims(err_ctx: object) -> tuple[list[str], str | None]:
    """The dimension names of an ErrorContext annotation ('n', '256') and the param it names:
    ``ErrorContext(fn=forward, loc=param[0], param=x, annotation=R.Tensor((n, 256), ...))``."""
    text = err_ctx if isinstance(err_ctx, str) else ""
    m, p = _ANNOTATION.search(text), _PARAM.search(text)
    dims = [d.strip() for d in m[1].split(",") if d.strip()] if m else []
    return dims, p[1].strip() if p else None


def eval_dim(text: str, symbols: dict[str, int]) -> int | None:
    """A signature's dimension ('256', 'T.int64(256)', 'n', 'n * T.int64(2)') for the known
    symbols; None when it names one not known. Only + - * // % of integers are evaluated."""
    text = re.sub(r"T\.int(?:32|64)\(([^()]*)\)", r"(\1)", text)
    try:
        node = ast.parse(text, mode="eval").body
    except SyntaxError:
        return None
    return _eval(node, symbols)


def _eval(node: ast.AST, symbols: dict[str, int]) -> int | None:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.Name):
        return symbols.get(node.id)
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        a, b = _eval(node.left, symbols), _eval(node.right, symbols)
        if a is None or b is None or (isinstance(node.op, (ast.FloorDiv, ast.Mod)) and b == 0):
            return None
        return _OPS[type(node.op)](a, b)
    return None


def symbols_of(heap: ShapeHeap | None) -> dict[str, int]:
    """Name -> value of every named slot that is known."""
    if heap is None:
        return {}
    return {n: heap.slots[k] for k, n in heap.names.items() if heap.slots[k] is not None}


def is_symbol(name: str) -> bool:
    return bool(_IDENT.fullmatch(name))
