"""Tests for minigraph.measure.environment. capture_env runs once, in a fresh subprocess, to prove it neither
imports TVM at module import nor touches TVM's thread pool (which would re-pin the caller)."""
from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from minigraph.measure import environment as envinfo
from minigraph.measure.environment import (
    DEFAULT_LLC,
    _cache_check,
    _parse_size,
    env_warnings,
    guess_uarch,
    llc_bytes,
    read_caches,
)
from minigraph.report.environment import format_env

pytestmark = pytest.mark.subprocess

ROOT = Path(__file__).resolve().parents[2]
CHILD = """
import json, os, sys
sys.path.insert(0, sys.argv[1])
import minigraph.measure.environment as envinfo
imported_tvm = "tvm" in sys.modules
import numpy, tvm  # load both first so their own threads are not blamed on capture_env
def snap():
    return {t: sorted(os.sched_getaffinity(int(t))) for t in os.listdir("/proc/self/task")}
before = snap()
env = envinfo.capture_env(target="llvm")
after = snap()
tvm.get_global_func("runtime.NumThreads")()  # positive control: this one does create the pool
print(json.dumps({"imported_tvm": imported_tvm, "before": before, "after": after,
                  "after_pool": snap(), "env": env}))
"""


@pytest.fixture(scope="module")
def child() -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("TVM_NUM_THREADS", "OMP_NUM_THREADS", "TVM_BIND_THREADS")}
    proc = subprocess.run([sys.executable, "-c", CHILD, str(ROOT)], capture_output=True,
                          text=True, timeout=60, env=env)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_capture_env_does_not_touch_thread_pool(child: dict) -> None:
    assert child["imported_tvm"] is False
    assert child["after"] == child["before"]  # same threads, same affinities
    main = str(child["env"]["process"]["pid"])
    hw = os.cpu_count() or 1
    if hw >= 2 and child["before"][main] == list(range(hw)):
        # the control proves the check is sensitive: the pool re-pins the caller on >= 2 CPUs
        assert child["after_pool"][main] != child["before"][main]


def test_capture_env_content(child: dict) -> None:
    env = child["env"]
    json.dumps(env)
    assert set(env) >= {"cpu", "os", "process", "tvm", "env_vars", "warnings"}
    cpu = env["cpu"]
    assert cpu["logical_cores"] == os.cpu_count()
    assert env["process"]["affinity"] == sorted(os.sched_getaffinity(0))
    assert len(env["process"]["load_avg"]) == 3
    assert all(p["pid"] != env["process"]["pid"] for p in env["process"]["busiest_others"])
    assert env["tvm"]["version"] and env["tvm"]["target"] == "llvm"
    assert "USE_LLVM" in env["tvm"]["libinfo"]
    assert set(env["env_vars"]) == set(envinfo.ENV_VARS)
    assert env["warnings"] == env_warnings(env)
    if "hypervisor" in (Path("/proc/cpuinfo").read_text()):
        assert cpu["hypervisor"]["present"]
        assert any("VM" in w for w in env["warnings"])
    if Path("/sys/devices/system/cpu/cpu0/cache/index0").exists():
        assert cpu["caches"] and llc_bytes(env) == max(c["size_bytes"] for c in cpu["caches"])


def test_format_env(child: dict) -> None:
    text = format_env(child["env"])
    for section in ("CPU", "Caches", "Frequency", "OS", "Process", "TVM", "Environment", "Warnings"):
        assert section in text
    assert child["env"]["tvm"]["version"] in text


def test_read_caches_matches_sysfs() -> None:
    base = Path("/sys/devices/system/cpu/cpu0/cache")
    if not base.exists():
        pytest.skip("no sysfs cache info")
    caches = read_caches(0)
    assert len(caches) == len(list(base.glob("index*")))
    assert all(c["level"] in (1, 2, 3, 4) and c["size_bytes"] > 0 for c in caches)
    assert read_caches(99999) == []  # missing CPU: tolerant, no exception


def test_parse_size_and_uarch() -> None:
    assert _parse_size("32K") == 32768 and _parse_size("32768K") == 32 << 20
    assert _parse_size("1M") == 1 << 20 and _parse_size(None) is None and _parse_size("xK") is None
    assert guess_uarch("AuthenticAMD", 25, 17) == ("Zen 4", "znver4")
    assert guess_uarch("AuthenticAMD", 25, 1) == ("Zen 3", "znver3")
    assert guess_uarch("GenuineIntel", 6, 0x8F)[0] == "Sapphire Rapids"
    assert guess_uarch("GenuineIntel", 99, 1) == ("unknown", None)
    assert guess_uarch(None, None, None) == ("unknown", None)


def test_cache_check_mismatch() -> None:
    caches = [{"level": 2, "type": "Unified", "size_bytes": 1 << 20, "shared_cpu_list": "0"},
              {"level": 3, "type": "Unified", "size_bytes": 32 << 20, "shared_cpu_list": "0-1"}]
    # py-cpuinfo on this VM: L2 summed over 2 instances (fine), L3 512 KiB (wrong)
    check = _cache_check(caches, {"l2_cache_size": 2 << 20, "l3_cache_size": 512 << 10}, 2)
    assert len(check["mismatches"]) == 1 and "L3" in check["mismatches"][0]
    assert _cache_check(caches, {"error": "x"}, 2)["mismatches"] == []


def _synthetic_env() -> dict:
    return {"cpu": {"logical_cores": 4, "physical_cores": 2, "smt_sibling_groups": [[0, 2], [1, 3]],
                    "caches": [], "cache_check": {"pycpuinfo": {"l2": None, "l3": None}, "mismatches": []},
                    "frequency": {"governor": "performance", "boost": False},
                    "hypervisor": {"present": False, "type": None}},
            "process": {"affinity": [0, 1], "load_avg": [0.1, 0.1, 0.1], "busiest_others": []}}


def test_env_warnings() -> None:
    quiet = _synthetic_env()
    assert env_warnings(quiet) == []
    noisy = copy.deepcopy(quiet)
    noisy["process"].update(affinity=[0, 1, 2, 3], load_avg=[3.5, 1, 1],
                            busiest_others=[{"pid": 9, "name": "stress", "cpu_percent": 95.0}])
    noisy["cpu"]["frequency"] = {"governor": "powersave", "boost": True}
    noisy["cpu"]["hypervisor"] = {"present": True, "type": "kvm"}
    noisy["cpu"]["cache_check"]["mismatches"] = ["L3: differs"]
    text = "\n".join(env_warnings(noisy, threads=8))
    for needle in ("load average", "stress", "powersave", "boost", "VM", "8 threads requested",
                   "SMT siblings", "cache size mismatch"):
        assert needle in text, needle
    assert "SMT" not in "\n".join(env_warnings(noisy, threads=2))  # 2 threads fit 2 cores


def test_llc_bytes_fallbacks() -> None:
    env = _synthetic_env()
    assert llc_bytes(env) == DEFAULT_LLC
    env["cpu"]["cache_check"]["pycpuinfo"] = {"l2": 1 << 20, "l3": 8 << 20}
    assert llc_bytes(env) == 8 << 20
    env["cpu"]["caches"] = [{"size_bytes": 32 << 20}, {"size_bytes": 1 << 20}]
    assert llc_bytes(env) == 32 << 20
    assert llc_bytes({}) == DEFAULT_LLC


def test_py_cpuinfo_is_read_once_per_machine_and_a_foreign_entry_again(tmp_path, monkeypatch):
    """Its helper process costs ~1.2 s of CPU: read once, then from the cache; an entry that
    is not its facts (another shape, other keys) is read again, and the clock is never kept."""
    import cpuinfo

    from minigraph.fileio import cache
    from minigraph.measure import pycpuinfo
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    calls = []

    def fake() -> dict:
        calls.append(1)
        return {"brand_raw": "CPU X", "l2_cache_size": 1 << 20, "hz_actual": [3, 0]}
    monkeypatch.setattr(cpuinfo, "get_cpu_info", fake)
    first = pycpuinfo.read()
    assert first == {"brand_raw": "CPU X", "l2_cache_size": 1 << 20} and calls == [1]
    assert pycpuinfo.read() == first and calls == [1]
    cache.store(pycpuinfo.CACHE, pycpuinfo._key(), {"rm -rf": 1})
    assert pycpuinfo.read() == first and calls == [1, 1]
