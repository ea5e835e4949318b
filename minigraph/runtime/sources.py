"""Where each arg node's value came from: what the executor was given, and what it was not.

TVM's GraphExecutor never knew: ``debug_executor.create(graph_json, lib, dev)`` without
``load_params`` ran on whatever its allocator left in the weights (freed heap memory: small
integers and pointer halves, which read as float32 are subnormal numbers), and nothing said
so. Here every arg node starts ``unset`` and each way of setting it says what it was.
"""
from __future__ import annotations

from dataclasses import dataclass

KINDS = ("input", "params", "constant", "generated", "filled", "unset")


@dataclass(frozen=True)
class Source:
    """``kind``: input (given by the caller), params (a params file or dict), constant
    (embedded in a Relax VM executable), generated (seeded data for an input nobody gave),
    filled (``--fill``: a weight nobody gave), unset (storage as the allocator left it)."""

    kind: str
    detail: str = ""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown value source {self.kind!r}")

    def describe(self) -> str:
        return self.kind + (f" ({self.detail})" if self.detail else "")

    def to_dict(self) -> dict:
        return {"kind": self.kind, "detail": self.detail}


UNSET = Source("unset", "storage as the allocator left it")
GIVEN = Source("input")
