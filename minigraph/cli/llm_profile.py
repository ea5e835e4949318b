"""``minigraph profile`` of an LLM (a build directory of kind llm, or a user's executable with
embed / prefill / decode): the shell around llm/profile.py and report/llm.py."""
from __future__ import annotations

import argparse
import os
import sys

from ..errors import InputError
from ..fileio import write_outputs
from ..fileio.jsontext import document_text
from ..llm.diagnose import Settings as LadderSettings, diagnose_llm, parse_rungs
from ..llm.engine import Engine
from ..llm.opened import is_llm, open_llm
from ..llm.profile import Settings, profile_llm
from ..measure.bandwidth import rooflines
from ..measure.environment import capture_env
from ..report.html import llm_page
from ..report.llm import format_llm_profile
from ..report.llm_diagnosis import format_llm_diagnosis
from ..results.llm import LIMITS
from ..threadpool.config import ThreadRequest, configure_threads
from .args import bounded, within
from .terminal import emit

_prompt_len = bounded(LIMITS["prompt_len"], "a prompt length in tokens,")
_decode = bounded(LIMITS["decode"], "decode steps,")
# the defaults below are the dataclasses' (llm/profile.py, llm/diagnose.py)
_PROFILE, _LADDER = Settings(), LadderSettings()


def add_llm_profile_arguments(p: argparse.ArgumentParser) -> None:
    d = _PROFILE
    p.add_argument("--prompt-len", type=_prompt_len, default=d.prompt_len,
                   help="LLM: prompt tokens of the profiled request's prefill (default "
                        f"{d.prompt_len}; {within(LIMITS['prompt_len'])}, and within the KV "
                        "cache)")
    p.add_argument("--decode", type=_decode, default=d.decode_steps,
                   help="LLM: decode steps of the generation timed for inter-token latency "
                        f"(default {d.decode_steps}; {within(LIMITS['decode'])})")
    p.add_argument("--rounds", type=bounded(LIMITS["rounds"], "rounds,"), default=d.rounds,
                   help=f"LLM: in-run replays and e2e runs per phase (default {d.rounds}; "
                        f"{within(LIMITS['rounds'])})")


def add_llm_diagnose_arguments(d: argparse.ArgumentParser) -> None:
    d.add_argument("--prompt-len", type=_prompt_len, default=_LADDER.prompt_len,
                   help="LLM: prompt tokens of the diagnosed first request (default "
                        f"{_LADDER.prompt_len})")


def cmd_llm_diagnose(args: argparse.Namespace) -> int:
    """The first request's warm-up ladder in fresh processes (llm/diagnose.py)."""
    settings = LadderSettings(args.processes or _LADDER.processes, parse_rungs(args.rungs),
                              args.prompt_len, args.threads)
    opened = open_llm(args.model, args.params)  # refused here, not in every worker
    if args.prompt_len + 2 > opened.context:
        raise InputError(f"--prompt-len {args.prompt_len}: the KV cache holds "
                         f"{opened.context} tokens")
    cpu = capture_env().get("cpu", {}).get("model") or "this CPU"

    def progress(i: int, n: int) -> None:
        if not args.quiet and sys.stderr.isatty():
            print(f"\rprocess {i + 1}/{n}", end="", file=sys.stderr, flush=True)
    diag = diagnose_llm(args.model, args.params, settings, cpu, opened.name, progress)
    written = write_outputs([(args.json_out, lambda: document_text(diag.to_dict(), indent=1))])
    emit(format_llm_diagnosis(diag))
    if written.errors:
        raise written.errors[0]
    return 0


def _depths(args: argparse.Namespace) -> tuple[int, ...]:
    if not args.sweep:
        return ()
    name, values = args.sweep
    if name != "depth":
        raise InputError(f"--sweep {name}=...: an LLM profile sweeps the KV-cache depth "
                         "(--sweep depth=128,512,2048)")
    return tuple(values)


def _check(args: argparse.Namespace, context: int) -> None:
    if args.prompt_len > context - 1:
        raise InputError(f"--prompt-len {args.prompt_len}: the KV cache holds {context} tokens")
    if args.prompt_len + args.decode + 1 > context:
        raise InputError(f"--decode {args.decode}: the prompt and the steps must fit the KV "
                         f"cache's {context} tokens")
    deep = [d for d in _depths(args) if d + 2 > context]
    if deep:
        raise InputError(f"--sweep depth={deep[0]}: the KV cache holds {context} tokens")
    if args.csv or args.trace or args.raw:
        raise InputError("--csv, --trace and --raw export graph profiles; an LLM profile's "
                         "document is --json (and --html draws it)")
    if args.mode:
        raise InputError("--mode: an LLM profile measures its own set (first request, in-run, "
                         "warm, e2e)")


def cmd_llm_profile(args: argparse.Namespace) -> int:
    req = ThreadRequest(threads=args.threads).resolved()
    threads = req.threads
    opened = open_llm(args.model, args.params)
    _check(args, opened.context)
    configure_threads(req)
    settings = Settings(args.prompt_len, args.decode, args.rounds, True, _depths(args))
    if not args.quiet:
        emit(f"profiling {opened.name}: prefill of {args.prompt_len} tokens, {args.decode} "
             f"decode steps, {threads} thread(s)", file=sys.stderr)
    env = capture_env()
    cpu = env.get("cpu", {}).get("model") or "this CPU"
    prof = profile_llm(Engine(opened), settings, threads, cpu, rooflines(threads), env)
    written = write_outputs([(args.json_out, lambda: document_text(prof.to_dict(), indent=1)),
                             (args.html, lambda: llm_page.render(prof))])
    text = format_llm_profile(prof)
    emit(text, file=sys.stderr if args.json_out == "-" else sys.stdout)
    if written.errors:
        raise written.errors[0]
    return 0


def is_llm_model(args: argparse.Namespace) -> bool:
    """An LLM build directory or executable (decided from the files, before any dlopen)."""
    return os.path.exists(args.model) and is_llm(args.model)
