"""``minigraph profile`` for LLMs: one request's phases (prefill, decode) timed op by op.

The first request of this process is recorded (calls.py: every call of ``embed``, the model
function and the engine's begin/end_forward, with the first-run time of each); then, round by
round, minigraph's executor replays each phase op by op (in-run), the engine runs the same
phase through TVM's VM (e2e) and the loop runs once more with a no-op function (overhead); each
kernel and KV-cache builtin is then timed alone (warm); a real generation gives the inter-token
latencies. ``kv_state_popn`` takes a phase's tokens back out before each re-run, so every run
sees the same cache depth. Counterpart: the removed ``vm.profile()`` (one pass) and
``time_evaluator`` per kernel (MLC-LLM's debug_compare), with the KV-cache builtins included.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Sequence

import numpy as np

from ..measure.contention import recorded
from ..results.llm import DepthPoint, LLMProfile, OpRow, PhaseResult
from .calls import Call, engine_call, record, run_nop, run_timed
from .engine import PAGE_SIZE, Engine
from .inside import timed_cache

# lazy: TVM (~1.2 s to import) is imported where it is called
WARM_MIN_NS = 2_000_000   # warm: a batch of calls lasts at least this long (2 ms)
WARM_BATCHES = 5


@dataclass(frozen=True)
class Settings:
    prompt_len: int = 128
    decode_steps: int = 32
    rounds: int = 10          # in-run replays (and e2e runs) per phase
    warm: bool = True
    sweep: tuple[int, ...] = ()


@dataclass
class _Phase:
    """A recorded phase: its calls and what the recording measured."""

    name: str
    tokens: int
    depth: int
    calls: list[Call]
    first_ns: list[int]
    vm_between_ns: int
    wall_ns: int


def record_phase(eng: Engine, ids: Sequence[int]) -> tuple[_Phase, np.ndarray]:
    """One phase of the engine under set_instrument: embed, begin_forward, the model, end
    (Engine.forward's calls, each recorded)."""
    depth, n = eng.depth, len(ids)
    t0 = time.perf_counter_ns()
    x, rec_e = record(eng.vm, "embed", [eng.token_tensor(ids), eng.params])
    x = eng.as_batch(x, n)
    (b_func, b_args), (e_func, e_args) = eng.forward_calls(n)
    begin = engine_call("vm.builtin.kv_state_begin_forward", b_func, b_args)
    tb = run_timed([begin])
    fn = eng.function_for(n)
    out, rec_m = record(eng.vm, fn, [x, eng.cache, eng.params])
    end = engine_call("vm.builtin.kv_state_end_forward", e_func, e_args)
    te_ = run_timed([end])
    logits = out[0].numpy().reshape(-1)
    wall = time.perf_counter_ns() - t0
    eng.depth += n
    calls = [*rec_e.calls, begin, *rec_m.calls, end]
    first = [*rec_e.first_ns, *tb, *rec_m.first_ns, *te_]
    return _Phase(fn, n, depth, calls, first, rec_e.vm_between_ns + rec_m.vm_between_ns,
                  wall), logits


def _replay(eng: Engine, ph: _Phase) -> list[int]:
    """The phase again on minigraph's loop, op by op (ns per call): rewound first, so it
    appends at the depth it was recorded at."""
    eng.rewind(ph.tokens)
    times = run_timed(ph.calls)
    eng.depth += ph.tokens
    return times


def _e2e(eng: Engine, ph: _Phase, ids: Sequence[int]) -> int:
    """The phase through TVM's VM, as the engine runs it (ns), at the recorded depth."""
    eng.rewind(ph.tokens)
    t0 = time.perf_counter_ns()
    eng.forward(ids)
    return time.perf_counter_ns() - t0


def _rounds(eng: Engine, ph: _Phase, ids: Sequence[int], rounds: int, nop
            ) -> tuple[list[list[int]], list[int], list[int]]:
    """In-run replays, e2e runs and no-op loops, interleaved round by round."""
    inrun, e2e, over = [], [], []
    for _ in range(rounds):
        inrun.append(_replay(eng, ph))
        e2e.append(_e2e(eng, ph, ids))
        over.append(run_nop(ph.calls, nop))
    return inrun, e2e, over


def _warm(eng: Engine, ph: _Phase) -> dict[int, float]:
    """Per call index (first call of each op name): the call alone, repeated, ns per call.
    Inside one begin/end_forward window, so the KV-cache builtins rewrite the same slots."""
    out: dict[int, float] = {}
    eng.rewind(ph.tokens)
    begin = next(i for i, c in enumerate(ph.calls) if c.name.endswith("begin_forward"))
    ph.calls[begin].func(*ph.calls[begin].args)
    seen: set[str] = set()
    for i, c in enumerate(ph.calls):
        if c.function == "engine" or c.name in seen:
            continue
        seen.add(c.name)
        out[i] = _batch_time(c)
    ph.calls[-1].func(*ph.calls[-1].args)  # end_forward: the cache holds the phase again
    eng.depth += ph.tokens
    return out


def _batch_time(c: Call) -> float:
    """Median over WARM_BATCHES of a batch lasting >= WARM_MIN_NS, per call (ns)."""
    c.func(*c.args)
    t0 = time.perf_counter_ns()
    c.func(*c.args)
    n = max(1, int(WARM_MIN_NS / max(time.perf_counter_ns() - t0, 1)))
    times = []
    for _ in range(WARM_BATCHES):
        t0 = time.perf_counter_ns()
        for _ in range(n):
            c.func(*c.args)
        times.append((time.perf_counter_ns() - t0) / n)
    return float(np.median(times))


def _rows(ph: _Phase, inrun: list[list[int]], warm: dict[int, float], kernels: dict
          ) -> tuple[OpRow, ...]:
    """Calls merged by (function, name), in first-call order, with the build's costs."""
    groups: dict[tuple[str, str], list[int]] = {}
    for i, c in enumerate(ph.calls):
        groups.setdefault((c.function, c.name), []).append(i)
    rows = []
    for (function, name), idx in groups.items():
        info = kernels.get(name, {})
        per_token = info.get("flops_per_token")
        rows.append(OpRow(
            name=name, layer=info.get("layer"), kind=ph.calls[idx[0]].kind,
            function=function, calls=len(idx),
            inrun_ns=tuple(sum(r[i] for i in idx) for r in inrun),
            warm_ns=warm.get(idx[0]), first_ns=sum(ph.first_ns[i] for i in idx),
            flops=per_token * ph.tokens * len(idx) if per_token else None,
            bytes=info.get("weight_bytes", 0) * len(idx) or None))
    return tuple(rows)


def _phase(eng: Engine, ph: _Phase, ids: Sequence[int], s: Settings, nop) -> PhaseResult:
    inrun, e2e, over = _rounds(eng, ph, ids, s.rounds, nop)
    warm = _warm(eng, ph) if s.warm else {}
    return PhaseResult(ph.name, ph.tokens, ph.depth,
                       _rows(ph, inrun, warm, eng.opened.kernels), tuple(e2e), tuple(over),
                       ph.vm_between_ns, ph.wall_ns)


def _generation(eng: Engine, prompt: Sequence[int], steps: int) -> tuple[int, ...]:
    """A real greedy generation through the engine: each decode step's latency (ns)."""
    eng.new_cache()
    token = int(np.argmax(eng.forward(prompt)))
    out = []
    for _ in range(steps):
        t0 = time.perf_counter_ns()
        token = int(np.argmax(eng.forward([token])))
        out.append(time.perf_counter_ns() - t0)
    return tuple(out)


def _depth_point(eng: Engine, depth: int, s: Settings, nop, rng) -> DepthPoint:
    """Decode at ``depth`` tokens of context: the cache filled by a prefill, then the decode
    step recorded and replayed (in-run) and run through the VM (e2e)."""
    eng.new_cache()
    eng.forward(rng.integers(0, eng.opened.vocab, depth).tolist())
    ids = [int(rng.integers(0, eng.opened.vocab))]
    ph, _ = record_phase(eng, ids)
    inrun, e2e, _ = _rounds(eng, ph, ids, max(3, s.rounds // 2), nop)
    rows = _rows(ph, inrun, {}, eng.opened.kernels)
    return DepthPoint(depth, {f"{r.function}:{r.name}": r.inrun_median for r in rows},
                      float(np.median(e2e)))


def profile_llm(eng: Engine, s: Settings, threads: int, cpu: str, peaks: dict,
                environment: dict) -> LLMProfile:
    """The request's phases measured (see the module docstring); the engine is fresh."""
    busy: dict = {}
    with recorded(busy):  # what the rest of the machine took meanwhile (compare reads it)
        prof = _profile(eng, s, threads, cpu, peaks, environment)
    return replace(prof, contention=busy)


def _profile(eng: Engine, s: Settings, threads: int, cpu: str, peaks: dict,
             environment: dict) -> LLMProfile:
    import tvm_ffi
    nop = tvm_ffi.convert(lambda *a: None)
    rng = np.random.default_rng(0)
    prompt = rng.integers(0, eng.opened.vocab, s.prompt_len).tolist()
    eng.new_cache()
    t0 = time.perf_counter_ns()
    pre, logits = record_phase(eng, prompt)
    ttft = time.perf_counter_ns() - t0
    ids = [int(np.argmax(logits))]
    dec, _ = record_phase(eng, ids)     # the first request: prompt, then one decode step
    eng.rewind(1)                      # the cache as prefill left it
    pre_result = _phase(eng, pre, prompt, s, nop)
    run_timed(dec.calls)                 # the decode step again: the state it is measured in
    eng.depth += 1
    phases = (pre_result, _phase(eng, dec, ids, s, nop))
    inside = _inside(eng, prompt, ids, max(2, s.rounds // 2))
    phases = tuple(replace(p, inside_ns=inside[p.name][0], inside_calls=inside[p.name][1])
                   for p in phases)
    itl = _generation(eng, prompt, s.decode_steps)
    sweep = tuple(_depth_point(eng, d, s, nop, rng) for d in s.sweep)
    o = eng.opened
    return LLMProfile(o.name, threads, cpu, s.prompt_len, s.decode_steps, phases, itl, ttft,
                      decode_weight_bytes(o), kv_bytes_per_token(o), peaks, sweep,
                      o.config.to_dict() if o.config else None, environment)


def _inside(eng: Engine, prompt: Sequence[int], ids: Sequence[int], rounds: int
            ) -> dict[str, tuple[dict, dict]]:
    """Per phase: (kernel -> ns per round, kernel -> calls per run) of the KV cache's own
    kernels (inside.py), the request run through the engine on a timed cache."""
    cache, timers = timed_cache(eng.vm, eng.opened.cache_function,
                                (1, eng.context, eng.context, PAGE_SIZE))
    eng.use_cache(cache)
    out: dict[str, tuple[dict, dict]] = {"prefill": ({}, {}), "decode": ({}, {})}
    for _ in range(rounds):
        for phase, tokens in (("prefill", prompt), ("decode", ids)):
            timers.reset()
            eng.forward(tokens)
            ns, calls = out[phase]
            for k, v in timers.ns.items():
                ns.setdefault(k, []).append(v)
            calls.update(timers.calls)
        eng.rewind(len(prompt) + len(ids))
    return {k: ({n: tuple(v) for n, v in ns.items()}, calls) for k, (ns, calls) in out.items()}


def decode_weight_bytes(o) -> int:
    """Bytes of weights one decode step reads: every parameter, but of the embedding table
    (a 2-D parameter named *embed*) only the one row it looks up."""
    total = 0
    for name, a in zip(o.param_names, o.params):
        total += a.shape[1] * a.itemsize if "embed" in name and a.ndim == 2 else a.nbytes
    return int(total)


def kv_bytes_per_token(o) -> int:
    """K and V of one token, every layer (float32); 0 when no config says the shape."""
    c = o.config
    return 2 * c.num_hidden_layers * c.num_key_value_heads * c.head_dim * 4 if c else 0
