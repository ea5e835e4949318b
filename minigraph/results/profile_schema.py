"""Validation of a saved profile document (decoded JSON or msgpack) before anything renders it.

The report code (table, csv, trace, compare) indexes and iterates freely, so everything it
reads is checked here: one ``InputError`` naming the field path (e.g. ``ops[3].shapes[1]``)
instead of a TypeError deep inside a renderer. Unknown extra keys are allowed (newer writers).
"""
from __future__ import annotations

from typing import Any

from ..errors import InputError
from ..fileio.jsontext import non_finite
from ..measure.provenance import validate as validate_provenance
from ..measure.speed import SPEED_NUMBERS
from .data import DataReport
from .protocols import ProtocolResult
from .source import source_problem
from .timeline import check_pass

FORMAT = "minigraph-profile/1"
_OP_STR_KEYS = ("name", "func_name", "kind", "hash")
_COUNTER_KEYS = ("minflt", "majflt", "nvcsw", "nivcsw", "threads_created", "cpu")
_SETTINGS_NUMBERS = ("warm_budget_ms", "warmups", "warm_repeat", "warm_precision",
                     "inrun_passes", "e2e_repeat")  # number or null
_INT64 = (-2**63, 2**64 - 1)  # what msgpack (and TVM) can carry: a re-save must not fail
_MAX_DEPTH = 32  # a real profile nests 5 deep (ops[i].shapes[j][1][k])


class _Bad(Exception):
    """Internal: a field path and what is wrong with it."""


def _fail(path: str, what: str) -> None:
    raise _Bad(f"{path}: {what}")


_MAX_NS = 1e18  # 31 years: larger (or inf/NaN) is corruption, and would overflow the statistics
MAX_FLOPS = 1e18  # an op's floating-point operations: a whole LLM layer is ~1e12


def _number(x: object) -> bool:
    # finite and modest: renderers format these as floats, which overflow past ~1e308
    return type(x) in (int, float) and -_MAX_NS < x < _MAX_NS  # type: ignore[operator]


def _sample(x: object) -> bool:
    # bool is an int subclass: true/false are not samples; NaN fails both comparisons
    return type(x) in (int, float) and 0 <= x < _MAX_NS  # type: ignore[operator]


def _dict(doc: dict, key: str, required: bool = True) -> dict:
    value = doc.get(key, None if required else {})
    if not isinstance(value, dict):
        _fail(key, f"must be an object, got {type(value).__name__}")
    return value


def _numbers(value: object, path: str) -> None:
    if not isinstance(value, list) or not all(_sample(x) for x in value):
        _fail(path, "must be a list of durations in ns (finite, >= 0, < 1e18)")


def _check_op(i: int, op: object) -> None:
    path = f"ops[{i}]"
    if not isinstance(op, dict):
        _fail(path, f"must be an object, got {type(op).__name__}")
    if op.get("index") != i or type(op.get("index")) is not int:
        _fail(path + ".index", f"must be {i} (ops are listed in execution order)")
    for key in _OP_STR_KEYS:
        if not isinstance(op.get(key), str):
            _fail(f"{path}.{key}", "must be a string")
    shapes = op.get("shapes")
    if not isinstance(shapes, list):
        _fail(path + ".shapes", "must be a list of [dtype, shape] pairs")
    for j, pair in enumerate(shapes):
        if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str)
                and isinstance(pair[1], list) and all(type(d) is int for d in pair[1])):
            _fail(f"{path}.shapes[{j}]", "must be [dtype, [dims...]]")
    layouts = op.get("layouts")
    if not isinstance(layouts, dict) or not all(isinstance(v, str) for v in layouts.values()):
        _fail(path + ".layouts", "must be an object of strings")
    flops = op.get("flops")
    if flops is not None and not (type(flops) in (int, float) and 0 <= flops < MAX_FLOPS):
        _fail(path + ".flops", "must be a count of floating-point operations (finite, >= 0, "
                               "< 1e18) or null")  # -1e308 drew a 300-digit roofline


def _check_samples(doc: dict, n_ops: int) -> None:
    complete = doc.get("partial") is not True  # an interrupted run may leave ops unmeasured
    for mode, rows in _dict(doc, "samples_ns").items():
        path = f"samples_ns.{mode}"
        if not isinstance(rows, list) or len(rows) > n_ops:
            _fail(path, f"must be a list of at most {n_ops} rows (one per op)")
        for i, row in enumerate(rows):
            _numbers(row, f"{path}[{i}]")
            if complete and not row:
                _fail(f"{path}[{i}]", "is empty: a profile has samples of every op in every "
                                      "mode it measured (only an interrupted one, \"partial\": "
                                      "true, may lack some)")
    for mode, row in _dict(doc, "warmup_ns", required=False).items():
        _numbers(row, f"warmup_ns.{mode}")
    _numbers(doc.get("e2e_ns", []), "e2e_ns")
    _numbers(doc.get("dispatch_ns", []), "dispatch_ns")
    _check_rounds(doc.get("rounds", []))
    _check_speed(doc.get("speed", {}))
    counters = doc.get("first_run_counters", [])
    if not isinstance(counters, list):
        _fail("first_run_counters", "must be a list of objects")
    for i, c in enumerate(counters):
        if not isinstance(c, dict) or \
                not all(_number(c[k]) for k in _COUNTER_KEYS if k in c):
            _fail(f"first_run_counters[{i}]", f"must be an object with numeric "
                                              f"{', '.join(_COUNTER_KEYS)}")


_ROUND_NUMBERS = ("t_s", "wall_s", "stamp_ns", "since_s", "busy_s", "steal_s", "own_s",
                  "cpus")  # number or null (or absent)


def _check_rounds(rounds: object) -> None:
    """The steady rounds (profile/steady.py): objects of numbers (or null) and a bool."""
    if not isinstance(rounds, list):
        _fail("rounds", "must be a list of objects")
    for i, r in enumerate(rounds):
        if not isinstance(r, dict) or not isinstance(r.get("e2e_first", False), bool) or \
                not all(r.get(k) is None or _number(r[k]) for k in _ROUND_NUMBERS):
            _fail(f"rounds[{i}]", f"must be an object with numeric (or null) "
                                  f"{', '.join(_ROUND_NUMBERS)} and a bool e2e_first")


def _check_speed(speed: object) -> None:
    """The speed probes (measure/speed.py): {"probe": {...}, "samples": [{"where", numbers}]}."""
    if not isinstance(speed, dict) or not isinstance(speed.get("probe", {}), dict) or \
            not isinstance(speed.get("samples", []), list):
        _fail("speed", "must be an object with a probe object and a samples list")
    for i, s in enumerate(speed.get("samples", [])):
        if not isinstance(s, dict) or not isinstance(s.get("where", ""), str) or \
                not all(_sample(s.get(k)) for k in SPEED_NUMBERS):
            _fail(f"speed.samples[{i}]", f"must be an object with a string where and "
                                         f"durations {', '.join(SPEED_NUMBERS)}")


def _check_context(doc: dict) -> None:
    """settings, env and threads: free-form objects, but the fields the report reads are typed."""
    settings = _dict(doc, "settings")
    modes = settings.get("modes", [])
    if not isinstance(modes, list) or not all(isinstance(m, str) for m in modes):
        _fail("settings.modes", "must be a list of strings")
    for key in _SETTINGS_NUMBERS:
        if settings.get(key) is not None and not _number(settings[key]):
            _fail(f"settings.{key}", "must be a number or null")
    if not _number(settings.get("warm_target_cv", 0)):
        _fail("settings.warm_target_cv", "must be a number")
    if not isinstance(_dict(doc, "env", required=False).get("tvm", {}), dict):
        _fail("env.tvm", "must be an object")
    threads = _dict(doc, "threads", required=False)
    if not isinstance(threads.get("mismatches", []), list):
        _fail("threads.mismatches", "must be a list")
    if not isinstance(threads.get("requested", {}), dict):
        _fail("threads.requested", "must be an object")
    timer = _dict(doc, "timer", required=False)
    if not isinstance(timer.get("method", ""), str) or \
            not _number(timer.get("loop_ns", 0)):
        _fail("timer", "must have a string method and a numeric loop_ns")
    for key, value in _dict(doc, "contention", required=False).items():
        if not _number(value):
            _fail(f"contention.{key}", "must be a number")
    if not isinstance(doc.get("partial", False), bool):
        _fail("partial", "must be true or false")
    try:
        validate_provenance(doc.get("provenance", {}))
    except ValueError as err:
        raise _Bad(str(err)) from None
    problem = source_problem(doc.get("source", {}))  # an imported report's record
    if problem:
        _fail(*problem.split(": ", 1))


def _check_relax_vm(doc: dict) -> None:
    """The optional Relax VM numbers: a list of protocol results (results/protocols.py)."""
    results = doc.get("relax_vm", [])
    if not isinstance(results, list) or not all(isinstance(r, dict) for r in results):
        _fail("relax_vm", "must be a list of protocol results")
    for i, r in enumerate(results):
        try:
            ProtocolResult.from_dict(r)
        except InputError as err:
            _fail(f"relax_vm[{i}]", str(err))


def _check_timeline(doc: dict, n_ops: int) -> None:
    """The optional real passes (timeline.py): mode -> one RealPass document."""
    for mode, real_pass in _dict(doc, "timeline", required=False).items():
        wrong = check_pass(real_pass, n_ops)
        if wrong:
            _fail(f"timeline.{mode}", wrong)


def _check_values(doc: dict) -> None:
    """Every integer fits 64 bits and nothing nests deeper than _MAX_DEPTH (renderers and the
    JSON writer recurse). Iterative: free-form parts (env, threads) may be deeply nested."""
    todo: list[tuple[Any, int]] = [(doc, 0)]
    while todo:
        cur, depth = todo.pop()
        if depth > _MAX_DEPTH:
            _fail("(a value)", f"nested deeper than {_MAX_DEPTH} levels")
        if isinstance(cur, dict):
            todo.extend((v, depth + 1) for v in cur.values())
        elif isinstance(cur, list):
            todo.extend((v, depth + 1) for v in cur)
        elif type(cur) is int and not _INT64[0] <= cur <= _INT64[1]:
            _fail("(a value)", f"a {len(str(abs(cur)))}-digit integer does not fit 64 bits")


def _check_peak(doc: dict) -> None:
    """env.peak (measure/peak.py), when present: the roofline divides by its gflops."""
    peak = _dict(doc, "env", required=False).get("peak")
    if peak is None:
        return
    if not isinstance(peak, dict) or not all(
            type(peak.get(k)) in (int, float) and 0 < peak[k] < _MAX_NS
            for k in ("gflops", "gflops_per_thread") if k in peak):
        _fail("env.peak", "must be an object whose gflops are positive numbers")


def check_profile_doc(doc: Any, source: str) -> None:
    """InputError unless ``doc`` is a minigraph profile every report can render."""
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise InputError(f"{source}: not a minigraph profile (expected \"format\": \"{FORMAT}\"; "
                         "write one with `minigraph profile --json` or `--raw`)")
    try:
        _check_values(doc)
        where = non_finite(doc)  # msgpack can carry NaN/Infinity; JSON (read strictly) cannot
        if where is not None:
            _fail(where, "not a finite number (NaN or infinite)")
        _check_peak(doc)
        ops = doc.get("ops")
        if not isinstance(ops, list):
            _fail("ops", "must be a list")
        for i, op in enumerate(ops):
            _check_op(i, op)
        _check_samples(doc, len(ops))
        _check_context(doc)
        _check_timeline(doc, len(ops))
        _check_relax_vm(doc)
        if doc.get("data"):
            DataReport.from_dict(doc["data"], "data")
    except _Bad as err:
        raise InputError(f"{source}: corrupt minigraph profile: {err}") from None
