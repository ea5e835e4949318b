"""The minigraph command line: one table of commands, the only place that prints or exits.

Every command is registered in ``COMMANDS`` below, from modules imported at the top of this
file, so a command whose module fails to import fails loudly instead of vanishing from the
parser. Each ``cmd_*`` returns the exit code; errors become one ``error: ...`` line (exit 2 for
bad input, 1 for a failure while running, 128 + the signal when interrupted: 130 for Ctrl-C,
143 for SIGTERM) unless ``--debug`` is given; everything printed has its control characters
escaped (terminal.py). Run as the program, the commands that load native code run in a
watched child (supervise.py), so a crashing kernel is named too.
"""
from __future__ import annotations

import argparse
import sys
from typing import Callable, NamedTuple, Sequence

from .. import __version__
from ..errors import MinigraphError
from ..fileio.printable import one_line
from ..measure.interrupt import interrupt_exit_code, interrupt_message
from . import build, diagnose, profile, remote, run, saved, vm
from .limits import foreign_error, limit_hint, out_of_memory
from .paths import absolute_paths
from .supervise import STOP_S, supervised
from .terminal import OutputError, discard_stdout, emit, flush_stdout, open_standard_streams

DESCRIPTION = """\
minigraph: run, profile and diagnose TVM models with a readable Python graph executor.

  minigraph build resnet50 -o out                   compile a model (zoo name or .onnx)
  minigraph profile out/model.so out/graph.json     per-op times in every mode
  minigraph diagnose out/model.so out/graph.json    why the first run is slow, per op
  minigraph profile model_vm.so                     a Relax VM executable, no graph.json
  minigraph rpc-server --tracker HOST:9190 --key K  serve this machine as a remote device
  minigraph compare vm_report.txt debug_report.txt  why two TVM profiler tables disagree
"""


class Command(NamedTuple):
    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


COMMANDS: tuple[Command, ...] = (
    Command("build", "compile a model into model.so + graph.json + model.params",
            build.add_arguments, build.cmd_build),
    Command("run", "run once and print each output's shape and checksum",
            run.add_run_arguments, run.cmd_run),
    Command("explain", "teaching view of graph.json (or of a Relax VM executable's derived "
            "graph): nodes, storage plan, inputs and outputs",
            run.add_explain_arguments, run.cmd_explain),
    Command("import", "derive graph.json + model.params from a Relax VM executable (checked "
            "against a traced VM run)", vm.add_import_arguments, vm.cmd_import),
    Command("env", "CPU, OS, TVM and thread-pool environment",
            run.add_env_arguments, run.cmd_env),
    Command("profile", "per-op timing in first-run, one-pass, warm, in-run, cold and e2e "
            "modes, with environment capture", profile.add_profile_arguments,
            profile.cmd_profile),
    Command("show", "render a saved profile (.json or --raw msgpack), a diagnosis or a TVM "
            "profiler report (table, CSV, JSON, benchmark)",
            saved.add_show_arguments, saved.cmd_show),
    Command("compare", "which per-op differences between two saved profiles are real, judged "
            "against the run-to-run noise in them; TVM profiler reports kernel by kernel (hash "
            "+ shapes), with a verdict", saved.add_compare_arguments, saved.cmd_compare),
    Command("diagnose", "root-cause first-op inflation per op (fresh processes x warm-up "
            "ladder) and put TVM's protocols side by side", diagnose.add_arguments,
            diagnose.cmd_diagnose),
    Command("rpc-server", "serve this machine as a device behind TVM's RPC tracker (run, "
            "profile and diagnose with --rpc-tracker/--rpc-key)", remote.add_server_arguments,
            remote.cmd_rpc_server),
)


class _Parser(argparse.ArgumentParser):
    """Usage errors in the project's one-line form, ``error: ...``, still exit code 2."""

    def error(self, message: str):  # type: ignore[override]
        self.exit(2, f"error: {self.prog}: {message} (see `{self.prog} --help`)\n")


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog="minigraph", description=DESCRIPTION,
                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--debug", action="store_true", help="show tracebacks")
    p.add_argument("--version", action="version", version=f"minigraph {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for c in COMMANDS:
        cp = sub.add_parser(c.name, help=c.help, description=c.help)
        c.add_arguments(cp)
        cp.set_defaults(func=c.run)
    return p


# the commands that load or build native code run in a watched child (supervise.py): a kernel
# that kills the process still ends in one error line naming the op, the kernel and the signal
SUPERVISED = frozenset({"build", "run", "explain", "import", "profile", "diagnose"})
# ... and those that run kernels end within a second of Ctrl-C or SIGTERM, even in native code
# (a build's compiler returns to Python often, and is left to clean up after itself)
MEASURING = frozenset({"run", "profile", "diagnose"})


def main(argv: Sequence[str] | None = None) -> int:
    """The command line; called without ``argv`` (as the program), a command that runs native
    code runs in a supervised child (supervise.py), else right here."""
    program = argv is None
    open_standard_streams()  # `minigraph run out >&-`: stdout is /dev/null, not missing
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser().parse_args(argv)
    args.command_line = ["minigraph", *argv]  # recorded in saved files' provenance
    absolute_paths(args)
    if program and args.command in SUPERVISED:
        return supervised(lambda: _run(args), args.command,
                          STOP_S if args.command in MEASURING else None)
    return _run(args)


def _run(args: argparse.Namespace) -> int:
    """Runs the command; every error becomes one ``error:`` line and an exit code (one line:
    a newline in a name the message quotes is shown, not obeyed)."""
    try:
        code = args.func(args)
        flush_stdout()  # a full disk is this command's error, not Python's at exit
        return code
    except MinigraphError as err:
        if args.debug:
            raise
        if isinstance(err, OutputError):
            discard_stdout()
        emit(f"error: {one_line(err)}{limit_hint(err)}", file=sys.stderr)
        return err.exit_code
    except KeyboardInterrupt:
        emit(f"error: {interrupt_message()}", file=sys.stderr)
        return interrupt_exit_code()
    except BrokenPipeError:  # e.g. `minigraph explain g.json | head`: not an error of ours
        discard_stdout()
        return 1
    except MemoryError:
        if args.debug:
            raise
        emit(f"error: {out_of_memory()}", file=sys.stderr)
        return 1
    except Exception as err:  # noqa: BLE001 - the CLI never shows a traceback without --debug
        if args.debug:
            raise
        emit(f"error: {foreign_error(err)}", file=sys.stderr)
        return 1
