"""What a weight byte costs on the machine the build is for, in multiply-adds: the input the
conv-algorithm choice (conv_algorithms.py) needs from the CPU.

Winograd trades multiply-adds for weight bytes (F(4x4, 3x3) reads 36/9 = 4x the weight), and
a weight byte in a run comes from DRAM. While DRAM delivers one byte, the vector unit could
have done ``peak MAC/s / read bytes/s`` multiply-adds: that ratio is the exchange rate. It is
this CPU's, not a constant: an Intel core with two 512-bit FMA pipes does twice a Zen 4
core's multiply-adds per cycle from about the same memory, so on it the transformed weight is
twice as dear and fewer convs are worth Winograd's.

Both rates are measured on the host and cached (measure/peak.py per CPU model,
measure/bandwidth.py as the best seen per thread count), at the thread count the executor
will use. A build for another CPU (``--target`` naming a CPU other than the host's) cannot
measure it, and uses ``REFERENCE``: the rate the cost model was first fitted with (ResNet-18's
in-model 3x3 convs on a Zen 5 guest, 2 threads), scaled by the target's vector width; the
Zen 4 guest this module was written on measures within 2% of it (3.68 MAC per byte, 2 threads).

Counterpart in TVM: none; the x86 strategy picks ``conv2d_winograd`` by shape alone.
"""
from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from typing import Callable

from ..measure.bandwidth import known_bandwidth
from ..measure.peak import machine_peak, vector_bits
from ..threadpool.config import pool_reset

REFERENCE_MAC_PER_BYTE = 3.72  # at 16 float32 lanes: 3.9 MMAC per MiB, the model's first fit


@dataclass(frozen=True)
class MachineRates:
    """The exchange rate of weight bytes for multiply-adds, and where it came from."""

    mac_per_byte: float  # multiply-adds the vector unit does while DRAM delivers one byte
    source: str          # what was measured, or why the reference was used

    def said(self) -> str:
        """For a conv's reason in build.json: the rate and its source."""
        return f"a weight byte costs {self.mac_per_byte:.2f} MAC ({self.source})"


def reference(lanes: int, why: str) -> MachineRates:
    """The first fit's rate for a vector unit of ``lanes`` float32 lanes (half the lanes,
    half the multiply-adds per byte)."""
    return MachineRates(REFERENCE_MAC_PER_BYTE * lanes / 16, f"reference rate: {why}")


def measured(threads: int, lanes: int) -> MachineRates:
    """This host's rate at ``threads``: FMA peak (scaled to a target of ``lanes`` when it is
    narrower than the host's vector unit) over the DRAM read bandwidth. The reference when
    either cannot be had (a peak that is not plausible, a machine too small to read 1 GiB)."""
    peak = machine_peak(threads).get("gflops")
    try:
        gbps = known_bandwidth(threads, lambda: set_pool(threads)).get("gbps")
    except (MemoryError, RuntimeError, OSError) as e:  # TVM's allocation errors are RuntimeError
        return reference(lanes, f"the read bandwidth could not be measured: {e}")
    if not peak or not gbps:
        return reference(lanes, "this host's FMA peak or read bandwidth was not plausible")
    scale = min(1.0, lanes * 32 / vector_bits())
    mac_s = peak * 1e9 / 2 * scale  # an FMA is 2 FLOPs
    said = f"{threads} thread" + ("s" if threads > 1 else "")
    return MachineRates(mac_s / (gbps * 1e9), f"this host at {said}: FMA peak "
                                              f"{mac_s / 1e9:.0f} GMAC/s, read {gbps:.1f} GB/s")


def for_build(host: bool, threads: int, lanes: int) -> Callable[[], MachineRates]:
    """The rate a build uses, measured on first need (a model without 3x3 convs never asks)."""
    if not host:
        return lambda: reference(lanes, "the target is not this host's CPU")
    return functools.cache(lambda: measured(threads, lanes))


def set_pool(threads: int) -> None:
    """TVM's pool set to ``threads`` workers, the caller's CPUs given back: creating the pool
    pins the calling thread to one CPU (TVM's thread group does), and processes the build
    starts later would inherit it (running kernels does not pin it again)."""
    cpus = os.sched_getaffinity(0)
    pool_reset(threads)()
    os.sched_setaffinity(0, cpus)
