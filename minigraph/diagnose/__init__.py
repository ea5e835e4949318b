"""diagnose/: why the first run is slow, per op. The rung table (rungs), the settings and the
worker spec (spec), the fresh worker process (worker), the ladder that runs them (ladder), the
raw records (model) and the per-op attribution with intervals (attribution).
"""
