"""Project exceptions.

Every error minigraph raises on purpose is a ``MinigraphError``; the CLI turns it into a one-line
``error: ...`` and an exit code (2 for bad input or usage, 1 for a failure while running).
"""
from __future__ import annotations


class MinigraphError(Exception):
    """A failure while running (exit code 1)."""

    exit_code = 1


class InputError(MinigraphError):
    """Bad input or usage: a file, a value or an option that is wrong (exit code 2)."""

    exit_code = 2


class GraphError(InputError):
    """graph.json is malformed; names the node index, node name and field where known."""

    def __init__(self, message: str, *, node_index: int | None = None,
                 node_name: str | None = None, field: str | None = None) -> None:
        self.node_index = node_index
        self.node_name = node_name
        self.field = field
        where = []
        if node_index is not None:
            where.append(f"node {node_index}")
        if node_name is not None:
            where.append(f"'{node_name}'")
        if field is not None:
            where.append(f"field '{field}'")
        prefix = f"graph.json {' '.join(where)}: " if where else "graph.json: "
        super().__init__(prefix + message)


class ParamsError(InputError):
    """A param blob is truncated, foreign, or does not fit the graph."""


class KernelError(MinigraphError):
    """model.so cannot be loaded, lacks a function, or a kernel call failed."""


class BuildError(MinigraphError):
    """The compiler side failed (unknown model, bad ONNX, TVM error)."""


def last_line(err: BaseException) -> str:
    """The informative line of a foreign (TVM, numpy, OS) error message, for one-line errors."""
    lines = [ln.strip() for ln in str(err).strip().splitlines() if ln.strip()]
    return lines[-1] if lines else type(err).__name__


class MissingKernelError(KernelError, InputError):
    """graph.json names a kernel model.so lacks: the two files do not belong together (exit 2)."""

    exit_code = 2
