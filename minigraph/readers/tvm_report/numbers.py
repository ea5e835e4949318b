"""Numbers as TVM's ``Report::AsTable`` printed them, in whatever locale the process had.

``print_metric`` in src/runtime/profiling.cc (TVM 0.9-0.23; inline in 0.8) formats
- Duration: ``std::fixed << std::setprecision(2)`` on a stream imbued with ``std::locale("")``:
  exactly two decimals after the locale's decimal point, digits grouped by the locale
  ("29,258.49" en_US, "29.258,49" de_DE, "1,23,456.78" hi_IN, "29 258,49" fr_FR, "29'258.49"
  de_CH, "29258.49" in the C locale, which is what most containers run);
- Count: an integer in the same locale (grouped too: "1,024");
- Percent: ``std::fixed << std::setprecision(2)`` on a plain stream: always "12.34";
- Ratio: ``std::setprecision(2)`` (general format) in the locale: "0.5", "12", "1.2e+02".
libstdc++ keeps one ``char`` as thousands separator: before GCC 13 a multi-byte one (U+202F,
U+00A0) was cut to its first byte, which decodes as U+FFFD here; any one non-digit is accepted.
One report has one locale: the separators and the grouping must agree across its cells.
"""
from __future__ import annotations

import math
import re

_INT = re.compile(r"-?\d+(?:\D\d+)*")
_DURATION = re.compile(r"(-?\d+(?:\D\d+)*)(\D)(\d\d)")
_PERCENT = re.compile(r"-?\d+[.,]\d\d")
_NOT_FINITE = {"inf", "-inf", "nan", "-nan", "+inf"}


class Numerals:
    """Reads a report's numeric cells, learning its locale (separator, decimal point,
    grouping) from the cells it has seen; a cell that contradicts them is a ValueError."""

    def __init__(self) -> None:
        self.group: str | None = None        # thousands separator, once one was seen
        self.decimal: str | None = None      # decimal point of Duration cells
        self.grouping: tuple[int, int] | None = None  # (rightmost group, further groups)

    def describe(self) -> dict:
        """What was learnt, for the imported report's notes."""
        return {"group": self.group, "decimal": self.decimal,
                "grouping": list(self.grouping) if self.grouping else None}

    def _integer(self, text: str) -> int:
        if not _INT.fullmatch(text):
            raise ValueError(f"'{text}' is not an integer")
        seps = set(re.findall(r"\D", text.lstrip("-")))
        if len(seps) > 1:
            raise ValueError(f"'{text}' mixes digit separators {sorted(seps)}")
        if seps:
            self._learn_group(seps.pop(), text)
            self._learn_grouping([len(g) for g in re.split(r"\D", text.lstrip("-"))], text)
        return int(re.sub(r"\D", "", text)) * (-1 if text.startswith("-") else 1)

    def _learn_group(self, sep: str, text: str) -> None:
        if sep == self.decimal:
            raise ValueError(f"'{text}' groups digits with '{sep}', this report's decimal point")
        if self.group is None:
            self.group = sep
        elif sep != self.group:
            raise ValueError(f"'{text}' groups digits with '{sep}' where other cells use "
                             f"'{self.group}'")

    def _learn_grouping(self, sizes: list[int], text: str) -> None:
        """glibc groupings: the rightmost group has a size, every further one another size
        (3,3 in most locales; 3,2 in Indian ones); the leftmost may be shorter."""
        last = sizes[-1]
        further = sizes[1:-1]
        step = further[0] if further else None
        if any(s != step for s in further) or sizes[0] < 1 or \
                sizes[0] > (step or last) or last < 1:
            raise ValueError(f"'{text}' is not grouped like a locale groups digits")
        seen = self.grouping
        if seen is None or (seen[1] == 0 and step is not None and seen[0] == last):
            self.grouping = (last, step or 0)   # 0: no second group seen yet
        elif seen[0] != last or (step is not None and seen[1] not in (0, step)):
            raise ValueError(f"'{text}' groups digits {sizes} unlike the other cells "
                             f"({seen[0]}, then {seen[1] or '?'})")

    def count(self, text: str) -> int:
        return self._integer(text.strip())

    def duration(self, text: str) -> float | None:
        """Microseconds; None for inf/nan (a zero Total makes TVM print them)."""
        text = text.strip()
        if text.lower() in _NOT_FINITE:
            return None
        m = _DURATION.fullmatch(text)
        if not m:
            raise ValueError(f"'{text}' is not a duration (TVM prints two decimals)")
        whole, point, frac = m.groups()
        if self.decimal is None:
            if point == self.group:
                raise ValueError(f"'{text}': '{point}' is this report's digit separator")
            self.decimal = point
        elif point != self.decimal:
            raise ValueError(f"'{text}' has decimal point '{point}' where other cells have "
                             f"'{self.decimal}'")
        value = abs(self._integer(whole)) + int(frac) / 100
        return -value if whole.startswith("-") else value

    @staticmethod
    def percent(text: str) -> float | None:
        text = text.strip()
        if text.lower() in _NOT_FINITE:
            return None
        if not _PERCENT.fullmatch(text):
            raise ValueError(f"'{text}' is not a percentage (TVM prints e.g. 12.34)")
        return float(text.replace(",", "."))

    def ratio(self, text: str) -> float | None:
        """A Ratio cell: general format with two significant digits, in the locale."""
        text = text.strip()
        plain = text.replace(self.group, "") if self.group else text
        if self.decimal and self.decimal != ".":
            plain = plain.replace(self.decimal, ".")
        try:
            value = float(plain)
        except ValueError:
            raise ValueError(f"'{text}' is not a ratio") from None
        return value if math.isfinite(value) else None
