"""Helpers shared by the benchmark scripts: build-or-reuse artifacts, load minigraph and the
Relax VM on the same kernels with the same inputs, summary statistics, and run context.

Not a benchmark itself. Each script puts this directory and the repository root on sys.path,
so ``python benchmarks/<script>.py`` works from a checkout without installing minigraph.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np

from minigraph.measure import contention
from minigraph.measure.stats import Stats
from minigraph.runtime.debug import DebugExecutor
from minigraph.values.inputs import random_inputs


def add_build_args(parser: argparse.ArgumentParser, model: str = "resnet50") -> None:
    """--model, --out, --reuse, --seed: the options every model benchmark shares."""
    parser.add_argument("--model", default=model,
                        help=f"zoo model name or .onnx path (default: {model})")
    _add_artifact_args(parser)


def add_models_args(parser: argparse.ArgumentParser, models: Sequence[str]) -> None:
    """--models (comma-separated), --out, --reuse, --seed: for benchmarks over several models;
    with --out, each model is built in its own subdirectory (see ``model_dir``)."""
    default = ",".join(models)
    parser.add_argument("--models", default=default, type=lambda s: [m for m in s.split(",") if m],
                        help=f"comma-separated zoo names or .onnx paths (default: {default})")
    _add_artifact_args(parser)


def runs_parser(doc: str, model: str, runs: int, what: str) -> argparse.ArgumentParser:
    """The options of a benchmark that runs a minigraph command ``--runs`` times on one model:
    the build options and the run count (``what``: what one run is, for the help)."""
    p = argparse.ArgumentParser(description=doc,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    add_build_args(p, model)
    p.add_argument("--runs", type=int, default=runs, help=f"{what} (default {runs})")
    return p


def model_dir(out: Path | None, model: str) -> Path | None:
    """--out/<model name> for one model of several (None stays None: a temp dir per model)."""
    return None if out is None else out / Path(model).stem


def _add_artifact_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", type=Path, default=None,
                        help="directory for build artifacts (default: a temp dir, deleted at exit)")
    parser.add_argument("--reuse", action="store_true",
                        help="skip the build if --out already holds this model's build.json")
    parser.add_argument("--seed", type=int, default=0, help="seed for the random input data")


@contextlib.contextmanager
def artifacts(model: str, out: Path | None, reuse: bool) -> Iterator[Path]:
    """Yields a directory holding model.so, graph.json, model.params, model.vm.so, build.json."""
    with contextlib.ExitStack() as stack:
        if out is None:
            out = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="mg-bench-")))
        if reuse and _built_for(out, model):
            print(f"reusing build of {model} in {out}")
        else:
            from minigraph.compiler.compiler import build
            t0 = time.perf_counter()
            build(model, out)
            print(f"built {model} into {out} in {time.perf_counter() - t0:.1f} s")
        yield out


def _built_for(out: Path, model: str) -> bool:
    try:
        info = json.loads((out / "build.json").read_text())
    except (OSError, ValueError):
        return False
    names = ("build.json", "graph.json", "model.so", "model.params", "model.vm.so")
    return info.get("model") == model and all((out / n).is_file() for n in names)


def build_info(out: Path) -> dict:
    return json.loads((out / "build.json").read_text())


@dataclass
class Loaded:
    """minigraph's Executor and the Relax VM, bound to identical inputs and params."""

    ex: DebugExecutor
    vm: object
    vm_args: list
    inputs: dict[str, np.ndarray]


def load_both(out: Path, seed: int = 0) -> Loaded:
    """DebugExecutor.from_files on model.so/graph.json, the VM on model.vm.so, same data for
    both."""
    import tvm
    ex = DebugExecutor.from_files(out / "model.so", out / "graph.json")
    inputs = random_inputs(ex, {}, seed)
    ex.set_input(**inputs)
    vm = tvm.relax.VirtualMachine(tvm.runtime.load_module(str(out / "model.vm.so")), tvm.cpu())
    # the params as the executor bound them: model.params is not read a second time
    values = {**{n: ex.get_input(n).numpy() for n in ex.bound_params}, **inputs}
    names = [vm._get_function_param_name("main", i)
             for i in range(vm._get_function_arity("main"))]
    missing = [n for n in names if n not in values]
    if missing:
        raise RuntimeError(f"VM main parameters not found among graph inputs/params: {missing[:5]}")
    args = [tvm.runtime.tensor(np.ascontiguousarray(values[n]), tvm.cpu()) for n in names]
    return Loaded(ex, vm, args, inputs)


def first_output(out) -> np.ndarray:
    """The VM returns a tensor or a (nested) tuple of them; take the first tensor."""
    while not hasattr(out, "numpy"):
        out = out[0]
    return out.numpy()


def stats_ms(samples_s: Sequence[float]) -> Stats:
    return Stats.of([s * 1e3 for s in samples_s])


def context_line() -> str:
    """What else the machine was doing: stated next to every result."""
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    return (f"cpus={os.cpu_count()} loadavg(1/5/15 min)={load} "
            f"TVM_NUM_THREADS={os.environ.get('TVM_NUM_THREADS', '(unset)')}")


def verdict(ok: bool, goal: str, measured: str) -> str:
    return f"{'PASS' if ok else 'FAIL'}: goal {goal}; measured {measured} (informational)"


class ForeignCpu:
    """Share of the machine's CPU capacity used by *other* processes (and the hypervisor),
    accumulated per phase from ``minigraph.measure.contention``. Resolution is one clock tick
    (10 ms), so only phases lasting seconds are meaningful."""

    def __init__(self) -> None:
        self.foreign_s: dict[str, float] = {}
        self.wall_s: dict[str, float] = {}

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        taken: dict = {}
        with contention.recorded(taken):
            yield
        if taken:  # empty where /proc/stat is unreadable
            wall_s = taken["wall_s"]
            foreign_s = (taken["others_cpus"] + taken["steal_cpus"]) * wall_s
            self.foreign_s[name] = self.foreign_s.get(name, 0.0) + foreign_s
            self.wall_s[name] = self.wall_s.get(name, 0.0) + wall_s

    def share(self, name: str) -> float:
        capacity = self.wall_s.get(name, 0.0) * (os.cpu_count() or 1)
        return max(0.0, self.foreign_s.get(name, 0.0)) / capacity if capacity else float("nan")

    def line(self) -> str:
        return ", ".join(f"{name} {self.share(name):.0%}" for name in self.wall_s)
