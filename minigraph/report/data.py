"""The data, in words: where the values came from, the ops whose operands hold subnormal, NaN
or Inf values, and what the subnormal ones measurably cost (results/data.py).

Said first wherever a profile is read (summary, show, compare, the HTML page, diagnose),
because it is not a first-run effect: it is in every run on that data, and two profilers that
ran on different data disagree by it.
"""
from __future__ import annotations

from ..fileio.printable import one_line
from ..results.data import ArgValues, DataCost, DataReport, OpValues
from .units import dur

NOT_GIVEN = ("unset", "filled", "generated")
NOTABLE_RATIO = 1.10   # below this a resolved data cost is called small


def _pct(share: float) -> str:
    """'100%', '6.3%', '0.012%': two digits where they matter."""
    pct = 100 * share
    return f"{pct:.0f}%" if pct >= 10 else f"{pct:.1f}%" if pct >= 1 else f"{pct:.2g}%"


def _share(a: ArgValues) -> str:
    return _pct(a.counts.share("subnormal"))


def source_lines(report: DataReport) -> list[str]:
    """One line per (role, source): '53 weights: params (out/model.params)'."""
    groups: dict[tuple[str, str, str], int] = {}
    for s in report.sources.values():
        key = (s.get("role", "?"), s.get("kind", "?"), s.get("detail", ""))
        groups[key] = groups.get(key, 0) + 1
    lines = []
    for (role, kind, detail), n in sorted(groups.items()):
        what = f"{n} {role}{'s' if n != 1 else ''}"
        label = "NOT SET" if kind == "unset" else kind
        lines.append(f"  {what}: {label}" + (f" ({detail})" if detail else ""))
    return [one_line(line) for line in lines]  # names from the file: one line each


def cost_text(c: DataCost | None) -> str:
    """'151x its time with the subnormals flushed [140x, 160x], +172 ms' or why not known."""
    if c is None:
        return "its cost was not measured"
    span = f"[{c.ratio_lo:.2f}x, {c.ratio_hi:.2f}x]"
    if not c.resolved:
        return f"no measurable cost on this CPU ({c.ratio:.2f}x its time flushed {span})"
    if c.ratio_hi < NOTABLE_RATIO and c.ratio_lo > 1 / NOTABLE_RATIO:
        return f"a small cost on this CPU ({c.ratio:.2f}x its time flushed {span})"
    return (f"{dur(c.cost_ns + _flushed_median(c))}, {c.ratio:.1f}x its time with them "
            f"flushed to zero {span} (+{dur(c.cost_ns)})")


def _flushed_median(c: DataCost) -> float:
    xs = sorted(c.flushed_ns)
    return xs[len(xs) // 2] if xs else 0.0


def _weights(o: OpValues, report: DataReport) -> str:
    """'100% of its weight values are subnormal (conv1.weight 100%): were the params set?'"""
    weights = [a for a in o.reads("weight") if a.counts.subnormal]
    if not weights:
        return ""
    total = sum(a.counts.n for a in o.reads("weight")) or 1
    share = sum(a.counts.subnormal for a in weights) / total
    unset = any(report.sources.get(a.name, {}).get("kind") in NOT_GIVEN for a in weights)
    names = ", ".join(f"{a.name} {_share(a)}" for a in weights[:2])
    return (f"{_pct(share)} of its weight values are subnormal ({names})"
            + (": were the params set?" if unset or share >= 0.5 else ""))


def _reads(o: OpValues, report: DataReport) -> str:
    parts = [_weights(o, report)] if _weights(o, report) else []
    acts = [a for a in o.reads("activation") if a.counts.subnormal]
    parts += [f"it reads subnormal activations ({_share(a)}) produced by op {a.producer}"
              for a in acts[:2]]
    inputs = [a for a in o.reads("input") if a.counts.subnormal]
    parts += [f"its input {a.name} holds {_share(a)} subnormal values" for a in inputs[:1]]
    return "; ".join(parts)


def op_lines(report: DataReport) -> list[str]:
    """One sentence per op whose operands hold special values, the costliest first."""
    def weight(o: OpValues) -> float:
        c = report.cost(o.index)
        return -(c.cost_ns if c else 0.0)
    lines = []
    for o in sorted(report.ops, key=weight):
        reads = _reads(o, report)
        if reads:
            lines.append(f"  op {o.index} {o.name}: {reads}; {cost_text(report.cost(o.index))}")
        nonfinite = [a for a in o.args if a.counts.nan or a.counts.inf]
        if nonfinite:
            a = nonfinite[0]
            what = " and ".join(f"{n} {k}" for n, k in ((a.counts.nan, "NaN"),
                                                        (a.counts.inf, "Inf")) if n)
            lines.append(f"  op {o.index} {o.name}: its {a.role} {a.name} holds {what} values")
        writes = [a for a in o.writes() if a.counts.subnormal] if not reads else []
        if writes:
            lines.append(f"  op {o.index} {o.name}: writes subnormal values ({_share(writes[0])}) "
                         "from normal inputs (underflow); their cost is not separable here")
    return [one_line(line) for line in lines]  # names from the file: one line each


def data_section(report: DataReport | None) -> str:
    """The 'Data' block of a report ('' when there is nothing to say beyond given params)."""
    if report is None:
        return ""
    ops = op_lines(report)
    not_given = any(s.get("kind") in ("unset", "filled") for s in report.sources.values())
    if not ops and not not_given:
        return ""
    checked = "inputs, weights and every op's outputs" if report.activations_checked else \
        "inputs and weights"
    head = [f"Data (checked: {checked}). Subnormal values (below 1.2e-38 in float32) cost a "
            "microcode assist per operand on many x86 CPUs (Intel's most of all), in every run "
            "on that data, not only the first; each op below is timed on its inputs as given "
            "and with them flushed to zero:"]
    body = ops or ["  no subnormal, NaN or Inf values in what was checked"]
    return "\n".join(head + source_lines(report) + body + [f"  note: {n}" for n in report.notes])


def headline(report: DataReport | None) -> str | None:
    """The one sentence a summary, comparison or diagnosis leads with: weights nobody set, or
    the op whose subnormal operands cost the most (None: the data says nothing notable)."""
    if report is None:
        return None
    unset = sum(1 for s in report.sources.values() if s.get("kind") == "unset")
    costly = [c for c in report.costs if c.resolved and c.ratio_lo >= NOTABLE_RATIO]
    lead = None
    if costly:
        c = max(costly, key=lambda c: c.cost_ns)
        o = report.op(c.index)
        lead = f"op {c.index} {c.name}: {cost_text(c)}" + (f"; {_reads(o, report)}" if o else "")
    elif report.ops:  # nothing cost much here: the op with the most subnormal weights still
        o = max(report.ops, key=lambda o: sum(a.counts.subnormal for a in o.reads("weight")))
        weights = _weights(o, report)
        if weights:
            lead = f"op {o.index} {o.name}: {weights}; {cost_text(report.cost(o.index))}"
    if unset:
        note = (f"{unset} arg node{'s' if unset != 1 else ''} ran on storage as the allocator "
                "left it (never set)")
        lead = f"{note}; {lead}" if lead else note
    return one_line(lead) if lead else lead  # one sentence, whatever the names hold
