"""What the data costs, per op: the op timed on its inputs as given and on copies with the
subnormal values flushed to zero, paired and interleaved under one protocol.

Both sides run the same kernel on fresh buffers of the same shapes (the given side on copies
of the op's real inputs, captured in the checked run), each pair taken back to back in
alternating order, so a slow stretch of the machine lands on both sides alike. The answer is
the median over pairs of given/flushed (and of given - flushed), with a 90% bootstrap
interval. Flushing the inputs removes what reading subnormals costs; subnormal *results* of
normal inputs (products that underflow) stay, so an op that only writes them is named, not
measured. Counterpart: none in TVM.
"""
from __future__ import annotations

import numpy as np

from ..measure.clock import Clock
from ..measure.inflight import FLIGHT
from ..results.data import DataCost, DataReport
from ..runtime.bind import rebind
from ..runtime.executor import Executor

# lazy: TVM (~1.2 s to import) is imported where it is called; TVM-free commands load this module

MIN_PAIRS, MAX_PAIRS = 7, 25
BUDGET_NS = 100e6          # per op and side, once MIN_PAIRS are taken
TARGET_SAMPLE_NS = 1e6     # calls per sample: about a millisecond of work
BOOTSTRAP = 2000


def flushed(arr: np.ndarray) -> np.ndarray:
    """A copy of ``arr`` with its subnormal values set to zero (other values unchanged)."""
    out = np.array(arr, copy=True)
    if out.dtype.kind == "f":
        tiny = np.finfo(out.dtype).tiny
        out[(np.abs(out) < tiny) & (out != 0)] = 0
    return out


def _call_on(ex: Executor, index: int, inputs: list[np.ndarray]):
    """Op ``index``'s call on fresh buffers: copies of ``inputs``, fresh outputs."""
    import tvm
    op = ex.ops[index]
    n_in = len(op.input_eids)
    args = [tvm.runtime.tensor(np.ascontiguousarray(a).reshape(op.args[k].shape), ex.device)
            for k, a in enumerate(inputs)]
    args += [tvm.runtime.empty(a.shape, a.dtype, ex.device) for a in op.args[n_in:]]
    return rebind(op, tuple(args))


def _sample(call, number: int, clock: Clock) -> float:
    fn, args = call
    t0 = clock()
    for _ in range(number):
        fn(*args)
    return (clock() - t0) / number


def _pairs(given, flush, clock: Clock) -> tuple[list[float], list[float], int]:
    """Interleaved samples of both calls (ns per call) and the calls per sample."""
    first = max(_sample(given, 1, clock), 1.0)  # untimed in effect: also warms both
    _sample(flush, 1, clock)
    number = int(max(1, min(10_000, TARGET_SAMPLE_NS // first)))
    g: list[float] = []
    f: list[float] = []
    while len(g) < MAX_PAIRS and (len(g) < MIN_PAIRS or sum(g) * number < BUDGET_NS):
        order = ((given, g), (flush, f)) if len(g) % 2 == 0 else ((flush, f), (given, g))
        for call, out in order:
            out.append(_sample(call, number, clock))
    return g, f, number


def _interval(values: np.ndarray, rng: np.random.Generator) -> tuple[float, float, float]:
    """(median, 5%, 95%) of the median, bootstrapped over the pairs."""
    boot = np.median(rng.choice(values, (BOOTSTRAP, values.size)), axis=1)
    return float(np.median(values)), float(np.quantile(boot, 0.05)), \
        float(np.quantile(boot, 0.95))


def measure_cost(ex: Executor, index: int, inputs: list[np.ndarray], clock: Clock) -> DataCost:
    """The data cost of op ``index`` reading ``inputs`` (its real input values)."""
    FLIGHT.phase("the data-cost measurement")  # what a crash report says was running
    FLIGHT.op(index)
    given = _call_on(ex, index, inputs)
    flush = _call_on(ex, index, [flushed(a) for a in inputs])
    g, f, number = _pairs(given, flush, clock)
    rng = np.random.default_rng(0)
    ga, fa = np.array(g), np.array(f)
    ratio = _interval(ga / np.maximum(fa, 1e-9), rng)
    cost = _interval(ga - fa, rng)
    method = (f"{len(g)} interleaved pairs of {number} call(s) each, timed from Python "
              "(perf_counter_ns) on fresh buffers")
    return DataCost(index, ex.ops[index].name, tuple(g), tuple(f), *ratio, *cost, method)


def measure_costs(ex: Executor, report: DataReport, captured: dict[int, list[np.ndarray]],
                  clock: Clock) -> tuple[DataCost, ...]:
    """The cost of every op that reads subnormal values (``captured``: its inputs' values
    from the checked run)."""
    out = []
    for o in report.ops:
        if any(a.counts.subnormal for a in o.reads()) and o.index in captured:
            out.append(measure_cost(ex, o.index, captured[o.index], clock))
    return tuple(out)
