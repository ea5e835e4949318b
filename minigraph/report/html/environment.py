"""The environment and settings block of the HTML reports: the machine, TVM, the thread pool,
what the measurement was told to do, and what the file records about its own provenance."""
from __future__ import annotations

from ...analysis.contention import warning
from .page import kv, lines


def _bytes(n: object) -> str:
    if not isinstance(n, (int, float)) or n <= 0:
        return "?"
    for unit, f in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= f:
            return f"{n / f:g} {unit}"
    return f"{n} B"


def machine(env: dict) -> str:
    """CPU, caches, OS and TVM, from ``measure.environment.capture_env``'s record."""
    cpu, osys, tvm = env.get("cpu", {}), env.get("os", {}), env.get("tvm", {})
    caches = ", ".join(f"L{c.get('level')} {c.get('type', '')} {_bytes(c.get('size_bytes'))}"
                       for c in cpu.get("caches", []))
    freq = cpu.get("frequency", {})
    hyper = cpu.get("hypervisor")
    return kv([
        ("CPU", f"{cpu.get('model', '?')} ({cpu.get('microarchitecture', '?')})"),
        ("cores", f"{cpu.get('logical_cores', '?')} logical, {cpu.get('physical_cores', '?')} "
                  f"physical, SMT {'on' if cpu.get('smt') else 'off'}"),
        ("caches", caches),
        ("clock", f"{freq.get('cur_mhz', '?')} MHz ({freq.get('source', '?')})" if freq else ""),
        ("hypervisor", hyper if isinstance(hyper, str) else (hyper or {}).get("name", "")
         if isinstance(hyper, dict) else ""),
        ("OS", f"{osys.get('distro', '?')}, Linux {osys.get('kernel', '?')}"),
        ("Python / NumPy", f"{osys.get('python', '?')} / {osys.get('numpy', '?')}"),
        ("TVM", f"{tvm.get('version', '?')}" + (f", target {tvm['target']}"
                                               if tvm.get("target") else "")),
        ("environment", ", ".join(f"{k}={v}" for k, v in env.get("env_vars", {}).items()
                                  if v is not None)),
    ]) + notes(env)


def provenance(record: dict) -> str:
    """What a saved file says about where it came from (fields as the writer recorded them)."""
    if not record:
        return ""
    flat = [(k, v if not isinstance(v, (list, dict)) else
             (" ".join(map(str, v)) if isinstance(v, list) else
              ", ".join(f"{a}={b}" for a, b in v.items()))) for k, v in record.items()]
    return kv(flat)


def settings(values: dict, keep: tuple[str, ...] = ()) -> str:
    return kv([(k, ", ".join(map(str, v)) if isinstance(v, list) else v)
               for k, v in values.items() if not keep or k in keep])


def busy(contention: dict, during: str) -> list[str]:
    """The contention measured over the run, if it was busy (the top of the page)."""
    line = warning(contention, during)
    return [line + " (details under Environment)"] if line else []


def notes(env: dict) -> str:
    """What the environment capture warned about (busy processes, VM, governor...)."""
    return lines([str(w) for w in env.get("warnings", [])])
