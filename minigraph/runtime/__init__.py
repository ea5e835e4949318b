"""runtime/: the graph executor itself, stage by stage.

graph.json -> Graph (graph, graph_json, graph_checks) -> StoragePlan (storage) -> pools and
views -> BoundOps (kernels, bind) -> the run loop (executor); params, dtypes, op descriptions
(opinfo) and the `run` command's inputs (runner). Counterpart: src/runtime/graph_executor/.
"""
