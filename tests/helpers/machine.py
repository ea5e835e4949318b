"""Facts of the machine that ground-truth tests compute their expectations from."""
from __future__ import annotations

from pathlib import Path


def fresh_page_faults(nbytes: int) -> int:
    """The fewest minor faults a first write to ``nbytes`` of fresh anonymous memory takes:
    one per 4 KiB page, unless transparent huge pages are on for every mapping ("always"),
    when the kernel may fault in a whole huge page (hpage_pmd_size, 2 MiB on x86-64) at once.
    Under "madvise" (the usual default) a mapping gets huge pages only if it asks; numpy asks
    for its large arrays; the activations measured here are TVM's own allocations (tvm.runtime.empty),
    which do not ask."""
    return nbytes // _fault_granule()


def _fault_granule() -> int:
    thp = Path("/sys/kernel/mm/transparent_hugepage")
    try:
        mode = (thp / "enabled").read_text()
        huge = int((thp / "hpage_pmd_size").read_text())
    except (OSError, ValueError):
        return 4096
    return huge if "[always]" in mode else 4096
