"""Colours, derived from the registries so each mode, cause and protocol keeps one colour in
every chart of every report (a new mode or rung gets the next colour, nothing else to edit).

Modes use the Okabe-Ito palette (distinguishable with the common colour-vision deficiencies).
"""
from __future__ import annotations

from ...results.modes import MODES
from ...results.protocols import KEYS as PROTOCOL_KEYS
from ...results.rungs import COMPONENTS

MODE_COLOURS = ("#D55E00", "#E69F00", "#0072B2", "#009E73", "#56B4E9", "#CC79A7",
                "#000000", "#F0E442")
CAUSE_COLOURS = ("#4e79a7", "#a0cbe8", "#f28e2b", "#59a14f", "#b07aa1", "#edc948", "#76b7b2",
                 "#ff9da7", "#9c755f")
PROTOCOL_COLOURS = ("#1b9e77", "#d95f02", "#7570b3", "#444444", "#e7298a", "#66a61e",
                    "#e6ab02", "#a6761d")
KIND_COLOURS = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1",
                "#ff9da7", "#9c755f", "#bab0ac")
UNRESOLVED = "url(#hatch-unresolved)"   # SVG fills (patterns defined once per page)
EXCESS = "url(#hatch-excess)"
SWATCH = {UNRESOLVED: "repeating-linear-gradient(45deg,#9a9a9a 0 2px,#f2f2f2 2px 5px)",
          EXCESS: "repeating-linear-gradient(45deg,#c0392b 0 2px,#fde0d2 2px 5px)"}


def _cycle(names, colours) -> dict[str, str]:
    return {n: colours[i % len(colours)] for i, n in enumerate(names)}


MODE: dict[str, str] = _cycle([m.name for m in MODES], MODE_COLOURS)
CAUSE: dict[str, str] = _cycle(list(COMPONENTS), CAUSE_COLOURS)
PROTOCOL: dict[str, str] = _cycle(PROTOCOL_KEYS, PROTOCOL_COLOURS)


def cause(key: str) -> str:
    """A component's colour; a joint step over skipped rungs ('a+b') takes its first part's."""
    return CAUSE.get(key, CAUSE.get(key.split("+")[0], CAUSE_COLOURS[-1]))


def protocol(key: str) -> str:
    return PROTOCOL.get(key, PROTOCOL_COLOURS[-1])


def kinds(names: list[str]) -> dict[str, str]:
    """Op kinds in a fixed (sorted) order, so a kind keeps its colour across a report."""
    return _cycle(sorted(set(names)), KIND_COLOURS)

