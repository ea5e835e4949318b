"""A table copied from a terminal that hard-wrapped its long lines, put back together.

``AsTable`` pads every cell, so every line of a table has the same length N. A terminal copy
that breaks lines at W columns turns each into k = ceil(N / W) lines: k - 1 of exactly W bytes
and one of N - (k - 1) W (a piece may be all spaces: empty cells). Only that exact pattern is
rejoined, and only after the table failed to parse as it stands (table.py notes it).
"""
from __future__ import annotations


def rejoin(lines: list[bytes], start: int) -> tuple[list[bytes], int] | None:
    """(lines with the table from ``start`` rejoined, the wrap width), or None when the lines
    from ``start`` are not a fixed-width wrap of equally long lines."""
    width = len(lines[start])
    k = next((i + 1 for i, line in enumerate(lines[start:]) if len(line) != width), 0)
    if k < 2 or not 0 < len(lines[start + k - 1]) < width:
        return None
    tail = len(lines[start + k - 1])
    joined, at = [], start
    while at + k <= len(lines):
        group = lines[at:at + k]
        if any(len(x) != width for x in group[:-1]) or len(group[-1]) != tail:
            break
        joined.append(b"".join(group))
        at += k
    if len(joined) < 2:
        return None
    return lines[:start] + joined + lines[at:], width
