"""What two profiles record of how they were measured, and which of it differs between them.

Threads, placement, the modes' settings, TVM, the machine and the model files each can change
a timing: ``setting_differences`` lists every one both documents record and that differs, with
its label (the labels analysis/evidence.py sorts into classes of cause).
Counterpart: none in TVM (its profilers record none of this).
"""
from __future__ import annotations

from typing import Any

from ..results.profile import Profile


def recorded(doc: Any, *path: str) -> Any:
    """What a saved document holds at ``path`` (None where any step is missing)."""
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
    out = []
    for label, (field, *path) in SETTINGS:  # each path starts at a Profile field to_dict copies
        va, vb = recorded(getattr(a, field), *path), recorded(getattr(b, field), *path)
        if va is not None and vb is not None and va != vb:
            out.append((label, va, vb))
    return out
