"""Ops of two profiles grouped into kernels and matched by kernel identity.

A kernel is every call of one fused function on one set of argument shapes (what TVM's
``AsTable`` aggregates: Hash + Argument Shapes + Device). Identity, best first:
- hash+shapes: TVM's ``Hash`` column, the structural hash ``LabelOps`` put on each fused Relay
  function (16 hex digits), plus the argument shapes. Used when both sides carry hashes of the
  same kind (two TVM reports, or two minigraph profiles: minigraph hashes the TIR function, so
  its hashes never equal TVM's);
- name+shapes: the function's stem, its name without the module prefix (``tvmgen_default_``;
  the Relay VM does not mangle names) and without the number the build appended, plus the
  shapes. Also used when both sides have hashes but few of them match (builds that hashed
  differently);
- name: the stem alone, when shapes are missing on a side.
TVM numbers fused functions per build (``GetUniqueName``: ``..._relu_3`` is the fourth one
lowered), so one name can denote different kernels in two reports: name matching ignores the
number, and under hash matching minigraph lists the names that do.
A matched kernel is a comparison pair like an op (measure/significance.py ``Pair``): each
call's time is a sample, the two sides' kernels what was measured.
"""
from __future__ import annotations

import re
import statistics
from dataclasses import dataclass

from ..measure.significance import Pair
from ..results.modes import PER_OP
from ..results.profile import Profile

_PREFIX = re.compile(r"^(?:tvmgen_[A-Za-z0-9]+_|vm_mod_)(?=fused_)|^tvmgen_default_")
EXECUTOR_KINDS = ("vm-instruction", "vm-builtin")


def family(name: str) -> str:
    """The function name without its module prefix: what two builds may both call it."""
    return _PREFIX.sub("", name)


def stem(name: str) -> str:
    """The name without module prefix and without the build's ``_N`` numbering."""
    return re.sub(r"_\d+$", "", family(name))


def shapes_text(op: dict) -> str:
    """TVM's ShapeString of the op's arguments, e.g. "float32[1, 64], float32[64]"."""
    if op.get("shapes"):
        return ", ".join(f"{t}[{', '.join(str(d) for d in s)}]" for t, s in op["shapes"])
    text = op.get("shapes_text", "")
    return text if isinstance(text, str) else ""


def hash_kind(profile: Profile) -> str:
    """Whose structural hash the ops carry: TVM's (Relay, LabelOps) or minigraph's (TIR)."""
    return "tvm-relay" if profile.source.get("kind") == "tvm-report" else "minigraph-tir"


def pick_mode(profile: Profile, wanted: str) -> str | None:
    """``wanted`` if the profile has it, else its one-pass samples (what TVM's profilers
    measure), else its first per-op mode."""
    for mode in (wanted, "one-pass", *PER_OP):
        if profile.samples.get(mode):
            return mode
    return None


@dataclass(frozen=True)
class Kernel:
    """One side's kernel: its identity and each call's time (the op's median, ns)."""

    key: tuple
    hash: str
    shapes: str
    names: tuple[str, ...]
    kind: str
    calls_ns: tuple[float, ...]
    first_index: int

    @property
    def calls(self) -> int:
        return len(self.calls_ns)

    @property
    def total_ns(self) -> float:
        return sum(self.calls_ns)

    @property
    def per_call_ns(self) -> float:
        return self.total_ns / self.calls


def kernel_name(op: dict) -> str:
    """The fused function's name: what TVM's Name column holds (graph node names may differ)."""
    return op.get("func_name") or op["name"]


def _key(op: dict, level: str) -> tuple:
    if level == "hash+shapes" and op["hash"]:
        return ("hash", op["hash"], shapes_text(op))
    if level == "name":
        return ("name", stem(kernel_name(op)))
    return ("name", stem(kernel_name(op)), shapes_text(op))


def kernels(profile: Profile, mode: str | None, level: str) -> dict[tuple, Kernel]:
    """Every measured op's time summed into its kernel (in order of first call)."""
    out: dict[tuple, Kernel] = {}
    for op in profile.ops:
        ns = profile.median(mode, op["index"]) if mode else None
        if ns is None or ns != ns:
            continue
        key = _key(op, level)
        k = out.get(key)
        names = k.names if k else ()
        name = kernel_name(op)
        out[key] = Kernel(key, op["hash"], shapes_text(op),
                          names + (name,) if name not in names else names, op["kind"],
                          (k.calls_ns if k else ()) + (ns,),
                          k.first_index if k else op["index"])
    return out


def choose_level(a: Profile, b: Profile) -> tuple[str, str]:
    """The strongest identity both sides support, and why."""
    def share(p: Profile, field: str) -> float:
        ops = [op for op in p.ops if op["kind"] not in EXECUTOR_KINDS]
        return sum(1 for op in ops if (op[field] if field == "hash" else shapes_text(op))) / \
            max(len(ops), 1)
    if share(a, "hash") >= 0.5 and share(b, "hash") >= 0.5:
        if hash_kind(a) == hash_kind(b):
            return "hash+shapes", ("Hash + Argument Shapes (TVM's structural hash of each fused "
                                   "function)" if hash_kind(a) == "tvm-relay" else
                                   "hash + argument shapes (minigraph's hash of each kernel)")
        why = "name + shapes: TVM's Hash (of the Relay function) and minigraph's (of the TIR " \
              "function) are different hashes, so they cannot match"
        return "name+shapes", why
    if share(a, "shapes") >= 0.5 and share(b, "shapes") >= 0.5:
        return "name+shapes", "name (without the build's numbering) + argument shapes: no " \
            "Hash on " + \
            ("either side" if share(a, "hash") < 0.5 and share(b, "hash") < 0.5
             else "one side")
    return "name", "name only: no Hash and no argument shapes to go by"


def paired(a: Kernel, b: Kernel) -> Pair:
    """The comparison pair of a kernel matched in A and B (measure/significance.py): each
    side's calls as its samples, the kernels as what each side measured."""
    return Pair(a.names[0] if a.names else str(a.key), a.calls_ns, b.calls_ns, a=a, b=b)


@dataclass(frozen=True)
class Matching:
    level: str
    why: str
    pairs: tuple[Pair, ...]
    only_a: tuple[Kernel, ...]
    only_b: tuple[Kernel, ...]
    same_name_other_kernel: tuple[tuple[str, Kernel, Kernel], ...]
    renamed: int                 # matched kernels whose names differ between A and B

    def ratios(self) -> list[float]:
        return [p.ratio for p in self.pairs if p.a.total_ns > 0 and p.b.total_ns > 0]


def _same_name_other_kernel(ka: dict[tuple, Kernel], kb: dict[tuple, Kernel]
                            ) -> list[tuple[str, Kernel, Kernel]]:
    """Names that denote a kernel in A and a different kernel in B (hash matching only)."""
    def by_name(ks: dict[tuple, Kernel]) -> dict[str, list[Kernel]]:
        out: dict[str, list[Kernel]] = {}
        for k in ks.values():
            for n in {family(n) for n in k.names if n}:
                out.setdefault(n, []).append(k)
        return out
    na, nb = by_name(ka), by_name(kb)
    found = []
    for name in sorted(set(na) & set(nb)):
        a_only = [k for k in na[name] if k.key not in {x.key for x in nb[name]}]
        b_only = [k for k in nb[name] if k.key not in {x.key for x in na[name]}]
        if a_only and b_only:
            found.append((name, a_only[0], b_only[0]))
    return found


def match(a: Profile, b: Profile, mode_a: str | None, mode_b: str | None,
          level: str | None = None) -> Matching:
    """Kernels of A and B paired by identity (``level``: None chooses, see choose_level)."""
    chosen, why = choose_level(a, b)
    level = level or chosen
    ka, kb = kernels(a, mode_a, level), kernels(b, mode_b, level)
    pairs = tuple(paired(ka[k], kb[k]) for k in ka if k in kb)
    if level == "hash+shapes":
        hashed = min(sum(1 for k in ks if k[0] == "hash") for ks in (ka, kb))
        shared = sum(1 for p in pairs if p.a.key[0] == "hash")
        na, nb = kernels(a, mode_a, "name+shapes"), kernels(b, mode_b, "name+shapes")
        by_name = sum(1 for k in na if k in nb)
        if shared < 0.5 * hashed and by_name > len(pairs):
            why = (f"name + argument shapes: only {shared} of {hashed} hashed kernels share a "
                   "Hash with the other side (the builds hashed differently: another TVM or "
                   "other passes)")
            level, ka, kb = "name+shapes", na, nb
            pairs = tuple(paired(ka[k], kb[k]) for k in ka if k in kb)
    renamed = sum(1 for p in pairs
                  if not {family(n) for n in p.a.names} & {family(n) for n in p.b.names})
    return Matching(level, why, pairs, tuple(k for key, k in ka.items() if key not in kb),
                    tuple(k for key, k in kb.items() if key not in ka),
                    tuple(_same_name_other_kernel(ka, kb)) if level == "hash+shapes" else (),
                    renamed)


def quantile(xs: list[float], q: float) -> float:
    """Inclusive quantile of a non-empty list (the median for q = 0.5)."""
    if len(xs) == 1:
        return xs[0]
    return statistics.quantiles(sorted(xs), n=100, method="inclusive")[round(q * 100) - 1] \
        if 0 < q < 1 else (min(xs) if q <= 0 else max(xs))
