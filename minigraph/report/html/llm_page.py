"""The LLM profile's page: the user's figures as cards, then per phase (prefill, decode) one
grouped bar per op (in-run, warm x calls, first request), the attention builtin's own kernels,
and the depth sweep; the text report closes the page. Draws what the document holds."""
from __future__ import annotations

from ...analysis.contention import warning
from ...results.llm import Figures, LLMProfile, PhaseResult
from ...results.modes import ModeName
from ..llm import format_llm_profile
from .charts import Bar, Row, hbars, legend
from .page import cards, document, section, table
from .svg import duration, esc, unit_for

SERIES = ((ModeName.IN_RUN, "#0072B2"), ("warm x calls", "#009E73"), ("first request", "#D55E00"))


def _row(o, total: float) -> Row:
    warm = o.warm_ns * o.calls if o.warm_ns is not None else None
    values = (o.inrun_median, warm, o.first_ns)
    bars = tuple(Bar(name, v, colour, f"{o.name}: {name} {duration(v)}")
                 if v else None for (name, colour), v in zip(SERIES, values))
    return Row(o.label, f"{o.label} ({o.kind}, {o.calls} calls): {100 * o.inrun_median / total:.1f}%"
               " of the phase's in-run sum", bars,
               {"exec": 0.0, "time": -o.inrun_median}, {"op": o.name})


def _phase(ph: PhaseResult) -> str:
    total = ph.inrun_sum() or 1.0
    rows = [_row(o, total) for o in sorted(ph.ops, key=lambda o: -o.inrun_median)]
    unit, per = unit_for(max((o.first_ns or o.inrun_median for o in ph.ops), default=1.0))
    body = legend(list(SERIES)) + hbars(rows, f"time ({unit})", per, order="time",
                                        name=f"phase-{ph.name}")
    if ph.inside_ns:
        med = ph.inside_medians()
        body += "<h3>Inside the attention builtin</h3>" + table(
            ("KV cache kernel", "calls per token", "time per phase"),
            [(k, f"{ph.inside_calls.get(k, 0) / ph.tokens:.3g}", duration(v))
             for k, v in sorted(med.items(), key=lambda kv: -kv[1])], {1, 2})
    intro = (f"{ph.tokens} token(s) at KV depth {ph.depth}; end to end through TVM's VM "
             f"{duration(ph.e2e_median())}, minigraph's in-run sum {duration(total)}.")
    return section(f"phase-{ph.name}", f"{ph.name.capitalize()}, per op", esc(intro), body)


def render(p: LLMProfile) -> str:
    """The LLM profile as one self-contained HTML document."""
    f = Figures.of(p)
    head = [(f"{f.ttft_ms:.1f} ms", "time to first token (first request)"),
            (f"{f.prefill_tok_s:.1f}", f"prefill tokens/s (pp{p.prompt_len})"),
            (f"{f.decode_ms:.2f} ms", f"decode per token (tg, depth {p.phase('decode').depth})"),
            (f"{f.itl_p50_ms:.2f} / {f.itl_p99_ms:.2f} ms", "inter-token latency p50 / p99")]
    if f.prefill_gflops and p.peaks.get("gflops"):
        head.append((f"{f.prefill_gflops / p.peaks['gflops']:.0%}", "prefill of the FMA peak"))
    if f.decode_gbps and p.peaks.get("gbps"):
        head.append((f"{f.decode_gbps / p.peaks['gbps']:.0%}", "decode of the read bandwidth"))
    busy = warning(p.contention, "this profile")
    top = cards(head) + (f'<p class="warn">{esc(busy)}</p>' if busy else "")
    sections = [section("figures", "The request", "", top)]
    sections += [_phase(ph) for ph in p.phases]
    sections.append(section("text", "The text report", "",
                            f"<pre>{esc(format_llm_profile(p))}</pre>"))
    sub = f"{p.model}: {p.threads} thread(s) on {p.cpu}"
    return document("minigraph LLM profile", sub, sections, "llm-profile")
