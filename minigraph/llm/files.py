"""The files of an LLM build directory, and build.json's format tag (one place for the names
that build.py writes and opened.py reads)."""
from __future__ import annotations

FORMAT = "minigraph-llm-build/1"
LIBRARY, PARAMS, BUILD_JSON, TOKENIZER = "model.vm.so", "params.npz", "build.json", "tokenizer.json"
ARTIFACTS = (LIBRARY, PARAMS, BUILD_JSON, TOKENIZER)
