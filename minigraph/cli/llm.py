"""``minigraph build`` and ``minigraph run`` for LLMs: the shell around minigraph/llm/.

``build`` takes a built-in config (llama-tiny, llama-100m) or a Hugging Face folder and writes
model.vm.so + params.npz + build.json (+ tokenizer.json); ``run`` opens such a build, or a
Relax VM executable built with plain TVM as in TVM's ``optimize_llm`` tutorial (its weights
from ``--params``, an .npz in ``export_tvm``'s order), prefills a prompt and decodes greedily.
Counterpart: ``mlc_llm compile`` and the tutorial's ``TVMEngine`` driving ``relax.VirtualMachine``.
"""
from __future__ import annotations

import argparse
import io
import sys
from pathlib import Path

import numpy as np

from ..artifacts.buildinfo import built_for_cpu
from ..errors import InputError
from ..fileio import write_atomic
from ..llm.engine import Engine, load_tokenizer
from ..llm.files import ARTIFACTS
from ..llm.opened import OpenedLLM, open_llm
from ..results.llm import LIMITS
from .args import bounded, within
from .terminal import emit

DEFAULT_GENERATE = 16
OUTPUTS = ("prefill_logits.npy", "tokens.npy")  # what `run --out DIR` writes for an LLM
LLM_RUN_DESTS = ("tokens", "prompt", "tokenizer", "generate")
# build options of zoo/ONNX models that an LLM build has no use for: dest -> (option, default)
_BUILD_ONLY = {"batch": ("--batch", 1), "schedule": ("--schedule", "default"),
               "tune": ("--tune", False), "no_winograd": ("--no-winograd", False),
               "no_vm": ("--no-vm", False)}
# run options of graph models that an LLM run has no use for: dest -> option
_RUN_ONLY = {"graph": "GRAPH", "input": "--input", "fill": "--fill", "shape": "--shape",
             "json_out": "--json", "rpc_tracker": "--rpc-tracker", "rpc_key": "--rpc-key"}


def add_llm_run_arguments(r: argparse.ArgumentParser) -> None:
    """run's options for an LLM (a build directory of one, or a tutorial-style executable)."""
    g = r.add_argument_group("LLMs (a build of llama-tiny, llama-100m or a Hugging Face "
                             "folder; an executable with embed/prefill/decode + --params)")
    prompt = g.add_mutually_exclusive_group()
    prompt.add_argument("--tokens", metavar="IDS", default=None,
                        help="the prompt as token ids, comma-separated: --tokens 1,2,3")
    prompt.add_argument("--prompt", metavar="TEXT", default=None,
                        help="the prompt as text, tokenized by the build's tokenizer.json "
                             "(or --tokenizer); the generated text is printed too")
    g.add_argument("--tokenizer", metavar="FILE", default=None,
                   help="a Hugging Face tokenizer.json for --prompt and the generated text")
    g.add_argument("--generate", type=bounded(LIMITS["generate"], "tokens to generate,"),
                   default=None, metavar="N",
                   help=f"tokens to generate greedily (default {DEFAULT_GENERATE}; "
                        f"{within(LIMITS['generate'])} and what the KV cache's context leaves); "
                        "with --out "
                        f"DIR, {' and '.join(OUTPUTS)} are saved there")


def refuse_llm_options(args: argparse.Namespace) -> None:
    """InputError when an LLM option is given for a model that is not an LLM."""
    given = [d for d in LLM_RUN_DESTS if getattr(args, d, None) is not None]
    if given:
        raise InputError(f"--{given[0]} is for LLMs; {args.model} is not one (a build of an "
                         "LLM, or a Relax VM executable with embed, prefill and decode)")


def _refuse_for_llm(args: argparse.Namespace, options: dict, what: str) -> None:
    """InputError naming the first option given that an LLM build or run has no use for."""
    for dest, option in options.items():
        option, default = option if isinstance(option, tuple) else (option, None)
        if getattr(args, dest, default) not in (default, None, [], False):
            raise InputError(f"{option} is not for an LLM {what}")


def cmd_llm_build(args: argparse.Namespace) -> int:
    """``minigraph build MODEL -o OUT`` for a built-in LLM config or a Hugging Face folder."""
    # lazy on purpose: llm/build.py imports TVM's Relax (seconds); only an LLM build needs it
    from ..llm.build import build_llm
    _refuse_for_llm(args, _BUILD_ONLY, "build")
    try:
        res = build_llm(args.model, args.out, target=args.target)
    except KeyboardInterrupt:
        emit(f"error: interrupted; {args.out} was left as it was", file=sys.stderr)
        return 130
    b, c = res.build_json, res.config
    mcpu = built_for_cpu({"target": b["target"]})
    where = f"LLVM, CPU {mcpu}" if mcpu else b["target"]
    emit(f"built {c.name} ({c.architecture}, {_count(c.n_params())} params, "
         f"{c.num_hidden_layers} layers) for {where} in {b['build_time_s']:.1f} s: "
         f"{len(b['kernels'])} kernels, {_linear_kernels(b['kernels'])}")
    names = [n for n in ARTIFACTS if (Path(args.out) / n).is_file()]
    emit(f"wrote {', '.join(names)} to {args.out}")
    return 0


def _count(n: int) -> str:
    return f"{n / 1e9:.2f}B" if n >= 1e9 else f"{n / 1e6:.2f}M"


def _linear_kernels(kernels: dict) -> str:
    """'M linear kernels scheduled (GEMM for prefill, GEMV for decode)' from build.json."""
    shapes = [str(k.get("schedule", "")).split(" ")[0] for k in kernels.values()]
    kinds = [f"{s} for {phase}" for s, phase in (("GEMM", "prefill"), ("GEMV", "decode"))
             if s in shapes]
    n = sum(s in ("GEMM", "GEMV") for s in shapes)
    return f"{n} linear kernels scheduled" + (f" ({', '.join(kinds)})" if kinds else "")


def parse_tokens(text: str) -> list[int]:
    """--tokens 1,2,3 -> [1, 2, 3]; anything else is an InputError naming the bad item."""
    items = [t.strip() for t in text.split(",")]
    ids = []
    for item in items:
        if not (item.isascii() and item.lstrip("+-").isdigit()) or len(item) > 20:
            raise InputError(f"--tokens {text!r}: {item!r} is not a token id (expected "
                             "comma-separated integers, e.g. --tokens 1,2,3)")
        ids.append(int(item))
    return ids


def _tokenizer(args: argparse.Namespace, opened: OpenedLLM):
    """The tokenizer for --prompt (and the generated text): --tokenizer, else the build's."""
    path = Path(args.tokenizer) if args.tokenizer else opened.tokenizer
    if path is None:
        raise InputError(f"--prompt: {args.model} has no tokenizer.json; give one with "
                         "--tokenizer FILE, or the prompt's ids with --tokens")
    if not path.is_file():
        raise InputError(f"--tokenizer {path}: no such file (or not a regular file)")
    return load_tokenizer(path)


def _check_context(prompt: int, n: int, context: int) -> None:
    """The prompt and every generated token but the last go through the KV cache."""
    if prompt + n - 1 > context:
        raise InputError(f"--generate {n}: the prompt's {prompt} token(s) and {n} generated "
                         f"exceed the KV cache's context of {context} tokens")


def _check_out(args: argparse.Namespace) -> None:
    """--out DIR: a directory (or none yet) without this run's files, unless --force."""
    if not args.out:
        return
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise InputError(f"--out {out}: not a directory")
    found = [n for n in OUTPUTS if (out / n).exists()]
    if found and not args.force:
        raise InputError(f"--out {out}: already holds {', '.join(found)} (an earlier run's "
                         "outputs?); --force replaces them, or name another --out directory")


def _save(out: Path, logits: np.ndarray, tokens: list[int]) -> None:
    """prefill_logits.npy (float32 [vocab]) and tokens.npy (int64), each written atomically."""
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise InputError(f"--out {out}: cannot write outputs there: {err.strerror}") from None
    for name, arr in zip(OUTPUTS, (np.asarray(logits, np.float32),
                                   np.asarray(tokens, np.int64))):
        buf = io.BytesIO()
        np.save(buf, arr)
        write_atomic(out / name, buf.getvalue())


def _print_text(tok, tokens: list[int]) -> None:
    """``text: ...``, the generated ids decoded; ids the tokenizer lacks are said, on stderr
    (its decode drops them without a word: a model's vocabulary may be larger)."""
    emit(f"text: {tok.decode(tokens)}")
    unknown = sorted({t for t in tokens if tok.id_to_token(t) is None})
    if unknown:
        emit(f"note: {len(unknown)} generated id(s) are not in the tokenizer's vocabulary of "
             f"{tok.get_vocab_size()} (e.g. {unknown[0]}): the text leaves them out",
             file=sys.stderr)


def cmd_llm_run(args: argparse.Namespace) -> int:
    """``minigraph run MODEL --tokens ...|--prompt ...``: prefill, then greedy decode steps."""
    _refuse_for_llm(args, _RUN_ONLY, "run")
    if args.tokens is None and args.prompt is None:
        raise InputError("an LLM needs a prompt: --tokens 1,2,3 (token ids) or --prompt TEXT")
    ids = parse_tokens(args.tokens) if args.tokens is not None else None
    n = args.generate or DEFAULT_GENERATE
    _check_out(args)
    opened = open_llm(args.model, args.params)
    tok = _tokenizer(args, opened) if args.prompt is not None or args.tokenizer else None
    if ids is None:
        ids = tok.encode(args.prompt).ids
    opened.check_tokens(ids)
    _check_context(len(ids), n, opened.context)
    logits, tokens = Engine(opened).generate(ids, n)
    emit(f"{opened.name}: prompt of {len(ids)} token(s), {len(tokens)} generated (greedy)")
    emit("generated: " + " ".join(map(str, tokens)))
    if tok is not None:
        _print_text(tok, tokens)
    if args.out:
        _save(Path(args.out), logits, tokens)
        emit(f"wrote {', '.join(OUTPUTS)} to {args.out}")
    return 0
