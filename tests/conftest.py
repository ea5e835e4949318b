"""Shared fixtures: zoo models are built once per session into a temp dir."""
from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def build_dir(tmp_path_factory):
    """build_dir(name) -> Path of that zoo model's artifacts, built at most once per session."""
    from minigraph.build.compiler import build
    cache: dict[str, Path] = {}

    def get(name: str) -> Path:
        if name not in cache:
            out = tmp_path_factory.mktemp(name.replace("-", "_"))
            build(name, out)
            cache[name] = out
        return cache[name]

    return get


@pytest.fixture(scope="session")
def tiny_cnn(build_dir) -> Path:
    return build_dir("tiny-cnn")
