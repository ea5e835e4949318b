"""analysis/: what saved and measured documents mean, between the rooms that measure them
(profile/, diagnose/, compiler/, measure/) and report/, which renders what is decided here.

One ``Comparison`` of two documents (comparison.py) with its views: ops (each op against
run-to-run noise), kernels (kernel by kernel, kernels.py), LLM phases (phases.py); a fleet's
devices compared are made of such pairs (fleet.py). One matcher for ops and kernels
(matching.py), the settings two documents record (settings.py), the evidence of why two
documents differ and the verdict's rules (evidence.py, verdict.py), and every threshold a
comparison uses, each with the reason for its value (thresholds.py).

The judgments a single report states: was the machine busy (contention.py) or a measurement
disturbed (disturbance.py), do in-run and e2e agree (agreement.py), which kernel is far below
the roofline (roofline.py), what a saved diagnosis attributes (diagnosis.py), the VM's memory
against the planner's (vm_memory.py).
"""
