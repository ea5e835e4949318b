"""protocols/: every measuring protocol TVM shipped, side by side on the same kernels: the
shared result type (types), the graph-era protocols (graph_era), TVM 0.27's Relax VM
(relax_vm) and the runner over both (measure).
"""
