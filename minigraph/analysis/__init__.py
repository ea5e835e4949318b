"""analysis/: what saved and measured documents mean, between the rooms that measure them
(profile/, diagnose/, measure/) and report/, which renders what is decided here.

One ``Comparison`` of two documents (comparison.py) with its views: ops (each op against
run-to-run noise), kernels (kernel by kernel, kernels.py), LLM phases (phases.py); a fleet's
devices compared are made of such pairs (fleet.py). One matcher for ops and kernels
(matching.py), the settings two documents record (settings.py), the evidence of why two
documents differ and the verdict's rules (evidence.py, verdict.py), and every threshold a
comparison uses, each with the reason for its value (thresholds.py).
"""
