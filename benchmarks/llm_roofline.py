"""An LLM build against this machine's rooflines: prefill GFLOP/s against the measured FMA peak,
decode GB/s against the measured read bandwidth, at each thread count, in fresh processes.

Builds the built-in ``llama-100m`` (Llama, hidden 768, 12 layers, 12 query / 4 KV heads,
vocab 32000, 125M parameters, float32; seeded weights) once into ``--out`` (or takes
``--model DIR``, any LLM build), then for T in ``--threads`` runs ``minigraph profile`` in a
fresh process (``--worker``): pp of ``--prompt-len`` tokens and tg of ``--decode`` steps, the
phase medians through TVM's VM, the in-run per-op breakdown, and prints per T:

  prefill tokens/s, GFLOP/s and its share of the FMA peak for T threads (measure/peak.py)
  decode ms/token, tokens/s, GB/s (weights + KV read per step) and its share of the measured
         read bandwidth at T threads (measure/bandwidth.py)
  the three ops that take most of each phase

Goals (issue 47's acceptance, informational here): decode >= 50% of the bandwidth roofline,
prefill of 128 tokens >= 30% of the FMA peak, at 2 threads. The CPU is printed with every
figure: they hold for that CPU only. On a shared machine re-run on a quiet one.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _worker(args: argparse.Namespace) -> None:
    """One profile in this (fresh) process; the document's dict on stdout's last line."""
    from minigraph.llm.engine import Engine
    from minigraph.llm.opened import open_llm
    from minigraph.llm.profile import Settings, profile_llm
    from minigraph.measure.bandwidth import rooflines
    from minigraph.measure.environment import capture_env
    from minigraph.threadpool.config import ThreadRequest, configure_threads
    configure_threads(ThreadRequest(threads=args.worker))
    eng = Engine(open_llm(args.model))
    peaks = rooflines(args.worker)
    cpu = capture_env()["cpu"].get("model") or "?"
    prof = profile_llm(eng, Settings(args.prompt_len, args.decode, args.rounds, False, ()),
                       args.worker, cpu, peaks, {})
    print(json.dumps(prof.to_dict()))


def _report(doc: dict) -> list[str]:
    from minigraph.results.llm import Figures, LLMProfile
    p = LLMProfile.from_dict(doc)
    f = Figures.of(p)
    gf, bw = p.peaks.get("gflops"), p.peaks.get("gbps")
    lines = [f"T={p.threads} on {p.cpu}",
             f"  prefill pp{p.prompt_len}: {f.prefill_tok_s:8.1f} tokens/s  "
             f"{f.prefill_gflops or 0:7.1f} GFLOP/s = {(f.prefill_gflops or 0) / gf:.0%} of the "
             f"FMA peak {gf:.1f}" if gf else "  prefill: no FMA peak measured",
             f"  decode: {f.decode_ms:7.2f} ms/token {f.decode_tok_s:7.1f} tokens/s  "
             f"{f.decode_gbps or 0:6.1f} GB/s = {(f.decode_gbps or 0) / bw:.0%} of the read "
             f"bandwidth {bw:.1f}" if bw else "  decode: no bandwidth measured"]
    for ph in p.phases:
        top = sorted(ph.ops, key=lambda o: -o.inrun_median)[:3]
        total = ph.inrun_sum()
        lines.append(f"  {ph.name} top ops: " + ", ".join(
            f"{o.name} {o.inrun_median / total:.0%}" for o in top))
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", help="an LLM build directory (default: build llama-100m)")
    ap.add_argument("--out", default=os.path.join(tempfile.gettempdir(), "mg-llama-100m"))
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--prompt-len", type=int, default=128)
    ap.add_argument("--decode", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return _worker(args)
    if not args.model:
        args.model = args.out
        if not (Path(args.out) / "build.json").is_file():
            from minigraph.llm.build import build_llm
            b = build_llm("llama-100m", args.out)
            print(f"built llama-100m in {b.build_json['build_time_s']:.1f} s into {args.out}")
    for t in (int(x) for x in args.threads.split(",")):
        cmd = [sys.executable, __file__, "--worker", str(t), "--model", args.model,
               "--prompt-len", str(args.prompt_len), "--decode", str(args.decode),
               "--rounds", str(args.rounds)]
        done = subprocess.run(cmd, capture_output=True, text=True, check=True,
                              env={**os.environ, "TVM_NUM_THREADS": str(t)})
        print("\n".join(_report(json.loads(done.stdout.strip().splitlines()[-1]))), flush=True)


if __name__ == "__main__":
    main()
