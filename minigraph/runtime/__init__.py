"""runtime/: the graph executor itself, stage by stage.

Graph -> StoragePlan (storage) -> pools and views -> BoundOps (bind) -> the run loop (executor);
the files loaded and checked first (kernels, load); the debug executor over the core (debug:
ops one at a time, crash records, benchmark, loading from files), op descriptions (opinfo) and
the three front doors (doors, legacy/, relax_vm/). Counterpart: src/runtime/graph_executor/
and its debug/ subclass.
"""
