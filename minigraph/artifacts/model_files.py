"""What the user typed -> a model's files: a build directory (minigraph's names or TVM's
tutorials' deploy_* names), ``model.so graph.json``, or one library. No file is opened here;
runtime/doors.py decides which front door the files take."""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError
from ..fileio import user_path

# names a build directory may use, in the order they are tried (minigraph's, then TVM's
# tutorials' deploy_* names)
LIB_NAMES = ("model.so", "deploy_lib.so", "deploy.so", "lib.so")
GRAPH_NAMES = ("graph.json", "deploy_graph.json", "deploy.json")
PARAMS_NAMES = ("model.params", "deploy_param.params", "deploy.params", "params.params")


@dataclass(frozen=True)
class ModelFiles:
    """The files of one model, as located (params None: none given and none found)."""

    lib: Path
    graph: Path | None
    params: Path | None

    def describe(self) -> str:
        return ", ".join(str(p) for p in (self.lib, self.graph, self.params) if p is not None)


def _first(directory: Path, names: tuple[str, ...]) -> Path | None:
    return next((directory / n for n in names if (directory / n).is_file()), None)


def _looks_like_graph(p: Path) -> bool:
    return p.suffix == ".json"


def locate(model: str | os.PathLike, graph: str | os.PathLike | None = None,
           params: str | os.PathLike | None = None) -> ModelFiles:
    """What the user typed -> files. ``model`` is a library or a build directory; ``graph``
    may be omitted for a directory (found inside) or a Relax VM executable (none needed). Every
    path comes back absolute (fileio.user_path): the API's and the CLI's boundary."""
    m = user_path(model)
    g = user_path(graph) if graph is not None else None
    if g is not None and _looks_like_graph(m) and not _looks_like_graph(g):
        raise InputError(f"the arguments look swapped: '{m}' is a graph.json and '{g}' is not; "
                         "pass the library first: MODEL.so GRAPH.json")
    if m.is_dir():
        lib = _first(m, LIB_NAMES)
        if lib is None:
            raise InputError(f"{m}: no model library in this directory (looked for "
                             f"{', '.join(LIB_NAMES)})")
        g = g if g is not None else _first(m, GRAPH_NAMES)
        p = user_path(params) if params is not None else _first(m, PARAMS_NAMES)
        return ModelFiles(lib, g, p)
    p = user_path(params) if params is not None else None
    if p is None:  # the params saved beside graph.json (or beside a lone VM executable)
        p = _first((g if g is not None else m).parent, PARAMS_NAMES)
    return ModelFiles(m, g, p)
