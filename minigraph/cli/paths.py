"""What a command reads and what it writes, checked against each other before anything runs.

An output that names one of the command's own inputs (``profile out --json out/model.so``,
``compare a.json b.json --json a.json``) would destroy it, and two outputs on one path
(``--json x --csv x``) would lose the first: both are refused, with exit 2, before anything is
measured. "The same file" is decided through symlinks and ``..``, and by device and inode once
it exists (fileio.same_file); devices such as /dev/null keep nothing, so outputs may share one.
Every output is also checked for being writable (fileio.check_output; a FIFO with no reader is
refused rather than waited on). ``run --out DIR`` replaces output_<i>.npy files already in
DIR only with --force: they are an earlier run's, or the user's. When an output is stdout
(``--json -``, ``--json /dev/stdout``), the human report goes to stderr (``report_file``), so
stdout holds that document alone (``| jq`` reads it).
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import TextIO

from ..artifacts.model_files import locate
from ..errors import InputError, MinigraphError
from ..fileio import (
    STDOUT,
    Written,
    check_output,
    is_device,
    is_stdout,
    same_file,
    user_path,
)
from .terminal import emit

# every output option of every command, by argparse dest: checked before anything is measured
OUTPUT_DESTS = ("json_out", "csv", "trace", "raw", "html")
# the positional and option dests that name files a command reads
_FILE_DESTS = {"file": "the file shown", "a": "profile A", "b": "profile B"}
# what minigraph reads beside a model's library or graph.json
_BESIDE = ("build.json", "model.vm.so", "import.json")
_OUTPUT_NPY = re.compile(r"output_\d+\.npy")  # what `run --out DIR` writes (values/inputs.py)


# every dest that names a file or directory the user typed (outputs included)
_PATH_DESTS = ("model", "graph", "params", "lib", "out", *_FILE_DESTS, *OUTPUT_DESTS)


def _absolute(text: str) -> str:
    return text if text == STDOUT else str(user_path(text))


def absolute_paths(args: argparse.Namespace) -> None:
    """Every path on the command line made absolute, once, right after parsing: the command
    then reads, writes and dlopens the same files from any working directory. ``build``'s
    model may be a zoo name: only an existing file (or a name ending in .onnx) is a path."""
    for dest in _PATH_DESTS:
        value = getattr(args, dest, None)
        if not isinstance(value, str):
            continue
        if dest == "model" and args.command == "build" and not _is_file_name(value):
            continue
        setattr(args, dest, _absolute(value))
    if getattr(args, "input", None):
        args.input = [f"{name}={_absolute(path)}" if sep else item
                      for item in args.input for name, sep, path in [item.partition("=")]]


def _is_file_name(text: str) -> bool:
    return text.endswith(".onnx") or user_path(text).exists()


def _model_inputs(args: argparse.Namespace) -> list[tuple[str, Path]]:
    """The model's files as the command will locate them, and the files read beside them."""
    try:
        files = locate(args.model, getattr(args, "graph", None), getattr(args, "params", None))
    except InputError:
        return []  # the command itself says what is wrong with them, after this check
    found = [("the model library", files.lib)]
    found += [("graph.json", files.graph)] if files.graph is not None else []
    found += [("the params file", files.params)] if files.params is not None else []
    dirs = {files.lib.parent} | ({files.graph.parent} if files.graph is not None else set())
    found += [(name, d / name) for d in dirs for name in _BESIDE if (d / name).exists()]
    return found


def inputs_of(args: argparse.Namespace) -> list[tuple[str, Path]]:
    """(what, path) of every file the command reads."""
    found = _model_inputs(args) if getattr(args, "model", None) else []
    found += [(what, Path(getattr(args, d))) for d, what in _FILE_DESTS.items()
              if getattr(args, d, None)]
    for item in getattr(args, "input", None) or []:
        name, _, path = item.partition("=")
        if path:
            found.append((f"--input {name}", Path(path)))
    return found


def outputs_of(args: argparse.Namespace) -> list[tuple[str, str]]:
    """(option, path) of every output file asked for."""
    return [("--" + d.removesuffix("_out"), str(getattr(args, d)))
            for d in OUTPUT_DESTS if getattr(args, d, None)]


def report_file(args: argparse.Namespace) -> TextIO:
    """Where the command's human report goes: stderr when one of its outputs is stdout (a
    document piped on: the report after it would spoil it), else stdout."""
    return sys.stderr if any(is_stdout(path) for _, path in outputs_of(args)) else sys.stdout


def _collision(out: tuple[str, str], inputs: list[tuple[str, Path]],
               earlier: list[tuple[str, str]]) -> str | None:
    option, path = out
    for what, src in inputs:
        if path != STDOUT and same_file(path, src):
            return f"{option} {path}: is {what} this command reads ({src}); writing it would " \
                   "destroy it: name another file"
    for other, prev in earlier:
        if same_file(path, prev) and not is_device(path):
            where = "stdout" if is_stdout(path) else f"the same file ({prev})"
            return f"{option} {path} and {other} {prev} both write to {where}: the first " \
                   "would be lost; name two files"
    return None


def check_outputs(args: argparse.Namespace) -> None:
    """InputError for the first output that could not be written, or that would replace an
    input or another output of the same command, before any work."""
    inputs, earlier = inputs_of(args), []
    for out in outputs_of(args):
        problem = _collision(out, inputs, earlier)
        if problem:
            raise InputError(problem)
        check_output(out[1], out[0])
        earlier.append(out)
    check_out_dir(args, inputs)


def check_out_dir(args: argparse.Namespace, inputs: list[tuple[str, Path]] | None = None
                  ) -> None:
    """``run --out DIR`` writes output_<i>.npy there: none of them may be an input, and
    output_<i>.npy files already there are replaced only with --force."""
    out = getattr(args, "out", None)
    if not out or getattr(args, "command", None) != "run":
        return
    for what, src in inputs if inputs is not None else inputs_of(args):
        if _OUTPUT_NPY.fullmatch(src.name) and same_file(src.parent, out):
            raise InputError(f"--out {out}: would replace {what} ({src}) with an output; "
                             "name another directory")
    if not getattr(args, "force", False):
        _refuse_earlier_outputs(Path(out))


def _refuse_earlier_outputs(out: Path) -> None:
    """InputError naming the output_<i>.npy files already in ``out``: an earlier run's, or
    the user's own; either way not this run's to replace unasked (nor to leave beside its
    own outputs as if they were one set)."""
    try:
        found = [p.name for p in out.iterdir() if _OUTPUT_NPY.fullmatch(p.name)] \
            if out.is_dir() else []
    except OSError:
        return  # unreadable: the write itself says why
    if found:
        found.sort(key=lambda name: int(name[len("output_"):-len(".npy")]))
        more = f" and {len(found) - 3} more" if len(found) > 3 else ""
        raise InputError(f"--out {out}: already holds {', '.join(found[:3])}{more} (an "
                         "earlier run's outputs?); --force replaces them, or name another "
                         "--out directory")


def add_overwrite_partial_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--overwrite-partial", action="store_true",
                   help="an interrupted run writes its partial result over existing output "
                        "files (default: beside them, as NAME.partial.EXT, keeping them)")


def said_where(written: Written, what: str) -> list[MinigraphError]:
    """Says where each partial result went instead of over the file it would have replaced;
    returns the errors of the outputs that could not be written."""
    for kept, went in written.beside:
        emit(f"note: the {what} is partial (interrupted): saved as {went}; {kept}, already "
             "there, was kept (--overwrite-partial replaces it)", file=sys.stderr)
    return written.errors
