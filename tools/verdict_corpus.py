"""A labelled corpus of profile pairs made the way users make them, and compare's verdict on each.

Each case is one known cause of two measurements differing, produced with the commands a
user types (a second profile under ``--threads 1`` or ``TVM_NUM_THREADS=1``, a
``--target x86-64`` build, a ``--schedule none`` build, subnormal weights, a spinning
neighbour during one side, another ``--mode``, the same command twice). ``make`` runs them
(fresh ``python -m minigraph`` processes, as a user would) against one baseline profile A, and
``compare --json`` judges each pair; a case's label says which verdicts are right. Used by
tests/report/test_verdict_corpus.py (every case on tiny-cnn) and by
benchmarks/verdict_accuracy.py (rounds of the corpus on any model, as a confusion table).

    PYTHONPATH=. python tools/verdict_corpus.py [--model tiny-cnn] [--work DIR]
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Sequence

ROOT = Path(__file__).resolve().parent.parent
PROFILE = ("--mode", "warm", "--mode", "e2e", "--budget-ms", "50", "--quiet")
SUBNORMAL = 1e-40  # float32 subnormal (below 1.18e-38), a weight's magnitude


@dataclass(frozen=True)
class Case:
    """One known cause: how B is made (build flags, profile flags, environment, a neighbour,
    subnormal weights) and which verdicts are right (``expect``)."""

    name: str
    expect: frozenset[str]
    build: tuple[str, ...] = ()          # flags of B's own build (none: B runs A's build)
    profile: tuple[str, ...] = PROFILE   # B's profile flags
    env: tuple[tuple[str, str], ...] = ()
    neighbour: bool = False              # a busy-looping process during B's profile
    subnormal: bool = False              # B's first conv weights made subnormal
    modes: tuple[str, ...] = ()          # compare's --mode values (none: the default)
    cpus: int = 1                        # CPUs the case needs to mean anything


# the quiet pair's right answers: nothing, or the machine (its speed, its other load) moving
QUIET = frozenset({"no real difference", "machine speed", "contention"})
CASES: tuple[Case, ...] = (
    Case("back-to-back", QUIET),
    Case("--threads 1", frozenset({"threads"}), profile=(*PROFILE, "--threads", "1"), cpus=2),
    Case("TVM_NUM_THREADS=1", frozenset({"threads"}), env=(("TVM_NUM_THREADS", "1"),), cpus=2),
    Case("--target x86-64", frozenset({"build"}), build=("--target", "x86-64")),
    Case("--schedule none", frozenset({"build"}), build=("--schedule", "none")),
    Case("subnormal weights", frozenset({"data"}), subnormal=True),
    Case("spinning neighbour", frozenset({"contention"}), neighbour=True),
    Case("--mode one-pass", frozenset({"protocol"}),
         profile=("--mode", "one-pass", "--quiet"), modes=("warm", "one-pass")),
)


@dataclass
class Result:
    case: Case
    verdict: str = ""
    findings: list = field(default_factory=list)
    skipped: str = ""   # why the machine could not make this case
    a_busy: float = 0.0  # CPUs others took during A
    differ: int = 0      # ops compare called changed

    @property
    def expect(self) -> frozenset[str]:
        """The case's right verdicts; a neighbour during B on a machine already busy during
        A is no longer one side's neighbour: then the quiet answers are right too."""
        from minigraph.measure.contention import BUSY_CPUS
        if self.case.neighbour and self.a_busy > BUSY_CPUS:
            return self.case.expect | QUIET
        return self.case.expect

    @property
    def right(self) -> bool:
        """The verdict is one of the case's; for a quiet pair also a lone op called changed
        (back-to-back runs may call at most one op changed: two processes of one build place
        buffers differently, analysis/thresholds.py KERNEL_MOVE; a full suite run once saw it)."""
        lone = self.verdict == "a few kernels" and self.differ <= 1
        return self.verdict in self.expect or (self.case.expect == QUIET and lone)


Cli = Callable[..., subprocess.CompletedProcess]  # (argv, env=..., cwd=..., check=...)


def spawn_cli(argv: Sequence[object], env: dict | None = None, cwd: Path = ROOT,
              check: bool = True) -> subprocess.CompletedProcess:
    """``python -m minigraph *argv`` in a new interpreter, as a user types it."""
    return subprocess.run([sys.executable, "-m", "minigraph", *map(str, argv)], check=check,
                          capture_output=True, text=True, env=env, cwd=cwd)


@contextlib.contextmanager
def spinning_neighbour() -> Iterator[None]:
    """A process that keeps one CPU busy for as long as the block runs (always stopped)."""
    spin = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        yield
    finally:
        spin.kill()
        spin.wait()


def _subnormal_copy(src: Path, dst: Path) -> Path:
    """A copy of a build whose first weight (the first conv's 4-d one, else the first matrix)
    holds +-SUBNORMAL (signs kept)."""
    import numpy as np

    from minigraph.artifacts.params import load_params_file, save_params_file
    shutil.copytree(src, dst)
    params = load_params_file(dst / "model.params")
    name = max(params, key=lambda n: (params[n].ndim >= 4, params[n].ndim >= 2))
    params[name] = (np.where(params[name] >= 0, 1, -1) * SUBNORMAL).astype(np.float32)
    save_params_file(dst / "model.params", params)
    return dst


class Corpus:
    """The builds and profiles of one model under ``work`` (made once, reused by the cases)."""

    def __init__(self, work: Path, model: str = "tiny-cnn", cli: Cli = spawn_cli) -> None:
        self.work, self.model, self.cli = work, model, cli
        self.base = self._build("base", ())
        self.a = self.profile(self.base, "a")

    def _build(self, name: str, flags: tuple[str, ...]) -> Path:
        out = self.work / name
        if not (out / "model.so").exists():
            self.cli(["build", self.model, "-o", out, "--no-vm", *flags], cwd=ROOT, check=True)
        return out

    def profile(self, model: Path, name: str, flags: tuple[str, ...] = PROFILE,
                env: tuple[tuple[str, str], ...] = (), neighbour: bool = False) -> Path:
        out = self.work / f"{name}.json"
        with spinning_neighbour() if neighbour else contextlib.nullcontext():
            self.cli(["profile", model, *flags, "--json", out], env={**os.environ, **dict(env)},
                     cwd=ROOT, check=True)
        return out

    def b_side(self, case: Case, tag: str) -> Path:
        model = self.base
        if case.build:
            model = self._build(tag + "-build", case.build)
        if case.subnormal:
            model = self.work / f"{tag}-subnormal"
            if not model.exists():
                _subnormal_copy(self.base, model)
        return self.profile(model, tag, case.profile, case.env, case.neighbour)

    def judge(self, case: Case, b: Path) -> Result:
        out = b.with_suffix(".cmp.json")
        modes = [x for m in case.modes for x in ("--mode", m)]
        self.cli(["compare", self.a, b, *modes, "--json", out], cwd=ROOT, check=True)
        doc = json.loads(out.read_text())
        busy = json.loads(self.a.read_text()).get("contention") or {}
        return Result(case, doc["verdict"], doc["findings"],
                      a_busy=float(busy.get("others_cpus") or 0) + float(busy.get("steal_cpus")
                                                                          or 0),
                      differ=int(doc.get("differ") or 0))

    def run(self, case: Case, tag: str) -> Result:
        if (os.cpu_count() or 1) < case.cpus:
            return Result(case, skipped=f"needs {case.cpus} CPUs")
        return self.judge(case, self.b_side(case, tag))


def run_corpus(work: Path, model: str = "tiny-cnn", cases: tuple[Case, ...] = CASES,
               rounds: int = 1, cli: Cli = spawn_cli) -> list[Result]:
    """Every case ``rounds`` times against one baseline profile per round; ``cli`` runs each
    command in a process of its own (the tests fork it from a pre-imported zygote)."""
    results = []
    for r in range(rounds):
        corpus = Corpus(work, model, cli)  # the builds are reused, A is profiled again
        results += [corpus.run(c, f"r{r}-{k}") for k, c in enumerate(cases)]
    return results


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="tiny-cnn")
    p.add_argument("--work", type=Path, default=None, help="keep the builds and profiles here")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = args.work or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        for res in run_corpus(work, args.model):
            mark = "skip" if res.skipped else "ok" if res.right else "WRONG"
            print(f"{mark:5} {res.case.name:22} verdict: {res.verdict or res.skipped}")
            for f in res.findings:
                print(f"        {f['cls']} ({f['share']:.0%}): {f['evidence'][:150]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
