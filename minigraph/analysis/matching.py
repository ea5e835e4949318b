"""What two documents both measured, paired up: one algorithm, with two keys.

``pair_by`` is the algorithm: each item of A is paired with the first item of B that has its
key, in A's order, and what found no partner is kept on its side. The two keys:
- an op's (``match_ops``: two profiles of one model): its graph node, by node name and kernel
  hash, or by name alone where that pairs more (a kernel changed, its hash with it, in a
  rebuild of the same model). Two profiles that share fewer than half of their ops are two
  different models, which is an error, not an empty comparison;
- a kernel's (``match_kernels``: TVM reports, ``--by-kernel``): every call of one fused
  function on one set of argument shapes (what TVM's ``AsTable`` aggregates: Hash + Argument
  Shapes + Device), the ops first summed into their kernels. Identity, best first:
  hash+shapes: TVM's ``Hash`` column, the structural hash ``LabelOps`` put on each fused Relay
  function, plus the argument shapes, when both sides carry hashes of the same kind (two TVM
  reports, or two minigraph profiles: minigraph hashes the TIR function, so its hashes never
  equal TVM's); name+shapes: the function's stem (its name without the module prefix
  ``tvmgen_default_`` and without the number the build appended) plus the shapes, also when
  few hashes match (builds that hashed differently); name: the stem alone, without shapes.
  TVM numbers fused functions per build (``GetUniqueName``: ``..._relu_3`` is the fourth one
  lowered), so one name can denote different kernels in two reports: under hash matching
  minigraph lists the names that do.
Either way the result is comparison pairs (measure/significance.py ``Pair``): an op's samples,
or a kernel's calls, one time each.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Generic, Hashable, Sequence, TypeVar

from ..errors import InputError
from ..measure.significance import Pair
from ..results.modes import PER_OP, ModeName
from ..results.profile import Profile
from .settings import recorded

T = TypeVar("T")
_PREFIX = re.compile(r"^(?:tvmgen_[A-Za-z0-9]+_|vm_mod_)(?=fused_)|^tvmgen_default_")
EXECUTOR_KINDS = ("vm-instruction", "vm-builtin")


@dataclass(frozen=True)
class Keyed(Generic[T]):
    """Items of A and B put together by key: the partners, and what each side has alone."""

    pairs: tuple[tuple[T, T], ...]
    only_a: tuple[T, ...]
    only_b: tuple[T, ...]


def pair_by(a: Sequence[T], b: Sequence[T], key: Callable[[T], Hashable]) -> Keyed[T]:
    """Each item of A with the first item of B of the same key (in A's order); the rest of
    each side apart."""
    first: dict[Hashable, int] = {}
    for j, y in enumerate(b):
        first.setdefault(key(y), j)
    hits = [(i, first[k]) for i, x in enumerate(a) if (k := key(x)) in first]
    used_a, used_b = {i for i, _ in hits}, {j for _, j in hits}
    return Keyed(tuple((a[i], b[j]) for i, j in hits),
                  tuple(x for i, x in enumerate(a) if i not in used_a),
                  tuple(y for j, y in enumerate(b) if j not in used_b))


# -- ops -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Matched:
    pairs: tuple[tuple[int, int], ...]   # (op index in A, op index in B)
    only_a: tuple[int, ...]
    only_b: tuple[int, ...]
    by: str                              # "name and hash" | "name"


def match_ops(a: Profile, b: Profile, names: tuple[str, str] = ("A", "B")) -> Matched:
    """Ops of A paired with ops of B, by name and hash, or by name alone where that pairs more
    (a kernel changed in a rebuild); InputError when A and B are different models."""
    exact = pair_by(a.ops, b.ops, lambda op: (op["name"], op["hash"]))
    loose = pair_by(a.ops, b.ops, lambda op: op["name"])
    best, by = (exact, "name and hash") if len(exact.pairs) >= len(loose.pairs) else \
        (loose, "name")
    if not best.pairs or 2 * len(best.pairs) < max(len(a.ops), len(b.ops)):
        raise InputError(
            f"{names[0]} and {names[1]} are profiles of different models: only "
            f"{len(best.pairs)} of {len(a.ops)} ops of {names[0]} and {len(b.ops)} of "
            f"{names[1]} match by node name{_graphs(a, b)}; compare profiles of the same model")
    return Matched(tuple((x["index"], y["index"]) for x, y in best.pairs),
                   tuple(x["index"] for x in best.only_a), tuple(y["index"] for y in best.only_b),
                   by)


def _graphs(a: Profile, b: Profile) -> str:
    ga, gb = (recorded(p.provenance, "files", "graph", "sha256") for p in (a, b))
    return f" (graph.json sha256 {ga[:12]} vs {gb[:12]})" if ga and gb and ga != gb else ""


def sides(mode: str | tuple[str, str]) -> tuple[str, str]:
    """(A's mode, B's mode) of a comparison: one mode names both."""
    return (mode, mode) if isinstance(mode, str) else (mode[0], mode[1])


def batch_size(profile: Profile, mode: str) -> int:
    """Samples per batch of ``mode``: warm samples come in batches of ``warm_repeat`` (one
    time_evaluator call each, profile/samplers.py warm_batch); other modes: one batch (0)."""
    if mode == ModeName.WARM:
        size = profile.settings.get("warm_repeat")
        return size if isinstance(size, int) and size > 0 else 0
    return 0


def pairs_for(a: Profile, b: Profile, mode: str | tuple[str, str], matched: Matched
              ) -> list[Pair]:
    """The raw samples of ``mode`` for every matched op (each side must have its mode)."""
    modes = sides(mode)
    for p, name, m in ((a, "A", modes[0]), (b, "B", modes[1])):
        if not p.samples.get(m):
            have = ", ".join(k for k in p.samples if p.samples[k]) or "none"
            raise InputError(f"{name} has no {m} samples (per-op modes in {name}: {have}); "
                             "choose one with --mode (give it twice for A's and B's)")
    rows_a, rows_b = a.samples[modes[0]], b.samples[modes[1]]
    return [Pair(a.ops[i]["name"], rows_a[i] if i < len(rows_a) else [],
                 rows_b[j] if j < len(rows_b) else [], batch_size(a, modes[0]),
                 batch_size(b, modes[1])) for i, j in matched.pairs]


# -- kernels ---------------------------------------------------------------------------------

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
    for mode in (wanted, ModeName.ONE_PASS, *PER_OP):
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


@dataclass(frozen=True)
class Matching:
    level: str
    why: str
    pairs: tuple[Pair, ...]      # each side's calls as its samples, its Kernel as what it is
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


def _paired_kernels(ka: dict[tuple, Kernel], kb: dict[tuple, Kernel]) -> Keyed[Kernel]:
    return pair_by(list(ka.values()), list(kb.values()), lambda k: k.key)


def match_kernels(a: Profile, b: Profile, mode_a: str | None, mode_b: str | None,
                  level: str | None = None) -> Matching:
    """Kernels of A and B paired by identity (``level``: None chooses, see choose_level)."""
    chosen, why = choose_level(a, b)
    level = level or chosen
    ka, kb = kernels(a, mode_a, level), kernels(b, mode_b, level)
    found = _paired_kernels(ka, kb)
    if level == "hash+shapes":
        hashed = min(sum(1 for k in ks if k[0] == "hash") for ks in (ka, kb))
        shared = sum(1 for x, _ in found.pairs if x.key[0] == "hash")
        na, nb = kernels(a, mode_a, "name+shapes"), kernels(b, mode_b, "name+shapes")
        by_name = _paired_kernels(na, nb)
        if shared < 0.5 * hashed and len(by_name.pairs) > len(found.pairs):
            why = (f"name + argument shapes: only {shared} of {hashed} hashed kernels share a "
                   "Hash with the other side (the builds hashed differently: another TVM or "
                   "other passes)")
            level, ka, kb, found = "name+shapes", na, nb, by_name
    pairs = tuple(Pair(x.names[0] if x.names else str(x.key), x.calls_ns, y.calls_ns, a=x, b=y)
                  for x, y in found.pairs)
    renamed = sum(1 for p in pairs
                  if not {family(n) for n in p.a.names} & {family(n) for n in p.b.names})
    return Matching(level, why, pairs, found.only_a, found.only_b,
                    tuple(_same_name_other_kernel(ka, kb)) if level == "hash+shapes" else (),
                    renamed)
