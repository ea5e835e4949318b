"""data/: the values a run computes on: inputs read from .npy files or generated (seeded), and
what the kernels will see in them."""
