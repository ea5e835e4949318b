"""readers/: foreign reports read into minigraph's documents: TVM's profiling ``Report`` (table,
CSV, JSON) and ``BenchmarkResult`` as printed by TVM 0.8-0.23."""
