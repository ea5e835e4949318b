"""minigraph: a readable graph executor and profiler for Apache TVM kernels."""
from __future__ import annotations

__version__ = "0.1.0"

from .errors import GraphError, InputError, KernelError, MinigraphError, ParamsError  # noqa: F401
