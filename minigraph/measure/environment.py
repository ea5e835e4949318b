"""CPU/OS/TVM environment capture (sysfs, /proc, py-cpuinfo, psutil) and the warnings it implies.

Counterparts in TVM: ``tvm.support.libinfo()`` (build flags) and the sysfs reads that
``threading_backend.cc`` itself makes (``ThreadGroup::Impl::InitSortedOrder`` reads
``cpuN/cpufreq/cpuinfo_max_freq``; ``MaxConcurrency`` reads TVM_NUM_THREADS / OMP_NUM_THREADS).
Everything here is a pure function returning plain (JSON-serialisable) data; nothing prints.
``capture_env`` never touches TVM's thread pool: creating the pool pins the calling thread.
"""
from __future__ import annotations

import os
import platform
import sys
import threading
import time
from pathlib import Path
from typing import Callable

import numpy

from ..threadpool.config import max_concurrency, parse_cpu_list
from . import pycpuinfo

# lazy: TVM (~1.2 s to import) and psutil (~40 ms) are imported where they are called;
# TVM-free commands load this module

SYS_CPU = Path("/sys/devices/system/cpu")
TVM_FLAGS = ("avx2", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16",
             "avx512_fp16", "avx_vnni", "fma")
ENV_VARS = ("TVM_NUM_THREADS", "OMP_NUM_THREADS", "TVM_BIND_THREADS",
            "TVM_THREAD_POOL_SPIN_COUNT", "TVM_EXCLUDE_WORKER0", "OPENBLAS_CORETYPE")
LIBINFO_KEYS = ("USE_LLVM", "LLVM_VERSION", "USE_OPENMP", "USE_THREADS", "GIT_COMMIT_HASH")
DEFAULT_LLC = 32 << 20
# (vendor, family, first model, last model) -> (microarchitecture, LLVM -mcpu)
_AMD, _INTEL = "AuthenticAMD", "GenuineIntel"
UARCH = (  # checked in order; the first matching row wins
    (_AMD, 23, 0x00, 0x2F, "Zen/Zen+", "znver1"), (_AMD, 23, 0x30, 0xFF, "Zen 2", "znver2"),
    (_AMD, 25, 0x10, 0x1F, "Zen 4", "znver4"), (_AMD, 25, 0x60, 0x7F, "Zen 4", "znver4"),
    (_AMD, 25, 0xA0, 0xAF, "Zen 4", "znver4"), (_AMD, 25, 0x00, 0xFF, "Zen 3", "znver3"),
    (_AMD, 26, 0x00, 0xFF, "Zen 5", "znver5"),
    (_INTEL, 6, 0x3C, 0x3F, "Haswell", "haswell"), (_INTEL, 6, 0x45, 0x46, "Haswell", "haswell"),
    (_INTEL, 6, 0x4F, 0x4F, "Broadwell", "broadwell"), (_INTEL, 6, 0x4E, 0x4E, "Skylake", "skylake"),
    (_INTEL, 6, 0x5E, 0x5E, "Skylake", "skylake"), (_INTEL, 6, 0x8E, 0x8E, "Kaby/Coffee Lake", "skylake"),
    (_INTEL, 6, 0x9E, 0x9E, "Kaby/Coffee Lake", "skylake"),
    (_INTEL, 6, 0x55, 0x55, "Skylake-SP/Cascade Lake", "skylake-avx512"),
    (_INTEL, 6, 0x6A, 0x6C, "Ice Lake-SP", "icelake-server"),
    (_INTEL, 6, 0x7D, 0x7E, "Ice Lake", "icelake-client"), (_INTEL, 6, 0x8C, 0x8D, "Tiger Lake", "tigerlake"),
    (_INTEL, 6, 0x97, 0x9A, "Alder Lake", "alderlake"), (_INTEL, 6, 0xB7, 0xBF, "Raptor Lake", "raptorlake"),
    (_INTEL, 6, 0x8F, 0x8F, "Sapphire Rapids", "sapphirerapids"),
    (_INTEL, 6, 0xCF, 0xCF, "Emerald Rapids", "emeraldrapids"),
    (_INTEL, 6, 0xAD, 0xAE, "Granite Rapids", "graniterapids"),
)


def _read(path: str | Path) -> str | None:
    """Stripped text of a (sysfs/proc) file, or None if it is missing or unreadable."""
    try:
        return Path(path).read_text().strip()
    except (OSError, UnicodeDecodeError):
        return None


def _int_or_none(text: str | None, default: int | None = None) -> int | None:
    return int(text) if text and text.strip().isdigit() else default


def _read_int(path: str | Path) -> int | None:
    return _int_or_none(_read(path))


def _parse_size(text: str | None) -> int | None:
    """sysfs cache size ('32K', '1024K', '32M') -> bytes."""
    if not text:
        return None
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1].upper(), 1)
    digits = text[:-1] if text[-1].upper() in "KMG" else text
    return int(digits) * mult if digits.isdigit() else None


def _proc_cpuinfo() -> dict[str, str]:
    """The first processor block of /proc/cpuinfo as a dict (empty if unreadable)."""
    block: dict[str, str] = {}
    for line in (_read("/proc/cpuinfo") or "").splitlines():
        if not line.strip():
            if block:
                break
            continue
        key, _, value = line.partition(":")
        block[key.strip()] = value.strip()
    return block


def guess_uarch(vendor: str | None, family: int | None, model: int | None) -> tuple[str, str | None]:
    """(microarchitecture, LLVM -mcpu) from CPUID vendor/family/model; ('unknown', None) if not in the table."""
    for v, fam, lo, hi, name, mcpu in UARCH:
        if vendor == v and family == fam and model is not None and lo <= model <= hi:
            return name, mcpu
    return "unknown", None


def read_caches(cpu: int = 0) -> list[dict]:
    """Caches of one CPU from /sys/devices/system/cpu/cpuN/cache/index*/ (the truth on Linux)."""
    out = []
    for idx in sorted((SYS_CPU / f"cpu{cpu}" / "cache").glob("index*")):
        out.append({"level": _read_int(idx / "level"), "type": _read(idx / "type"),
                    "size_bytes": _parse_size(_read(idx / "size")),
                    "shared_cpu_list": _read(idx / "shared_cpu_list")})
    return out


def _cache_check(caches: list[dict], pyc: dict, logical: int) -> dict:
    """Cross-check py-cpuinfo's l2/l3 against sysfs; py-cpuinfo may report a total over instances."""
    check: dict = {"pycpuinfo": {k: pyc.get(f"l{k[1]}_cache_size") for k in ("l2", "l3")},
                   "mismatches": []}
    for level in (2, 3):
        sysfs = next((c for c in caches if c["level"] == level and c["type"] != "Instruction"), None)
        other = pyc.get(f"l{level}_cache_size")
        if not sysfs or not sysfs["size_bytes"] or not isinstance(other, int):
            continue
        sharers = len(parse_cpu_list(sysfs["shared_cpu_list"] or "0")) or 1
        total = sysfs["size_bytes"] * max(1, logical // sharers)
        if other not in (sysfs["size_bytes"], total):
            check["mismatches"].append(
                f"L{level}: py-cpuinfo says {other} B, sysfs says {sysfs['size_bytes']} B"
                f" per instance (shared by CPUs {sysfs['shared_cpu_list']}); sysfs is used")
    return check


def _topology() -> dict:
    """Physical cores and SMT sibling groups from cpu*/topology (package_id, core_id)."""
    cores, groups = set(), set()
    for d in SYS_CPU.glob("cpu[0-9]*"):
        pkg, core = _read_int(d / "topology/physical_package_id"), _read_int(d / "topology/core_id")
        if core is not None:
            cores.add((pkg, core))
        sib = _read(d / "topology/thread_siblings_list")
        if sib:
            groups.add(parse_cpu_list(sib))
    smt_active = _read_int(SYS_CPU / "smt/active")
    logical = os.cpu_count() or 1
    physical = len(cores) or None
    smt = bool(smt_active) if smt_active is not None else bool(physical and physical < logical)
    return {"logical_cores": logical, "physical_cores": physical, "smt": smt,
            "smt_sibling_groups": sorted(list(g) for g in groups if len(g) > 1)}


def _frequency() -> dict:
    """cur/min/max MHz from cpu0/cpufreq (kHz), else psutil; governor and boost."""
    base = SYS_CPU / "cpu0/cpufreq"
    khz = {k: _read_int(base / f"scaling_{k}_freq") for k in ("cur", "min", "max")}
    freq = {f"{k}_mhz": (v / 1000 if v else None) for k, v in khz.items()}
    freq["source"] = "sysfs" if any(khz.values()) else None
    if freq["source"] is None:
        try:
            import psutil
            pf = psutil.cpu_freq()
            freq.update(cur_mhz=pf.current or None, min_mhz=pf.min or None,
                        max_mhz=pf.max or None, source="psutil")
        except Exception:  # noqa: BLE001
            pass
    freq["governor"] = _read(base / "scaling_governor")
    boost = _read_int(SYS_CPU / "cpufreq/boost")
    freq["boost"] = None if boost is None else bool(boost)
    return freq


def _hypervisor(flags: set[str]) -> dict:
    """VM detection without lscpu: cpuinfo flag, /sys/hypervisor/type, DMI, paravirt clocksources."""
    clocks = _read(SYS_CPU.parent / "clocksource/clocksource0/available_clocksource") or ""
    dmi = " ".join(filter(None, (_read(f"/sys/class/dmi/id/{f}") for f in ("sys_vendor", "product_name"))))
    kind = _read("/sys/hypervisor/type")
    for needle, name in (("kvm-clock", "kvm"), ("hyperv", "hyperv"), ("xen", "xen"),
                         ("KVM", "kvm"), ("QEMU", "kvm"), ("VMware", "vmware"), ("Microsoft", "hyperv")):
        if kind is None and needle in clocks + " " + dmi:
            kind = name
    return {"present": "hypervisor" in flags or kind is not None, "type": kind, "dmi": dmi or None}


def _cpu_section() -> dict:
    info, pyc = _proc_cpuinfo(), pycpuinfo.read()
    flags = set(info.get("flags", "").split()) or set(pyc.get("flags", []))
    vendor = info.get("vendor_id") or pyc.get("vendor_id_raw")
    family = _int_or_none(info.get("cpu family"), pyc.get("family"))
    model_n = _int_or_none(info.get("model"), pyc.get("model"))
    uarch, mcpu = guess_uarch(vendor, family, model_n)
    topo = _topology()
    caches = read_caches(0)
    nodes = sorted(int(p.name[4:]) for p in Path("/sys/devices/system/node").glob("node[0-9]*"))
    return {"model": info.get("model name") or pyc.get("brand_raw"), "vendor": vendor,
            "family": family, "model_number": model_n, "stepping": _int_or_none(info.get("stepping")),
            "microarchitecture": uarch, "llvm_mcpu_guess": mcpu,
            "flags": sorted(f for f in flags if f in TVM_FLAGS or f.startswith("amx")),
            **topo, "caches": caches,
            "cache_check": _cache_check(caches, pyc, topo["logical_cores"]),
            "frequency": _frequency(), "numa_nodes": nodes,
            "hypervisor": _hypervisor(flags)}


def _busiest(interval: float = 0.2, top: int = 5) -> list[dict]:
    """psutil top processes by cpu_percent over ``interval`` seconds, excluding this one."""
    try:
        import psutil
    except ImportError:
        return []
    procs = []
    for p in psutil.process_iter(["pid", "name"]):
        if p.pid != os.getpid():
            try:
                p.cpu_percent(None)
                procs.append(p)
            except psutil.Error:
                pass
    time.sleep(interval)
    rows = []
    for p in procs:
        try:
            rows.append({"pid": p.pid, "name": p.info["name"], "cpu_percent": p.cpu_percent(None)})
        except psutil.Error:
            pass
    return sorted((r for r in rows if r["cpu_percent"] > 0), key=lambda r: -r["cpu_percent"])[:top]


def _tvm_section(target: str | None) -> dict:
    """tvm.__version__ + tvm.support.libinfo(); never calls into runtime.NumThreads/config_threadpool."""
    try:
        import tvm
    except Exception as exc:  # noqa: BLE001
        return {"version": None, "error": repr(exc), "target": target}
    libinfo = {str(k): str(v) for k, v in dict(tvm.support.libinfo()).items()}
    llvm = tvm.get_global_func("target.llvm_version_major", allow_missing=True)
    if "LLVM_VERSION" not in libinfo and llvm is not None:
        libinfo["LLVM_VERSION"] = str(llvm())
    native = tvm.get_global_func("support.GetLibInfo", allow_missing=True) is not None
    return {"version": tvm.__version__, "libinfo": libinfo,
            "build": {k: libinfo[k] for k in LIBINFO_KEYS if k in libinfo},
            "libinfo_native": native, "target": target, "note": None if native else
            "support.GetLibInfo is not registered: libinfo() is synthesised by Python, not build flags",
            "predicted_pool_threads": max_concurrency()}


_THREAD_STACK_NBYTES = 4 << 20


def environment_soon() -> Callable[[], dict]:
    """Starts what capture_env waits for in a thread: the CPU section (py-cpuinfo's helper
    process on a machine's first run: ~1 s) and the busiest other processes (their CPU use
    over a 0.2 s sample), so both overlap the caller's own start-up (opening the model); the
    returned call waits for them and gives capture_env's keyword arguments. Call it before
    measuring: neither may run beside the measurements."""
    out: list[dict] = []
    worker = threading.Thread(target=lambda: out.append(_slow_parts()), daemon=True,
                              name="minigraph-environment")
    previous = threading.stack_size()
    try:  # a small stack: glibc would reserve RLIMIT_STACK, which a tight ulimit -v cannot hold
        threading.stack_size(_THREAD_STACK_NBYTES)
        worker.start()
    except (RuntimeError, ValueError, MemoryError):  # no thread to be had: read it when asked
        return _slow_parts
    finally:
        threading.stack_size(previous)

    def result() -> dict:
        worker.join()
        return out[0] if out else _slow_parts()  # the thread failed: read it here, loudly
    return result


def _slow_parts() -> dict:
    return {"cpu": _cpu_section(), "busiest": _busiest()}


def capture_env(target: str | None = None, cpu: dict | None = None,
                busiest: list[dict] | None = None) -> dict:
    """Snapshot of CPU, OS, process, TVM and env vars, plus ``warnings`` (see env_warnings).
    ``cpu``, ``busiest``: the CPU section and the busiest other processes, read already
    (``environment_soon``)."""
    os_release = dict(line.split("=", 1) for line in (_read("/etc/os-release") or "").splitlines()
                      if "=" in line)
    env = {"cpu": cpu if cpu is not None else _cpu_section(),
           "os": {"kernel": platform.release(), "distro": os_release.get("PRETTY_NAME", "").strip('"')
                  or None, "python": sys.version.split()[0], "numpy": numpy.__version__},
           "process": {"pid": os.getpid(), "affinity": sorted(os.sched_getaffinity(0)),
                       "load_avg": list(os.getloadavg()),
                       "busiest_others": _busiest() if busiest is None else busiest},
           "tvm": _tvm_section(target),
           "env_vars": {k: os.environ.get(k) for k in ENV_VARS}}
    env["warnings"] = env_warnings(env)
    return env


def env_warnings(env: dict, threads: int | None = None) -> list[str]:
    """Reasons the timings may be noisy or misleading, for ``threads`` requested pool threads."""
    cpu, proc, out = env["cpu"], env["process"], []
    allowed = proc["affinity"]
    load1 = proc["load_avg"][0]
    if load1 > 0.5 * cpu["logical_cores"]:
        out.append(f"busy machine: 1-min load average {load1:.2f} on {cpu['logical_cores']} CPUs")
    for p in proc["busiest_others"]:
        if p["cpu_percent"] >= 10.0:
            out.append(f"busy process: {p['name']} (pid {p['pid']}) at {p['cpu_percent']:.0f}% CPU")
    gov = cpu["frequency"]["governor"]
    if gov is not None and gov != "performance":
        out.append(f"CPU frequency governor is '{gov}', not 'performance': clocks ramp under load")
    if cpu["frequency"]["boost"]:
        out.append("CPU boost/turbo is on: frequency depends on temperature and load")
    if cpu["hypervisor"]["present"]:
        out.append(f"running in a VM ({cpu['hypervisor']['type'] or 'hypervisor flag'}):"
                   " steal time and vCPU migration add noise")
    if threads is not None and threads > len(allowed):
        out.append(f"{threads} threads requested but only {len(allowed)} CPUs allowed {allowed}")
    for group in cpu["smt_sibling_groups"]:
        used = [c for c in group if c in allowed]
        if len(used) > 1 and (threads is None or threads > (cpu["physical_cores"] or 0)):
            out.append(f"SMT siblings in use: CPUs {used} share one physical core")
    out.extend(f"cache size mismatch: {m}" for m in cpu["cache_check"]["mismatches"])
    return out


def llc_bytes(env: dict) -> int:
    """Last-level cache size: largest sysfs cache, else py-cpuinfo's L3/L2, else 32 MiB."""
    sizes = [c["size_bytes"] for c in env.get("cpu", {}).get("caches", []) if c.get("size_bytes")]
    if sizes:
        return max(sizes)
    pyc = env.get("cpu", {}).get("cache_check", {}).get("pycpuinfo", {})
    return next((v for v in (pyc.get("l3"), pyc.get("l2")) if isinstance(v, int) and v > 0), DEFAULT_LLC)
