"""The most a model's data files can legitimately hold, decided before they are read.

A params file holds at most the model's arg nodes (one array each: their bytes, plus the
names and headers around them); an --input file at most its arg node's bytes plus a .npy
header. Where no graph is known yet (a Relax VM executable's params give its graph its sizes,
``explain --params``), the bound is the share of memory an unsized read may take
(fileio/bounded.py ``memory_cap``) and the file's own declared sizes are checked against what
it holds. Counterpart: none in TVM (``LoadParams`` allocates whatever the blob declares).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..fileio import UNSIZED_REASON, memory_cap
from .dlpack import entry_nbytes
from .graph import Graph

# bytes around each array in a params file beyond its name: a param blob's 48-byte header
# and 8 bytes a dimension (32 at most), or an .npz member's zip headers (local, central,
# zip64 extras, data descriptor: ~150 bytes) and its .npy header (64-byte aligned, ~128)
ENTRY_OVERHEAD = 4 << 10
FILE_OVERHEAD = 64 << 10  # the blob's or the archive's own headers and directory


@dataclass(frozen=True)
class ParamsBound:
    """The most a params file may hold: bytes of data of one array and of all together, bytes
    of the file, and what set them (each completes 'more than the N ...')."""

    array: int
    data: int
    file: int
    reason: str        # of ``data`` and ``file``
    array_reason: str  # of ``array``


@dataclass(frozen=True)
class InputBound:
    """The most an --input file for one arg node may hold: its bytes, and its type and shape
    for the message (e.g. 'float32[1, 32, 32, 3]')."""

    nbytes: int
    describe: str


def _arg_sizes(graph: Graph) -> dict[str, tuple[int, str]]:
    """Arg node name -> (bytes, 'dtype[shape]') of its entry; an unknown dltype counts as 8
    bytes an element (graph.json's checks name it; the bound only has to be generous)."""
    out = {}
    for nid in graph.arg_nodes:
        eid = graph.eid(nid)
        shape, dltype = tuple(graph.shapes[eid]), graph.dltypes[eid]
        try:
            nbytes = entry_nbytes(shape, dltype)
        except KeyError:
            nbytes = entry_nbytes(shape, "float64")
        out[graph.nodes[nid].name] = (nbytes, f"{dltype}{list(shape)}")
    return out


def params_bound(graph: Graph) -> ParamsBound:
    """What a params file for ``graph`` can hold: one array per arg node, at most its size."""
    sizes = _arg_sizes(graph)
    data = sum(n for n, _ in sizes.values())
    names = sum(3 * len(name.encode()) for name in sizes)  # a name is written up to 3 times
    return ParamsBound(max((n for n, _ in sizes.values()), default=0), data,
                       data + names + len(sizes) * ENTRY_OVERHEAD + FILE_OVERHEAD,
                       f"the model's {len(sizes)} arg nodes hold",
                       f"the largest of the model's {len(sizes)} arg nodes holds")


def unsized_params_bound() -> ParamsBound:
    """Without a graph: the share of memory a read of unknown size may take."""
    cap = memory_cap()
    return ParamsBound(cap, cap, cap, UNSIZED_REASON, UNSIZED_REASON)


def input_bounds(graph: Graph) -> dict[str, InputBound]:
    """Arg node name -> the most an --input file for it can hold."""
    return {name: InputBound(nbytes, text) for name, (nbytes, text) in _arg_sizes(graph).items()}
