"""The report table in the style of TVM's profiling ``Report.table()`` (returns text).

Fitted to a width (the terminal's; the CLI chooses it): names are cut in the middle (or lose
the prefix every op shares), argument shapes, hashes and per-mode sample counts appear only in
the wide view. The exports (CSV, JSON) always carry everything.
"""
from __future__ import annotations

from collections import OrderedDict

from ..measure.stats import Stats
from ..results.modes import BY_NAME, PER_OP, ModeName
from ..results.profile import Profile
from .data import data_section
from .roofline import render as roofline
from .summary import breakdown, configuration, e2e_row, spread, summary
from .units import dur, format_table, precision_text, shared_prefix, wrap
from .vm import format_vm_section, vm_summary

_TEXT_COLUMNS = ("Name", "Kind", "Layout", "Argument Shapes", "Hash")


def _rows(profile: Profile, modes: list[str], aggregate: bool) -> list[dict]:
    rows: "OrderedDict[tuple, dict]" = OrderedDict()
    for op in profile.ops:
        shapes = ", ".join(f"{t}{s}" for t, s in op["shapes"])
        key = (op["hash"] or op["func_name"], shapes) if aggregate else (op["index"],)
        row = rows.setdefault(key, {"name": op["name"], "kind": op["kind"], "ops": [],
                                    "shapes": shapes, "hash": op["hash"],
                                    "layout": ",".join(op["layouts"].values()),
                                    "ns": {m: 0.0 for m in modes}})
        row["ops"].append(op["index"])
        for m in modes:
            v = profile.median(m, op["index"])
            row["ns"][m] = None if v is None or row["ns"][m] is None else row["ns"][m] + v
    return list(rows.values())


def reference_mode(modes: list[str]) -> str | None:
    """The mode Percent is a share of and ``--order time`` sorts by: warm where measured."""
    return ModeName.WARM if ModeName.WARM in modes else (modes[0] if modes else None)


def _sort(rows: list[dict], order: str, ref: str | None) -> list[dict]:
    if order != "time" or ref is None:  # e.g. an e2e-only profile: nothing per op to sort by
        return rows
    return sorted(rows, key=lambda r: -(r["ns"][ref] or 0.0))


def _spread_cells(profile: Profile, mode: str, all_stats: list[Stats], ops: list[int]
                  ) -> tuple[str, str]:
    """(n, +-precision) of a row: how well its median is known (the half-width of its 90%
    interval); for a row of several ops, the fewest samples and the least precise of them."""
    stats = [(i, all_stats[i]) for i in ops if i < len(all_stats) and all_stats[i].n]
    if not stats:
        return "-", "-"
    worst = max(profile.precision(mode, i) for i, _ in stats)
    return str(min(s.n for _, s in stats)), precision_text(worst)


def _columns(modes: list[str], ref: str | None, aggregate: bool, wide: bool) -> list[str]:
    head = ["Name"]
    for m in modes:
        head.append(m + ("*" if BY_NAME[m].one_sample else ""))
        if not BY_NAME[m].one_sample and (wide or m == ref):
            head += [f"{m} n"] if wide else []
            head.append(f"{m} +-")
    head += ["Percent"] + (["Count"] if aggregate or wide else []) + ["Kind"]
    return head + (["Layout", "Argument Shapes", "Hash"] if wide else [])


def _kept(rows: list[dict], ref: str | None, top: int | None) -> list[dict]:
    """The rows a brief table shows: the first op (the classic first-op inflation) and the
    heaviest by ``ref`` up to ``top`` rows, in their order; all rows when ``top`` is None."""
    if top is None or ref is None or len(rows) <= top + 1:
        return rows
    heavy = sorted(range(1, len(rows)), key=lambda i: -(rows[i]["ns"][ref] or 0.0))
    keep = {0, *heavy[:top - 1]}
    return [r for i, r in enumerate(rows) if i in keep]


def _body(profile: Profile, rows: list[dict], modes: list[str], ref: str | None,
          head: list[str], top: int | None = None) -> list[list[str]]:
    total = sum((r["ns"][ref] or 0.0) for r in rows) if ref else 0.0
    stats = {m: profile.stats(m) for m in modes}
    body = []
    shown = _kept(rows, ref, top)
    for r in shown:
        cells = {"Name": r["name"], "Percent": f"{100 * (r['ns'][ref] or 0) / total:.2f}"
                 if total else "-", "Count": str(len(r["ops"])), "Kind": r["kind"],
                 "Layout": r["layout"], "Argument Shapes": r["shapes"], "Hash": r["hash"]}
        for m in modes:
            cells[m + ("*" if BY_NAME[m].one_sample else "")] = dur(r["ns"][m])
            cells[f"{m} n"], cells[f"{m} +-"] = _spread_cells(profile, m, stats[m],
                                                                   r["ops"])
        body.append([cells[h] for h in head])
    if len(shown) < len(rows):
        rest = [r for r in rows if r not in shown]
        more = {"Name": f"({len(rest)} more ops: --wide)",
                "Percent": f"{100 * sum(r['ns'][ref] or 0 for r in rest) / total:.2f}"
                if total else "-"}
        more |= {m + ("*" if BY_NAME[m].one_sample else ""): dur(sum(r["ns"][m] or 0.0
                                                                    for r in rest))
                 for m in modes}
        body.append([more.get(h, "") for h in head])
    sums = {m: sum((r["ns"][m] or 0.0) for r in rows) for m in modes}
    last = {"Name": "Sum", "Percent": "100.00" if total else "-", "Count": str(len(profile.ops))}
    last |= {m + ("*" if BY_NAME[m].one_sample else ""): dur(v) for m, v in sums.items()}
    body.append([last.get(h, "") for h in head])
    return body


def _caption(modes: list[str], ref: str | None, order: str, prefix: str) -> str:
    single = [m for m in modes if BY_NAME[m].one_sample]
    parts = ["Per-op medians" + (f" ({'*, '.join(single)}*: one sample per op, no spread)"
                                 if single else "") + "."]
    if ref and not BY_NAME[ref].one_sample:
        parts.append(f"{ref} +-: half-width of the median's 90% interval.")
    if ref:
        parts.append(f"Percent: share of the sum of {ref} medians.")
    parts.append(f"Rows by {ref} median, largest first (--order time)." if order == "time"
                 and ref else "Rows in execution order (--order time: by " +
                 (f"{ref} median)." if ref else "time)."))
    if prefix:
        parts.append(f"Names without their shared prefix {prefix!r}.")
    return " ".join(parts)


def table(profile: Profile, order: str = "exec", aggregate: bool = False,
          width: int | None = None, wide: bool = False, top: int | None = None) -> str:
    """The per-op table under its caption; ``width`` None or ``wide``: nothing cut; ``top``:
    only the first op and the heaviest, up to that many rows, the rest summed in one."""
    modes = [m for m in PER_OP if m in profile.samples]
    if not modes:
        return ""
    ref = reference_mode(modes)
    rows = _sort(_rows(profile, modes, aggregate), order, ref)
    head = _columns(modes, ref, aggregate, wide)
    body = _body(profile, rows, modes, ref, head, None if wide else top)
    right = {c for c, h in enumerate(head) if h not in _TEXT_COLUMNS}
    limit = None if wide else width
    text, prefix = format_table(head, body, right), ""
    if limit is not None and max(map(len, text.splitlines())) > limit:
        prefix = shared_prefix([r["name"] for r in rows])
        for b in body[:len(_kept(rows, ref, None if wide else top))]:
            b[0] = b[0][len(prefix):]
        optional = [head.index(h) for h in ("Kind", f"{ref} +-") if h in head]
        text = format_table(head, body, right, width=limit, shrink=(0,), min_shrink=20,
                            optional=optional)
    return wrap(_caption(modes, ref, order, prefix), limit, indent=0) + "\n" + text


BRIEF_TOP = 12  # rows of the short default table: op 0 and the heaviest ops
BRIEF_LINES = 50  # the short default's budget: one screen, however much the summary has to say
BRIEF_MIN_TOP = 4  # the table keeps op 0 and at least three heavy ops when the budget is tight


def _brief_at(profile: Profile, order: str, aggregate: bool, width: int | None,
              top: int) -> str:
    """The short default with ``top`` table rows."""
    limit = width
    vm = profile.vm_results()
    return wrap("\n\n".join(p for p in (
        table(profile, order, aggregate, width, top=top), e2e_row(profile, limit),
        roofline(profile, brief=True), summary(profile, brief=True),
        "\n".join(["Relax VM on the same executable (TVM 0.27's own measurements):",
                   *vm_summary(profile, vm)]) if vm else "",
        "More (how sure each median is, by op kind, every op's roofline, the "
        "configuration, the data, TVM's own numbers): --wide, or minigraph show on the "
        "--json file") if p), limit)


def _short(profile: Profile, order: str, aggregate: bool, width: int | None) -> str:
    """The short default within BRIEF_LINES: what the summary has to say (a busy machine's
    warning, several inflated ops) is kept, and the table gives up its lightest rows for it."""
    text = _brief_at(profile, order, aggregate, width, BRIEF_TOP)
    excess = len(text.splitlines()) - BRIEF_LINES
    if excess > 0:
        text = _brief_at(profile, order, aggregate, width, max(BRIEF_MIN_TOP, BRIEF_TOP - excess))
    return text


def render(profile: Profile, order: str = "exec", aggregate: bool = False,
           width: int | None = None, wide: bool = False, brief: bool = False) -> str:
    """The whole report: table, spread, e2e, breakdown, roofline, configuration, summary, and
    for a Relax VM executable the VM's own numbers beside it; ``brief`` (and not ``wide``):
    the short default, one screen (the heaviest ops, e2e, the roofline's rates, the
    summary), the rest named with the option that shows it."""
    limit = None if wide else width
    vm = profile.vm_results()
    if brief and not wide:
        return _short(profile, order, aggregate, width)
    parts = [table(profile, order, aggregate, width, wide), spread(profile),
             e2e_row(profile, limit), breakdown(profile), roofline(profile),
             configuration(profile), data_section(profile.data_report()), summary(profile),
             format_vm_section(profile, vm) if vm else ""]
    return wrap("\n\n".join(p for p in parts if p), limit)
