"""``minigraph show`` and ``compare``: any saved document (profile, diagnosis, fleet result,
comparison, protocol results) or TVM profiler report, rendered again or compared. What a file
is gets decided once, by readers/documents.py through the format registry; each kind then has
one handler in ``SHOW``."""
from __future__ import annotations

import argparse
from typing import Callable

from ..analysis.comparison import Comparison
from ..analysis.thresholds import ALPHA, FLOOR, Z, cutoffs
from ..diagnose.attribution import attribution_of
from ..errors import InputError
from ..fileio import write_outputs
from ..fileio.jsontext import document_text
from ..readers.documents import Document, load_document, load_profile
from ..report import fleet as fleet_report, kernel_report, saved as saved_report
from ..report.compare import compare, to_dict as comparison_doc
from ..report.diagnosis import render_saved
from ..report.html import compare_page, diagnose_page, llm_page, sweep_page
from ..report.llm import format_llm_profile
from ..report.llm_compare import format_llm_comparison
from ..report.llm_diagnosis import format_llm_diagnosis
from ..report.sweep import render_sweep
from ..report.table import render
from ..report.tvm_report import render_report
from ..results.llm import COMPARISON_FORMAT
from ..results.modes import PER_OP, ModeName
from ..results.profile import Profile
from .args import add_html_arg, add_view_args, add_wide_arg, text_width
from .paths import check_outputs, report_file
from .profile import write_profile_outputs
from .terminal import emit


def add_show_arguments(s: argparse.ArgumentParser) -> None:
    s.add_argument("file", help="a saved profile (--json, --raw), a diagnosis (diagnose --json) "
                                "or a TVM profiler report (print(report), report.csv(), "
                                "report.json(), print(benchmark))")
    add_view_args(s)
    add_html_arg(s, "the saved profile or diagnosis (the same page as --html when measuring)")
    s.add_argument("--json", dest="json_out",
                   help="save the profile or imported report as a minigraph profile (JSON)")
    s.add_argument("--csv", help="save per-op medians and IQRs as CSV")


def add_compare_arguments(c: argparse.ArgumentParser) -> None:
    c.add_argument("a", help="the baseline (A): a profile saved with profile --json or --raw, "
                             "a TVM profiler report, or a fleet result (--rpc-tracker) whose "
                             "devices are compared")
    c.add_argument("b", nargs="?", default=None,
                   help="the profile or TVM report compared with it (B); omitted for a fleet "
                        "result")
    c.add_argument("--mode", action="append", choices=[m for m in PER_OP],
                   help="which per-op samples to compare (default warm); given twice, A's mode "
                        "then B's (e.g. --mode warm --mode one-pass)")
    c.add_argument("--alpha", type=float, default=ALPHA,
                   help=f"significance level of the Mann-Whitney test (default {ALPHA})")
    c.add_argument("--noise-floor", type=float, default=FLOOR,
                   help=f"smallest relative change reported as a change (default {FLOOR}, "
                        f"i.e. {100 * FLOOR:.0f}%%); larger ones must also exceed {Z:g} run-to-run "
                        "deviations estimated from the data")
    c.add_argument("--changed", action="store_true", help="list only the ops that differ")
    c.add_argument("--by-kernel", action="store_true",
                   help="match ops by kernel identity (hash + shapes, else name) and explain "
                        "the gap; the default when either input is a TVM profiler report")
    c.add_argument("--json", dest="json_out", metavar="FILE",
                   help="save the comparison as JSON ('-' for stdout, the report then on "
                        "stderr); schema: "
                        "docs/compare-schema.md (with --by-kernel: every matched kernel pair "
                        "and the summary)")
    add_wide_arg(c)
    add_html_arg(c, "the comparison (two profiles of one model)")


def _no_exports(doc: Document, args: argparse.Namespace, what: str) -> None:
    """A kind that is not a profile: --json/--csv (profile exports) and, unless ``what`` may
    be drawn, --html are refused."""
    if args.json_out or args.csv:
        raise InputError(f"{doc.source}: a saved {doc.kind}; --json and --csv export profiles")
    if args.html and what:
        raise InputError(f"{doc.source}: a saved {doc.kind}; --html draws {what}")


def _show_profile(doc: Document, args: argparse.Namespace) -> list:
    prof = doc.value
    assert isinstance(prof, Profile)
    errors = write_profile_outputs(prof, args)
    show = render_report if prof.imported else render
    emit(show(prof, args.order, args.aggregate, text_width(args), args.wide),
         file=report_file(args))
    return errors


def _show_diagnosis(doc: Document, args: argparse.Namespace) -> list:
    _no_exports(doc, args, "")
    diag = doc.value
    emit(render_saved(diag, width=text_width(args)))
    return write_outputs([(args.html, lambda: diagnose_page.render(diag, attribution_of(diag)))
                          ]).errors


def _show_fleet(doc: Document, args: argparse.Namespace) -> list:
    _no_exports(doc, args, "one profile or diagnosis (save a device's with --json first)")
    emit(fleet_report.render(doc.value))
    return []


def _show_comparison(doc: Document, args: argparse.Namespace) -> list:
    _no_exports(doc, args, "a comparison when comparing (compare A B --html)")
    emit(saved_report.render_comparison(doc.value, text_width(args)))
    return []


def _show_protocols(doc: Document, args: argparse.Namespace) -> list:
    _no_exports(doc, args, "a diagnosis's protocols (diagnose --html)")
    emit(saved_report.render_protocols(doc.value, text_width(args)))
    return []


def _show_sweep(doc: Document, args: argparse.Namespace) -> list:
    if args.json_out or args.csv:
        raise InputError(f"{doc.source}: a saved sweep; --json and --csv export profiles")
    emit(render_sweep(doc.value, text_width(args)))
    return write_outputs([(args.html, lambda: sweep_page.render(doc.value))]).errors


def _show_llm(doc: Document, args: argparse.Namespace) -> list:
    if args.csv:
        raise InputError(f"{doc.source}: a saved LLM profile; --csv exports graph profiles "
                         "(its --json is the document itself)")
    emit(format_llm_profile(doc.value), file=report_file(args))
    return write_outputs([(args.json_out, lambda: document_text(doc.value.to_dict(), indent=1)),
                          (args.html, lambda: llm_page.render(doc.value))]).errors


def _show_llm_comparison(doc: Document, args: argparse.Namespace) -> list:
    _no_exports(doc, args, "a comparison of graph profiles")
    c = doc.value
    emit("\n".join([f"verdict: {c['verdict']} — {c['because']}"] + [
        f"{p['name']}: {p['a_ns'] / 1e6:.3f} ms -> {p['b_ns'] / 1e6:.3f} ms ({p['ratio']:.2f}x, "
        f"p={p['p_value']:.2g}{', real' if p['real'] else ', within noise'})"
        for p in c["phases"]]))
    return []


def _show_llm_diagnosis(doc: Document, args: argparse.Namespace) -> list:
    _no_exports(doc, args, "a graph model's diagnosis")
    emit(format_llm_diagnosis(doc.value))
    return []


# one handler per kind of saved document (results/formats.py), each printing and returning the
# errors of the outputs it wrote
SHOW: dict[str, Callable[[Document, argparse.Namespace], list]] = {
    "profile": _show_profile, "diagnosis": _show_diagnosis, "fleet": _show_fleet,
    "comparison": _show_comparison, "kernel-comparison": _show_comparison,
    "protocols": _show_protocols, "sweep": _show_sweep, "llm-profile": _show_llm,
    "llm-comparison": _show_llm_comparison, "llm-diagnosis": _show_llm_diagnosis}


def cmd_show(args: argparse.Namespace) -> int:
    """Renders any saved document or TVM profiler report again."""
    check_outputs(args)
    doc = load_document(args.file)
    errors = SHOW[doc.kind](doc, args)
    if errors:
        raise errors[0]
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    check_outputs(args)
    if not 0 < args.alpha < 1 or not 0 <= args.noise_floor < 10:
        raise InputError("--alpha must be in (0, 1) and --noise-floor in [0, 10)")
    args.mode = _modes(args.mode)
    first = load_document(args.a)
    if first.kind == "fleet":  # the devices of one fleet result against each other
        if args.html:
            raise InputError("--html draws the comparison of two profiles, not a fleet's")
        if args.b is not None:
            raise InputError(f"{args.a} is a fleet result: compare its devices with "
                             f"`minigraph compare {args.a}` (no second file)")
        emit(fleet_report.compare(first.value, _one_mode(args.mode, "a fleet's devices"),
                                  cutoffs(args.alpha, args.noise_floor)))
        return 0
    if first.kind == "llm-profile":
        return _compare_llm(first, args)
    if first.kind != "profile":
        raise InputError(f"{args.a}: a saved {first.kind}; compare takes two profiles (or TVM "
                         "reports), or one fleet result")
    if args.b is None:
        raise InputError("compare needs two profiles (or one fleet result from --rpc-tracker)")
    a, b = first.value, load_profile(args.b)
    c = Comparison(a, b, args.mode, args.alpha, args.noise_floor, (str(args.a), str(args.b)))
    if args.by_kernel or a.imported or b.imported:
        return _compare_kernels(c, args)
    try:
        return _compare_profiles(c, args)
    except InputError as err:
        if "different models" not in str(err):
            raise
        return _renumbered_builds(c, args, err)


def _compare_llm(first: Document, args: argparse.Namespace) -> int:
    """Two LLM profiles: one verdict per request (report/llm_compare.py)."""
    if args.b is None:
        raise InputError("compare needs two LLM profiles")
    second = load_document(args.b)
    if second.kind != "llm-profile":
        raise InputError(f"{args.b}: a saved {second.kind}; {args.a} is an LLM profile")
    if args.html or args.by_kernel:
        raise InputError("--html and --by-kernel compare graph profiles, not LLM profiles")
    c = Comparison(first.value, second.value)
    emit(format_llm_comparison(c), file=report_file(args))
    v = c.phases
    doc = {"format": COMPARISON_FORMAT, "verdict": v.verdict, "because": v.because,
           "phases": [{"name": m.name, "a_ns": m.a_ns, "b_ns": m.b_ns, "ratio": m.ratio,
                       "p_value": m.p_value, "real": m.real} for m in v.phases]}
    errors = write_outputs([(args.json_out, lambda: document_text(doc, indent=1))]).errors
    if errors:
        raise errors[0]
    return 0


def _modes(given: list[str] | None) -> str | tuple[str, str]:
    """--mode given 0, 1 or 2 times: warm, that mode for both sides, or (A's, B's)."""
    if not given:
        return ModeName.WARM
    if len(given) > 2:
        raise InputError(f"--mode given {len(given)} times: once (both sides) or twice "
                         "(A's mode, then B's)")
    return given[0] if len(given) == 1 or given[0] == given[1] else (given[0], given[1])


def _one_mode(mode: str | tuple[str, str], what: str) -> str:
    if not isinstance(mode, str):
        raise InputError(f"comparing {what} takes one --mode (the same for every side)")
    return mode


def _renumbered_builds(c: Comparison, args: argparse.Namespace, err: InputError) -> int:
    """Op names that do not match may still be one model built twice: two builds number their
    fused functions differently. When most kernels match by identity (hash + shapes), compare
    them that way and say so; otherwise the profiles really are of different models."""
    kc = c.kernels
    matched, kernels = len(kc.matching.pairs), max(kc.a.calls, kc.b.calls, 1)
    if not kc.matching.level.startswith("hash") or 2 * matched < len(kc.matching.pairs) + \
            len(kc.matching.only_a) + len(kc.matching.only_b):
        raise InputError(f"{err} (two builds of one model that number their fused functions "
                         "differently: try --by-kernel)") from None
    emit(f"note: op names differ between A and B, but {matched} kernels match by identity "
         f"({kc.matching.level}) across {kernels} calls: comparing kernel by kernel",
         file=report_file(args))
    return _compare_kernels(c, args)


def _compare_profiles(c: Comparison, args: argparse.Namespace) -> int:
    """Two minigraph profiles of one model: which per-op differences are real."""
    text = compare(c, width=text_width(args), only_changed=args.changed)
    errors = write_outputs([(args.json_out, lambda: document_text(comparison_doc(c), indent=1)),
                            (args.html, lambda: compare_page.render(c))]).errors
    emit(text, file=report_file(args))
    if errors:
        raise errors[0]
    return 0


def _compare_kernels(c: Comparison, args: argparse.Namespace) -> int:
    """Kernel by kernel (hash + shapes), with a verdict: TVM profiler reports, or --by-kernel."""
    if args.html:
        raise InputError("--html draws the comparison of two profiles of one model; a kernel "
                         "comparison (TVM reports, --by-kernel) is text and --json only")
    errors = write_outputs([(args.json_out, lambda: document_text(
        kernel_report.to_dict(c), indent=1))]).errors
    emit(kernel_report.render(c), file=report_file(args))
    if errors:
        raise errors[0]
    return 0
