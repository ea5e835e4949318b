"""Writes tests/data/golden/: one real document per saved format, read back by the tests.

A format's writer and its reader can drift apart together and every round trip still passes;
a committed document cannot drift. Regenerate them (and review the diff) only when a format
changes on purpose, with its version:

    PYTHONPATH=. python tools/golden.py [--out tests/data/golden]

Every document comes from a real run of minigraph on the built-in tiny-cnn model (profile,
diagnosis, comparison, kernel comparison, protocols, a Relax VM executable's profile, a
profile on subnormal weights, a sweep of a dynamic MLP); the
imported TVM report is a table printed by tests/helpers/tvm_printer.py from TVM's rules, read
by ``show --json``; the fleet document wraps the real profile as a device's result, as the RPC
client does (no servers needed). Settings are small so that the files stay small.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "helpers")]

FAST = ("--repeat", "3", "--budget-ms", "10", "--inrun-passes", "3", "--quiet")


def cli(*argv: object) -> None:
    subprocess.run([sys.executable, "-m", "minigraph", *map(str, argv)], check=True,
                   cwd=ROOT, capture_output=True, text=True)


def _fleet(profile: dict) -> dict:
    from minigraph.results.fleet import DeviceResult, Fleet
    fleet = Fleet("profile", "127.0.0.1:9190", "golden", "model.so, graph.json", 2,
                  ["127.0.0.1:9091", "127.0.0.1:9092"],
                  [DeviceResult(0, "127.0.0.1:9091", {"host": "golden", "cpu": profile["env"].get(
                      "cpu_model", "")}, {}, profile, None, 1.5),
                   DeviceResult(1, "127.0.0.1:9092", {}, {}, None,
                                "the job process on the device killed by signal 9 (SIGKILL)", 0.2)])
    return fleet.to_dict()


def _subnormal(tmp: Path, out: Path) -> None:
    """The data section in full: tiny-cnn whose first conv's weights are subnormal."""
    import shutil

    import numpy as np

    from minigraph.artifacts.params import load_params_file, save_params_file
    shutil.copytree(tmp / "tiny", tmp / "sub")
    p = load_params_file(tmp / "sub" / "model.params")
    p["conv0_weight"] = np.sign(p["conv0_weight"]) * np.float32(1e-40)
    p["conv0_bias"] = np.zeros_like(p["conv0_bias"])
    save_params_file(tmp / "sub" / "model.params", p)
    cli("profile", tmp / "sub", "--mode", "first-run", "--mode", "e2e", "--quiet",
        "--json", out / "profile-subnormal.json")


def _sweep(tmp: Path, out: Path) -> None:
    """A sweep of a dynamic MLP (relax.frontend.nn, symbolic n) over two sizes."""
    from vm_models import dynamic_mlp

    from minigraph.artifacts.params import save_params_file
    lib, weights = dynamic_mlp(tmp)
    save_params_file(tmp / "mlp.params", weights)
    cli("profile", lib, "--params", tmp / "mlp.params", "--sweep", "n=8,32", "--mode", "warm",
        "--budget-ms", "10", "--repeat", "3", "--quiet", "--json", out / "sweep.json")


def _tvm_report(tmp: Path, out: Path) -> None:
    from tvm_fixtures import reports
    vm, _ = reports({})
    (tmp / "vm_report.txt").write_bytes(vm)
    cli("show", tmp / "vm_report.txt", "--json", out / "tvm-report.json")


def _llm(tmp: Path, out: Path) -> None:
    """The built-in llama-tiny LLM profiled at one and two threads, and their comparison."""
    cli("build", "llama-tiny", "-o", tmp / "llm")
    for t, name in ((1, out / "llm-profile.json"), (2, tmp / "llm2.json")):
        cli("profile", tmp / "llm", "--prompt-len", "16", "--decode", "4", "--rounds", "3",
            "--threads", t, "--quiet", "--json", name)
    cli("compare", out / "llm-profile.json", tmp / "llm2.json", "--json",
        out / "llm-comparison.json")
    cli("diagnose", tmp / "llm", "--prompt-len", "16", "--processes", "2", "--rungs", "a,p,f",
        "--quiet", "--json", out / "llm-diagnosis.json")


def _scrub(out: Path, paths: dict[str, str]) -> None:
    """This machine's temporary and checkout paths replaced by neutral ones (provenance)."""
    for p in out.glob("*.json"):
        text = p.read_text()
        for mine, neutral in paths.items():
            text = text.replace(mine, neutral)
        p.write_text(text)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "tests" / "data" / "golden"))
    out = Path(ap.parse_args().out)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        cli("build", "tiny-cnn", "-o", tmp / "tiny")
        cli("profile", tmp / "tiny", *FAST, "--json", out / "profile.json")
        cli("profile", tmp / "tiny", "--mode", "warm", "--mode", "e2e", *FAST,
            "--json", tmp / "b.json")
        cli("compare", out / "profile.json", tmp / "b.json", "--json", out / "comparison.json")
        cli("compare", out / "profile.json", tmp / "b.json", "--by-kernel",
            "--json", out / "kernel-comparison.json")
        cli("diagnose", tmp / "tiny", "--processes", "2", "--rungs", "a,b,f", "--gap-ms", "0",
            "--quiet", "--json", out / "diagnosis.json")
        cli("profile", tmp / "tiny" / "model.vm.so", "--params", tmp / "tiny" / "model.params",
            "--mode", "first-run", "--mode", "e2e", "--quiet", "--json",
            out / "profile-relax-vm.json")
        _tvm_report(tmp, out)
        _subnormal(tmp, out)
        _sweep(tmp, out)
        _llm(tmp, out)
        _scrub(out, {str(tmp): "/tmp/golden", str(ROOT): "/src/minigraph"})
    diag = json.loads((out / "diagnosis.json").read_text())
    protocols = {"format": "minigraph-protocols/1", "results": diag["protocols"]}
    (out / "protocols.json").write_text(json.dumps(protocols, indent=1) + "\n")
    profile = json.loads((out / "profile.json").read_text())
    (out / "fleet.json").write_text(json.dumps(_fleet(profile), indent=1) + "\n")
    for p in sorted(out.iterdir()):
        print(f"{p.stat().st_size:>8}  {p}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
