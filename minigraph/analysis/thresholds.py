"""Every threshold a comparison uses, in one place, each with the reason for its value.

Three kinds of cut-off, kept apart because they answer different questions:
- the noise test of one item (an op of two profiles, a device against the others): how far an
  item must move, against noise measured from the data, to be called changed (``CUTOFFS``,
  handed to measure/significance.py, which sits below this room);
- the shape of a kernel-by-kernel disagreement (two TVM reports, ``--by-kernel``): a fixed
  band, because there is one time per call and no run-to-run estimate;
- the verdict's rules (why two documents differ): when a whole-run move, a lone kernel's move
  or the machine's speed probe counts.
The contention threshold (``BUSY_CPUS``) is measure/contention.py's, where contention is read.
"""
from __future__ import annotations

from dataclasses import replace

from ..measure.significance import Cutoffs

# -- the noise test of one item ----------------------------------------------------------------
# A relative change below 5% is not called a change: of an op (the default of
# ``compare --noise-floor``), of the whole run (the median B/A over the ops: the verdict's
# rules, report and --noise-floor aside), of a phase of an LLM profile, of a device against the
# others. Back-to-back profiles of one build on a quiet machine differ op by op by a few
# percent (placement, clocks), and nobody acts on a smaller change.
FLOOR = 0.05
# A change must exceed 3.5 run-to-run standard deviations: the usual outlier rule of thumb,
# wide enough that a model with ~100 ops has well under one false call per comparison.
Z = 3.5
# Mann-Whitney p under 1%, where both sides have several samples: the test is run on every op
# of a model, so a 5% level would call a few of a hundred changed by chance alone.
ALPHA = 0.01
# A shift is set apart (said once, not as N ops differing) only when at least 2/3 of the items
# moved with it: half of the ops changed and half not puts the median between the two groups.
SHARED = 2 / 3
# Shared shifts up to 2x (B/A - 1 = 1.0) are set apart: two back-to-back processes of one
# model, on a quiet 2-vCPU VM with no contention visible to the guest, were seen to differ by up
# to 1.65x on every op alike (and by 1.32x on single ops on another machine). A whole run 2x
# away or more is called a change of every op.
PROCESS_SHIFT = 1.0
CUTOFFS = Cutoffs(alpha=ALPHA, floor=FLOOR, z=Z, shared=SHARED, process_shift=PROCESS_SHIFT)


def cutoffs(alpha: float = ALPHA, floor: float = FLOOR) -> Cutoffs:
    """The noise test's cut-offs with the user's ``compare --alpha`` and ``--noise-floor``."""
    return replace(CUTOFFS, alpha=alpha, floor=floor)

# -- the shape of a kernel-by-kernel disagreement (analysis/kernels.py) -----------------------
# A kernel agrees when its per-call B/A is within 10%: twice FLOOR, because a TVM report has
# one sample per call (one pass), whose noise alone reaches ~20%, and there is no run-to-run
# estimate to judge against. Also "the median kernel agrees" for the verdicts.
AGREE = 0.10
# "The few kernels that carry the gap": the fewest largest contributors reaching 75% of it,
# at most TOP_MAX of them; a gap 5 kernels cannot carry is spread, not concentrated.
CARRY = 0.75
TOP_MAX = 5
# A kernel is off the others when its ratio is 1.5x away from the median ratio: beyond what
# one-pass noise moves a single call, well short of the tens of times a subnormal operand costs.
OUTLIER = 1.5
# A few kernels 5x or more off while the rest agree is the data's pattern (subnormal operands
# cost each op they reach tens of times), named among the explanations.
DATA_RATIO = 5.0
# B is uniformly slower (or faster) when the middle half of the per-kernel ratios lies within
# 1.25x: the whole run moved, every kernel by about as much.
UNIFORM = 1.25

# -- the verdict's rules (analysis/verdict.py, analysis/evidence.py) --------------------------
# A lone kernel's own change: beyond 25% of the whole run's. Smaller lone moves are what two
# processes of one build show (buffer placement; back-to-back pairs of tiny-cnn and ResNet-18
# each had one op at 0.95x or 1.13x beyond the noise test, and nothing else).
KERNEL_MOVE = 1.25
# The machine's speed moved when its probes' ratio is beyond FLOOR and 90% of the (A probe,
# B probe) pairs are ordered one way: one process's probes spread by ~10% on a quiet 2-vCPU
# guest (where its arrays landed), so a ratio inside that spread is no move.
SEPARATED = 0.9


# A single profile's judgments (not a pair's), here so every cut-off has one home:
# in-run against e2e (agreement.py): within 2% always counts as agreement, the medians of two
# sums are not one number; e2e's thirds this far apart mean the machine changed speed during
# the rounds, and a gap beyond AGREEMENT_FLOOR is then not called agreement even where the
# spread (which that drift widened) allows it
AGREEMENT_FLOOR = 0.02
AGREEMENT_DRIFT = 0.05
# the roofline's flag (roofline.py): FLOPs per byte of arguments above which a kernel should
# be compute-bound; flagged below this share of the median rate of its compute-heavy
# neighbours, this many ops each side: the bad kernel among good ones, without a bandwidth model
ROOFLINE_HEAVY = 8.0
ROOFLINE_FLAG_FRACTION = 0.33
ROOFLINE_WINDOW = 5
