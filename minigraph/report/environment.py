"""Captured environment (measure/environment.capture_env) -> readable text for ``minigraph env``."""
from __future__ import annotations


def _human(n: int | None) -> str:
    if not n:
        return "?"
    return next(f"{n / m:g} {u}" for m, u in ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB"), (1, "B"))
                if n >= m or m == 1)


def _kv(pairs: dict) -> list[str]:
    return [f"  {k:<22} {v}" for k, v in pairs.items()]


def format_env(env: dict) -> str:
    """A readable multi-section text block (returned, not printed)."""
    cpu, tvm = env["cpu"], env["tvm"]
    lines = ["CPU"] + _kv({k: cpu[k] for k in ("model", "vendor", "family", "model_number", "stepping",
                                             "microarchitecture", "llvm_mcpu_guess", "logical_cores",
                                             "physical_cores", "smt", "numa_nodes")})
    lines += _kv({"flags": " ".join(cpu["flags"]), "hypervisor": cpu["hypervisor"]})
    lines += ["Caches (sysfs cpu0)"] + [
        f"  L{c['level']} {c['type']:<12} {_human(c['size_bytes'])}  shared by CPUs {c['shared_cpu_list']}"
        for c in cpu["caches"]] + _kv({"py-cpuinfo": cpu["cache_check"]["pycpuinfo"]})
    lines += ["Frequency"] + _kv(cpu["frequency"])
    lines += ["OS"] + _kv(env["os"])
    proc = env["process"]
    lines += ["Process"] + _kv({k: proc[k] for k in ("pid", "affinity", "load_avg")})
    lines += [f"  busy: {p['name']} (pid {p['pid']}) {p['cpu_percent']:.1f}%" for p in proc["busiest_others"]]
    lines += ["TVM"] + _kv({k: tvm.get(k) for k in ("version", "build", "libinfo_native", "note", "target",
                                                    "predicted_pool_threads", "error") if k in tvm})
    lines += ["Environment variables"] + _kv(env["env_vars"])
    lines += ["Warnings"] + ([f"  - {w}" for w in env["warnings"]] or ["  (none)"])
    return "\n".join(lines)
