"""py-cpuinfo's facts of this CPU, read once per machine: its brand, vendor, family, model,
flags and cache sizes (what environment.py reads of it: a fallback where /proc/cpuinfo says
nothing, and a cross-check of sysfs's cache sizes). Counterpart: none in TVM.
"""
from __future__ import annotations

import hashlib
import importlib.metadata
import os
import platform

from ..fileio import cache

CACHE = "pycpuinfo.json"
# what capture reads of py-cpuinfo: static facts of the CPU (not hz_actual, the clock right now)
KEYS = ("brand_raw", "vendor_id_raw", "family", "model", "flags", "l2_cache_size",
        "l3_cache_size")


def read() -> dict:
    """py-cpuinfo's static facts of this CPU, cached per machine (fileio/cache.py): its helper
    process costs ~1.2 s of CPU on every call (every profile and diagnose paid it, beside
    opening the model), and what it says of the CPU changes only with the CPU and the kernel
    (the key: /proc/cpuinfo's first block without its clock lines, the kernel release and
    py-cpuinfo's version). An entry that is not such a dict is read again."""
    key = _key()
    entry = cache.read_entries(CACHE).get(key)
    if isinstance(entry, dict) and set(entry) <= set(KEYS) and entry:
        return entry
    try:
        import cpuinfo  # py-cpuinfo; spawns a helper process, ~1 s
        info = dict(cpuinfo.get_cpu_info())
    except Exception as exc:  # noqa: BLE001 - a cross-check source must never break capture
        return {"error": repr(exc)}
    entry = {k: info[k] for k in KEYS if k in info}
    cache.store(CACHE, key, entry)
    return entry


def _key() -> str:
    try:
        version = importlib.metadata.version("py-cpuinfo")
    except importlib.metadata.PackageNotFoundError:
        version = "?"
    block = _proc_cpuinfo_text().split("\n\n", 1)[0]
    block = "\n".join(line for line in block.splitlines() if "MHz" not in line
                      and not line.startswith("bogomips"))
    text = f"{block}|{platform.release()}|{os.cpu_count()}|py-cpuinfo {version}"
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _proc_cpuinfo_text() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return ""
