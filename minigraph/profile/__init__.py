"""profile/: per-op timing in every mode. The mode registry (modes), one sampler per mode
(samplers), the loop over them (profiler), the Profile with its serialisation (model, schema,
files). Counterpart: the old debug executor's profile().
"""
