"""runtime/legacy/: the Relay/NNVM-era door: graph.json + a model.so of TVM <= 0.20's packed C
ABI run on TVM 0.27's thread pool through ctypes (loader, kernels, calls, packed functions).
Imports the executor core, never the Relax VM door. Counterpart: ``graph_runtime.create``."""
