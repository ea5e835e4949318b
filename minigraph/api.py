"""The Python API for notebooks and scripts: run, benchmark and profile without the CLI.

    from minigraph.api import Executor, render
    ex = Executor.from_files("out/model.so", "out/graph.json")
    print(ex.benchmark(tvm.cpu(), number=10, repeat=3))     # TVM's BenchmarkResult
    prof = ex.profile(modes=("first-run", "warm", "e2e"))   # a Profile, raw samples kept
    print(render(prof))                                     # the `minigraph profile` table

Why a module of its own: the executor (runtime/) sits below the profiler (profile/) and must
not import it, not even lazily (tests/package/test_layout.py), because profiling is built on the
executor. So ``Executor`` here is the debug executor (runtime/debug.py, TVM's
``GraphModuleDebug``) plus one method, ``profile``, that calls
``minigraph.profile.profiler.profile``; this module sits above both (and above report/, for
``render`` and the exports). ``open_executor`` makes this Executor through any front door
(a Relay-era library, a Relax VM executable); any other executor is profiled with the
function: ``profile(ex, ...)``. In a notebook, a Profile, Diagnosis,
fleet or saved comparison shows itself as the same page ``--html`` writes (``_repr_html_``).
"""
from __future__ import annotations

from typing import Any, Sequence

from .profile.profiler import profile
from .readers.documents import load_profile
from .report import html  # noqa: F401  (registers the notebook renderers: results/display.py)
from .report.exports import to_csv, to_trace
from .report.table import render
from .results.files import to_json
from .results.profile import Profile
from .runtime import doors
from .runtime.debug import DebugExecutor
from .runtime.doors import locate

__all__ = ["Executor", "Profile", "profile", "render", "to_json", "to_csv", "to_trace",
           "load_profile", "open_executor", "locate"]


class Executor(DebugExecutor):
    """``tvm.contrib.graph_executor.GraphModule``'s API (``set_input``, ``run``,
    ``get_output``, ``benchmark``, ...) plus ``profile``, the old debug executor's."""

    def profile(self, modes: Sequence[str] | None = None, *, threads: int | None = None,
                **settings: Any) -> Profile:
        """Every requested mode (default: all) on this executor, inputs as set; see
        ``minigraph.profile.profiler.profile`` for the settings."""
        return profile(self, modes, threads=threads, **settings)


def open_executor(files: doors.ModelFiles, *, force: bool = False) -> Executor:
    """The executor for any door (``runtime/doors.py open_executor``), made as this module's
    Executor, with ``profile``."""
    return doors.open_executor(files, force=force, executor_class=Executor)

