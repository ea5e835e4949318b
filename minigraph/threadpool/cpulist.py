"""The kernel's CPU-list syntax ("0-3,6"), parsed within the CPUs this machine has.

``--cpus 0-10000000000`` once built a set of ten billion ints (tens of GB) before anything
looked at it. Here every id is checked against the machine's CPU ids (``cpu_ids``: the
kernel's possible CPUs, /sys/devices/system/cpu/possible) before a range is expanded, so a
list is never larger than the machine, and an id the machine does not have is an InputError
naming it. Counterpart: the kernel's ``cpulist_parse`` (lib/bitmap.c), which refuses ids at or
beyond ``nr_cpu_ids`` the same way.
"""
from __future__ import annotations

import functools
import os
import re

from ..errors import InputError

_CPU_ITEM = re.compile(r"^\s*(\d+)\s*(?:-\s*(\d+)\s*)?$")
_POSSIBLE = "/sys/devices/system/cpu/possible"


@functools.lru_cache(maxsize=1)
def cpu_ids() -> int:
    """How many CPU ids this machine has (ids 0 .. n-1): the kernel's possible CPUs, online
    or not (offline ones are refused later, when pinning); the configured count where sysfs
    is absent. Read once: the possible set is fixed at boot, and every CPU list parsed (each
    thread's affinity, each cache's sharers) is checked against it."""
    try:
        with open(_POSSIBLE, encoding="ascii") as f:
            text = f.read(4096).strip()  # a few bytes: "0-63"
        last = max(int(part.rpartition("-")[2]) for part in text.split(","))
        return last + 1
    except (OSError, ValueError):
        pass
    try:
        return max(1, os.sysconf("SC_NPROCESSORS_CONF"))
    except (ValueError, OSError):
        return os.cpu_count() or 1


def _short(text: str) -> str:
    """``text`` for a message: at most 60 characters of it."""
    return text if len(text) <= 60 else f"{text[:40]}...({len(text)} characters)"


def _id(digits: str, text: str, limit: int) -> int:
    """One CPU id, checked against ``limit`` before it is made an int (a number of 5,000
    digits is not one Python converts)."""
    if len(digits.lstrip("0")) > len(str(limit)) or int(digits) >= limit:
        raise InputError(f"bad CPU list {_short(text)!r}: CPU {_short(digits)} is not one this "
                         f"machine has (it has CPUs 0-{limit - 1})")
    return int(digits)


def parse_cpu_list(text: str, limit: int | None = None) -> tuple[int, ...]:
    """Kernel cpu-list syntax ("0-3,6") -> sorted unique ids; InputError on junk or on an id
    of ``limit`` or more (None: this machine's ``cpu_ids()``)."""
    if not isinstance(text, str) or not text.strip():
        raise InputError(f"empty CPU list: {text!r}")  # None, too
    limit = cpu_ids() if limit is None else limit
    cpus: set[int] = set()
    for item in text.split(","):
        m = _CPU_ITEM.match(item)
        if not m:
            raise InputError(f"bad CPU list {_short(text)!r}: {_short(item)!r} is not N or N-M")
        lo, hi = _id(m.group(1), text, limit), _id(m.group(2) or m.group(1), text, limit)
        if hi < lo:
            raise InputError(f"bad CPU list {_short(text)!r}: range {item!r} is reversed")
        cpus.update(range(lo, hi + 1))  # at most ``limit`` ids, all checked
    return tuple(sorted(cpus))
