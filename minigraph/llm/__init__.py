"""LLMs on TVM 0.27: decoder-only models built with relax.frontend.nn and the paged KV cache,
run and profiled per phase (prefill, decode)."""
