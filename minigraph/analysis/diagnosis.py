"""A diagnosis read for its report: the attribution of its raw records, TVM's protocols
measured beside the ladder, and whether thread placement could be judged.

The attribution is recomputed from the records every time (diagnose/attribution.py, a fixed
bootstrap seed: ``show`` of a saved file gives the report its run printed), never read from a
stored one. Placement is diagnose/placement.py's rule: on a machine where others took CPU
during the ladder, a main thread's wait on a pinned worker's CPU may have been the neighbour's,
so nothing was set apart, and the report says it was not judged. Counterpart: none in TVM.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..diagnose import placement
from ..diagnose.attribution import attribution_of
from ..results.attribution import Attribution
from ..results.diagnosis import Diagnosis
from ..results.protocols import ProtocolResult


@dataclass(frozen=True)
class DiagnosisReading:
    """What a report shows of a diagnosis beyond its raw records."""

    att: Attribution | None                  # None: fewer than two rungs measured
    protocols: tuple[ProtocolResult, ...]    # TVM's own protocols, when they were measured


def read(diag: Diagnosis) -> DiagnosisReading:
    """The reading of a saved (or just measured) diagnosis."""
    return DiagnosisReading(attribution_of(diag),
                            tuple(ProtocolResult.from_dict(r) for r in diag.protocols))


def placement_judged(diag: Diagnosis) -> bool:
    """False when pool workers were pinned but others took CPU during the ladder, so no sample
    was set apart as queued behind its own worker (diagnose/placement.py ``judged``)."""
    return not diag.pinned or placement.judged(diag) is not None
