"""values/: the values a run computes on: inputs read from .npy files or seeded, the weights
given or refused (policy: every arg node says where its value came from), the data check
(subnormal, NaN, Inf and zero counts per tensor) and what subnormal operands cost per op."""
