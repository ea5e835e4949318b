"""Ops called one at a time, a failure named by its op: the debug executor's side of the executor.

TVM's GraphExecutorDebug subclassed the graph executor to call ``execute_node`` op by op; the
plain ``run`` loop stays bare (runtime/executor.py) and these calls sit beside it, for the
profilers and checks that must say which op failed or crashed. Each records the op in flight
first (measure/inflight.py), so a parent names the op a crash killed.
"""
from __future__ import annotations

from ..errors import KernelError, last_line
from ..measure.inflight import FLIGHT
from .bind import BoundOp


def kernel_message(err: Exception) -> str:
    """TVM's argument-check errors span lines (problem, signature, 'expected X'): keep the
    problem and the expectation, drop the long signature."""
    lines = [ln.strip() for ln in str(err).strip().splitlines() if ln.strip()]
    if len(lines) > 2 and lines[-1].startswith("expected"):
        return f"{lines[0].removesuffix(' when calling:')}, {lines[-1]}"
    return last_line(err)


class CheckedCalls:
    """``run_op``, ``call_op``, ``run_checked`` over ``self.ops`` (an Executor's bound ops)."""

    ops: tuple[BoundOp, ...]

    def record_ops(self) -> None:
        """Writes the op table a parent reads to name the op a crash killed."""
        FLIGHT.ops(self.describe_ops)

    def describe_op(self, index: int) -> str:
        """'op 3 (node 7 'name', kernel 'func')': how errors and crash reports name an op."""
        op = self.ops[index]
        return f"op {op.index} (node {op.node_id} '{op.name}', kernel '{op.func_name}')"

    def describe_ops(self) -> list[str]:
        return [self.describe_op(i) for i in range(len(self.ops))]

    def run_op(self, index: int) -> None:
        """Runs one op, attributing a kernel failure to it (profilers and diagnostics), and
        recorded as the op in flight first (a crash is attributed to it too)."""
        FLIGHT.op(index)
        self.call_op(index)

    def call_op(self, index: int) -> None:
        """``run_op`` without the in-flight record: for timed windows, whose caller records
        the op (``FLIGHT.op``) before its clock starts."""
        fn, args = self.ops[index].call
        try:
            fn(*args)
        except Exception as err:
            raise KernelError(f"{self.describe_op(index)} failed: {kernel_message(err)}") \
                from err

    def run_checked(self) -> None:
        """``run`` with a failing (or crashing) kernel attributed to its op."""
        for i in range(len(self.ops)):
            self.run_op(i)
        FLIGHT.op(-1)  # no op in flight after it: a full run that follows records none
