"""Two saved profiles -> the ops measured in both, and the settings that differ between them.

The profile-specific half of ``minigraph compare`` (the statistics are measure/significance.py,
the text report/compare.py). Ops are matched by node name and kernel hash, or by name alone
where a kernel changed (its hash with it) in a rebuild of the same model; two profiles that
share fewer than half of their ops are two different models, which is an error, not an empty
comparison.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import InputError
from ..measure.significance import Pair
from ..results.modes import ModeName
from ..results.profile import Profile


@dataclass(frozen=True)
class Matched:
    pairs: tuple[tuple[int, int], ...]   # (op index in A, op index in B)
    only_a: tuple[int, ...]
    only_b: tuple[int, ...]
    by: str                              # "name and hash" | "name"


def _match(a_ops: list[dict], b_ops: list[dict], key) -> Matched:
    index_b = {}
    for op in b_ops:
        index_b.setdefault(key(op), op["index"])
    pairs = [(op["index"], index_b[key(op)]) for op in a_ops if key(op) in index_b]
    used_a, used_b = {i for i, _ in pairs}, {j for _, j in pairs}
    return Matched(tuple(pairs), tuple(op["index"] for op in a_ops if op["index"] not in used_a),
                   tuple(op["index"] for op in b_ops if op["index"] not in used_b), "")


def match_ops(a: Profile, b: Profile, names: tuple[str, str] = ("A", "B")) -> Matched:
    """Ops of A paired with ops of B, by name and hash, or by name alone where that pairs more
    (a kernel changed in a rebuild); InputError when A and B are different models."""
    exact = _match(a.ops, b.ops, lambda op: (op["name"], op["hash"]))
    loose = _match(a.ops, b.ops, lambda op: op["name"])
    best, by = (exact, "name and hash") if len(exact.pairs) >= len(loose.pairs) else \
        (loose, "name")
    if not best.pairs or 2 * len(best.pairs) < max(len(a.ops), len(b.ops)):
        raise InputError(
            f"{names[0]} and {names[1]} are profiles of different models: only "
            f"{len(best.pairs)} of {len(a.ops)} ops of {names[0]} and {len(b.ops)} of "
            f"{names[1]} match by node name{_graphs(a, b)}; compare profiles of the same model")
    return Matched(best.pairs, best.only_a, best.only_b, by)


def _graphs(a: Profile, b: Profile) -> str:
    ga, gb = (_get(p.provenance, "files", "graph", "sha256") for p in (a, b))
    return f" (graph.json sha256 {ga[:12]} vs {gb[:12]})" if ga and gb and ga != gb else ""


def batch_size(profile: Profile, mode: str) -> int:
    """Samples per batch of ``mode``: warm samples come in batches of ``warm_repeat`` (one
    time_evaluator call each, profile/samplers.py warm_batch); other modes: one batch (0)."""
    if mode == ModeName.WARM:
        size = profile.settings.get("warm_repeat")
        return size if isinstance(size, int) and size > 0 else 0
    return 0


def sides(mode: str | tuple[str, str]) -> tuple[str, str]:
    """(A's mode, B's mode) of a comparison: one mode names both."""
    return (mode, mode) if isinstance(mode, str) else (mode[0], mode[1])


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


def _get(doc: Any, *path: str) -> Any:
    for key in path:
        doc = doc.get(key) if isinstance(doc, dict) else None
    return doc


# what can differ between two profiles and change their timings: (label, where it is kept)
SETTINGS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("threads", ("threads", "tvm_num_threads")),
    ("requested affinity", ("threads", "requested", "affinity")),
    ("requested CPUs", ("threads", "requested", "cpus")),
    ("main thread pinned to", ("threads", "requested", "pin_main")),
    ("main thread affinity", ("threads", "main_affinity_after")),
    ("modes", ("settings", "modes")),
    ("warm repeats per batch", ("settings", "warm_repeat")),
    ("warm CV target", ("settings", "warm_target_cv")),  # profiles saved before precision
    ("warm precision target", ("settings", "warm_precision")),
    ("warm budget (ms)", ("settings", "warm_budget_ms")),
    ("one-pass warm-ups", ("settings", "warmups")),
    ("cold flush", ("settings", "flush")),
    ("TVM version", ("env", "tvm", "version")),
    ("CPU", ("env", "cpu", "model")),
    ("microarchitecture", ("env", "cpu", "microarchitecture")),
    ("logical CPUs", ("env", "cpu", "logical_cores")),
    ("TVM_NUM_THREADS", ("env", "env_vars", "TVM_NUM_THREADS")),
    ("TVM_THREAD_POOL_SPIN_COUNT", ("env", "env_vars", "TVM_THREAD_POOL_SPIN_COUNT")),
    ("host", ("provenance", "hostname")),
    ("minigraph version", ("provenance", "minigraph_version")),
    ("model.so sha256", ("provenance", "files", "lib", "sha256")),
    ("graph.json sha256", ("provenance", "files", "graph", "sha256")),
    ("params sha256", ("provenance", "files", "params", "sha256")),
)


def setting_differences(a: Profile, b: Profile) -> list[tuple[str, Any, Any]]:
    """(label, A's value, B's value) for every setting both record and that differs."""
    da, db = a.to_dict(), b.to_dict()
    out = []
    for label, path in SETTINGS:
        va, vb = _get(da, *path), _get(db, *path)
        if va is not None and vb is not None and va != vb:
            out.append((label, va, vb))
    return out
