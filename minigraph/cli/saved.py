"""``minigraph show`` and ``compare``: saved profiles, diagnoses, fleet results and TVM
profiler reports, rendered again or compared (the shell around profile/files.py and report/)."""
from __future__ import annotations

import argparse
import json

from ..errors import InputError
from ..profile.modes import PER_OP
from .args import add_html_arg, add_view_args, add_wide_arg, check_outputs, text_width
from .profile import write_profile_outputs


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
    from ..measure.significance import ALPHA, FLOOR, Z
    c.add_argument("a", help="the baseline (A): a profile saved with profile --json or --raw, "
                             "a TVM profiler report, or a fleet result (--rpc-tracker) whose "
                             "devices are compared")
    c.add_argument("b", nargs="?", default=None,
                   help="the profile or TVM report compared with it (B); omitted for a fleet "
                        "result")
    c.add_argument("--mode", default="warm", choices=[m for m in PER_OP],
                   help="which per-op samples to compare (default warm)")
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
                   help="save the comparison as JSON ('-' for stdout); schema: "
                        "docs/compare-schema.md (with --by-kernel: every matched kernel pair "
                        "and the summary)")
    add_wide_arg(c)
    add_html_arg(c, "the comparison (two profiles of one model)")


def cmd_show(args: argparse.Namespace) -> int:
    """Renders a saved profile (JSON or msgpack), a TVM profiler report or a saved diagnosis."""
    from ..diagnose.model import is_diagnosis, parse_diagnosis
    from ..profile.files import parse_profile, read_limited
    from ..remote.model import is_fleet, parse_fleet
    from ..report.table import render
    from ..report.tvm_report import is_tvm_report, render_report
    check_outputs(args)
    data = read_limited(args.file)
    if is_fleet(data):  # one result per remote device (--rpc-tracker)
        if args.html:
            raise InputError(f"{args.file}: a fleet result; --html draws one profile or "
                             "diagnosis (save a device's with --json first)")
        from ..report.fleet import render as render_fleet
        print(render_fleet(parse_fleet(data, str(args.file))))
        return 0
    if is_diagnosis(data):
        if args.json_out or args.csv:
            raise InputError(f"{args.file}: a diagnosis; --json and --csv export profiles")
        from ..fileio import write_outputs
        from ..report.diagnosis import render_saved
        from ..report.html import diagnose_page
        diag = parse_diagnosis(data, str(args.file))
        print(render_saved(diag, width=text_width(args)))
        errors = write_outputs([(args.html,
                                 lambda: diagnose_page.render(diag, diag.attribution()))])
        if errors:
            raise errors[0]
        return 0
    prof = parse_profile(data, str(args.file))
    errors = write_profile_outputs(prof, args)
    show = render_report if is_tvm_report(prof) else render
    print(show(prof, args.order, args.aggregate, text_width(args), args.wide))
    if errors:
        raise errors[0]
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    check_outputs(args)
    if not 0 < args.alpha < 1 or not 0 <= args.noise_floor < 10:
        raise InputError("--alpha must be in (0, 1) and --noise-floor in [0, 10)")
    from ..profile.files import load_profile, read_limited
    from ..remote.model import is_fleet, parse_fleet
    data = read_limited(args.a)
    if is_fleet(data):  # the devices of one fleet result against each other
        if args.html:
            raise InputError("--html draws the comparison of two profiles, not a fleet's")
        from ..report.fleet import compare as compare_fleet
        if args.b is not None:
            raise InputError(f"{args.a} is a fleet result: compare its devices with "
                             f"`minigraph compare {args.a}` (no second file)")
        print(compare_fleet(parse_fleet(data, str(args.a)), args.mode, args.alpha,
                            args.noise_floor))
        return 0
    if args.b is None:
        raise InputError("compare needs two profiles (or one fleet result from --rpc-tracker)")
    from ..report.tvm_report import is_tvm_report
    a, b = load_profile(args.a), load_profile(args.b)
    if args.by_kernel or is_tvm_report(a) or is_tvm_report(b):
        return _compare_kernels(a, b, args)
    try:
        return _compare_profiles(a, b, args)
    except InputError as err:
        if "different models" not in str(err):
            raise
        return _renumbered_builds(a, b, args, err)


def _renumbered_builds(a, b, args: argparse.Namespace, err: InputError) -> int:
    """Op names that do not match may still be one model built twice: two builds number their
    fused functions differently. When most kernels match by identity (hash + shapes), compare
    them that way and say so; otherwise the profiles really are of different models."""
    from ..report.kernel_compare import compare_kernels
    kc = compare_kernels(a, b, str(args.a), str(args.b), args.mode)
    matched, kernels = len(kc.matching.pairs), max(kc.a.calls, kc.b.calls, 1)
    if not kc.matching.level.startswith("hash") or 2 * matched < len(kc.matching.pairs) + \
            len(kc.matching.only_a) + len(kc.matching.only_b):
        raise InputError(f"{err} (two builds of one model that number their fused functions "
                         "differently: try --by-kernel)") from None
    print(f"note: op names differ between A and B, but {matched} kernels match by identity "
          f"({kc.matching.level}) across {kernels} calls: comparing kernel by kernel")
    return _compare_kernels(a, b, args)


def _compare_profiles(a, b, args: argparse.Namespace) -> int:
    """Two minigraph profiles of one model: which per-op differences are real."""
    from ..fileio import write_outputs
    from ..report.compare import compare, to_dict
    paths = (str(args.a), str(args.b))
    text = compare(a, b, args.mode, args.alpha, args.noise_floor, paths=paths,
                   width=text_width(args), only_changed=args.changed)
    def page() -> str:
        from ..report.html import compare_page
        return compare_page.render(a, b, args.mode, args.alpha, args.noise_floor, paths)
    errors = write_outputs([(args.json_out, lambda: json.dumps(to_dict(
        a, b, args.mode, args.alpha, args.noise_floor, paths=paths), indent=1)),
                            (args.html, page)])
    print(text)
    if errors:
        raise errors[0]
    return 0


def _compare_kernels(a, b, args: argparse.Namespace) -> int:
    """Kernel by kernel (hash + shapes), with a verdict: TVM profiler reports, or --by-kernel."""
    from ..fileio import write_outputs
    from ..report.kernel_compare import compare_kernels
    from ..report.kernel_report import render as render_kernels, to_dict
    if args.html:
        raise InputError("--html draws the comparison of two profiles of one model; a kernel "
                         "comparison (TVM reports, --by-kernel) is text and --json only")
    kc = compare_kernels(a, b, str(args.a), str(args.b), args.mode)
    errors = write_outputs([(args.json_out, lambda: json.dumps(to_dict(kc), indent=1))])
    print(render_kernels(kc))
    if errors:
        raise errors[0]
    return 0
