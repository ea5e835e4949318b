"""The roofline section of the profile report: achieved GFLOP/s and % of peak per op, the
heaviest ops first, and the kernels far below their neighbours (analysis/roofline.py)."""
from __future__ import annotations

import math

from ..analysis.disturbance import Disturbance, cause, disturbance
from ..analysis.roofline import OpRoofline, roofline
from ..analysis.thresholds import ROOFLINE_FLAG_FRACTION
from ..fileio.printable import one_line
from ..results.profile import Profile
from .units import dur, format_table, us as _us

TOP = 12
BRIEF_SLOW = 3  # slow ops the short default names one by one


def render(profile: Profile, brief: bool = False) -> str:
    """The section; ``brief``: its heading, the whole model's rate and the flagged ops."""
    roof = roofline(profile)
    rows = roof.ops
    if not rows:
        return ""
    peak = profile.env.get("peak") or {}
    total_ns = sum(r.ns for r in rows) or 1.0
    flops = sum(r.flops for r in rows)
    known = peak.get("gflops") and not peak.get("below_rates")
    source = {op.get("flops_from", "build.json") for op in profile.ops if "flops" in op}
    counted = ("FLOPs from build.json" if source == {"build.json"} else
               "FLOPs from the argument shapes, conv2d and matmul only (no build.json)"
               if source == {"shapes"} else "FLOPs from build.json, else the argument shapes")
    head = (f"Roofline ({roof.mode} medians; {counted}; peak "
            + (f"{peak['gflops']:.0f} GFLOP/s = {peak.get('threads', 1)} thread(s) x "
               f"{peak['gflops_per_thread']:.0f}, {peak.get('method', 'measured')})" if known
               else f"unknown: ops ran faster than the {peak['gflops']:.0f} GFLOP/s measured, "
                    "twice; the machine was busy while it was measured, no share of it shown)"
               if peak.get("gflops") else "unknown)"))
    overall = flops / total_ns
    scope = "all ops" if source == {"build.json"} else f"the {len(rows)} ops counted"
    lines = [head, f"  {scope}: {flops / 1e9:.2f} GFLOP in {dur(total_ns)} = "
                   f"{overall:.1f} GFLOP/s"
             + (f" ({100 * overall / peak['gflops']:.0f}% of peak)" if known else "")]
    top = [] if brief else sorted(rows, key=lambda r: -r.ns)[:TOP]
    body = [[str(r.index), r.name, _us(r.ns), f"{r.flops / 1e6:.1f}", f"{r.gflops:.1f}",
             "-" if r.pct_peak is None else f"{r.pct_peak:.0f}%", f"{r.intensity:.1f}",
             "FLAGGED" if r.flagged else ""] for r in top]
    lines += [] if brief else [format_table(["#", "Name", "time (us)", "MFLOP", "GFLOP/s", "% peak",
                               "FLOP/byte", ""], body, right={0, 2, 3, 4, 5, 6})]
    slow = [r for r in rows if r.flagged or r.twin]
    disturbed = disturbance(profile)
    if brief and disturbed is not None and len(slow) > 1:
        return "\n".join(lines + [_disturbed_together(slow, disturbed)])
    shown = slow[:BRIEF_SLOW] if brief else slow
    lines += [_slow_line(r, disturbed) for r in shown]
    if len(slow) > len(shown):
        lines.append(f"  {len(slow) - len(shown)} more ops below their neighbours' rate: --wide")
    return "\n".join(lines)


def _slow_line(r: OpRoofline, disturbed: Disturbance | None) -> str:
    """An op far below its compute-heavy neighbours' rate, and what that can mean."""
    measured = (f"  op {r.index} {one_line(r.name)}: {r.gflops:.1f} GFLOP/s is below "
                f"{ROOFLINE_FLAG_FRACTION:.0%} of its compute-heavy neighbours' "
                f"{r.neighbours_gflops:.1f} GFLOP/s")
    slower = r.neighbours_gflops / r.gflops - 1 if r.gflops else math.inf
    if r.flagged:
        return cause(measured, "a poorly scheduled kernel?", disturbed, slower)
    return (f"{measured}, but op {r.twin[0]} of the same shape ran at {r.twin[1]:.1f}: the "
            "same computation at another speed, not its schedule (the measurement, its data "
            "or its cache state)")


def _disturbed_together(slow: list[OpRoofline], disturbed: Disturbance) -> str:
    """The brief report's one line for several slow ops on a disturbed machine: the same
    "cannot tell" said once, not once per op."""
    ops = ", ".join(str(r.index) for r in slow)
    return (f"  ops {ops}: below {ROOFLINE_FLAG_FRACTION:.0%} of their compute-heavy "
            f"neighbours' rate; cannot tell the cause: the machine was disturbed ({disturbed.describe()})")
