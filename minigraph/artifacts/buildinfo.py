"""What build.json (written by ``minigraph build`` beside graph.json and model.so) tells us.

- Graph JSON cannot tell a model input from a param: both are arg nodes. build.json can, so
  when it is present and agrees with graph.json, a param missing from model.params is an error
  rather than silently random data.
- It records each library's sha256 and size (``files``): a copy damaged on the way (a bad disk,
  a truncated or patched transfer) is refused before dlopen instead of crashing mid-run.
- It names the CPU model.so was compiled for and every LLVM target feature that enabled
  (``cpu_features``). Kernels built for a CPU with instructions this one lacks (AVX-512, AMX,
  AVX10 or APX artifacts copied to an older machine) would die of SIGILL mid-run; checking
  those features against this CPU's (cpu_features.py) refuses them up front instead.
build.json is optional and advisory: a missing or unreadable one is ignored, never an error of
its own; a library whose bytes differ from the ones it recorded is refused (rebuild it, or
remove build.json if the library was replaced on purpose).
"""
from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Iterable

from ..errors import InputError
from ..fileio import read_bounded, sha256_file
from .cpu_features import X86_CPUINFO, host_cpu, missing_features, target_features

# lazy: TVM (~1.2 s to import) is imported where it is called; TVM-free commands load this module

BUILD_FORMAT = "minigraph-build/1"
_MAX_BYTES = 16 << 20  # build.json is a few KiB; anything huge is not ours


def _load(path: Path) -> dict | None:
    try:  # only a regular file: a FIFO or device named build.json is not one
        if not path.is_file():
            return None
        doc = json.loads(read_bounded(path, _MAX_BYTES, "build.json", "a build.json may be"))
    except (OSError, ValueError, RecursionError, InputError):  # advisory: unusable is absent
        return None
    return doc if isinstance(doc, dict) and doc.get("format") == BUILD_FORMAT else None


def read_build(beside: str | os.PathLike) -> dict:
    """The build.json in the directory of ``beside`` (model.so or graph.json); {} when there
    is no usable one. Read once per model load (artifacts/read_once.py) and passed to the
    functions below."""
    return _load(Path(beside).with_name("build.json")) or {}


def read_builds(lib_path: str | os.PathLike, graph_path: str | os.PathLike
                ) -> tuple[dict, dict]:
    """(model.so's build.json, graph.json's): one read when both name the same file."""
    lib_doc = read_build(lib_path)
    same = os.path.abspath(Path(lib_path).with_name("build.json")) == \
        os.path.abspath(Path(graph_path).with_name("build.json"))
    return lib_doc, lib_doc if same else read_build(graph_path)


def declared_inputs(arg_names: Iterable[str], doc: dict) -> frozenset[str] | None:
    """Names build.json (``doc``, as read_build returned it) lists as model inputs, or None
    when there is no usable build.json or it names inputs that are not among graph.json's arg
    nodes ``arg_names`` (stale)."""
    inputs = doc.get("inputs")
    if not isinstance(inputs, dict) or not all(isinstance(k, str) for k in inputs):
        return None
    names = frozenset(inputs)
    return names if names <= set(arg_names) else None  # stale: another graph's


def built_for_cpu(doc: dict) -> str | None:
    """The LLVM mcpu build.json (``doc``) says model.so was compiled for, if it says."""
    target = _target_dict(doc)
    mcpu = target.get("mcpu") if target else None
    return mcpu if isinstance(mcpu, str) and mcpu else None


def _target_dict(doc: dict) -> dict | None:
    try:
        target = json.loads(doc.get("target", ""))
    except (TypeError, ValueError, RecursionError):
        return None
    return target if isinstance(target, dict) else None


def _built_features(doc: dict) -> set[str]:
    """The LLVM target features model.so was compiled with: build.json's ``cpu_features``
    (recorded since issue 49; any list a build wrote) and those of its ``target`` (an older
    build.json has only that): both, so an edited one cannot hide the other."""
    recorded = doc.get("cpu_features")
    wanted = set(recorded) if isinstance(recorded, list) and \
        all(isinstance(f, str) for f in recorded) else set()
    target = _target_dict(doc)
    if target and target.get("kind") == "llvm":
        from tvm.target import Target
        fields = {k: v for k, v in target.items() if k in _TARGET_KEYS and _text(v)}
        # a target this LLVM does not know: nothing to add (dlopen decides)
        with contextlib.suppress(Exception):
            wanted |= set(target_features(Target(fields)))
    return wanted


_TARGET_KEYS = ("kind", "mtriple", "mcpu", "mattr")  # what decides LLVM's features


def _text(v: object) -> bool:
    return isinstance(v, str) or isinstance(v, list) and all(isinstance(x, str) for x in v)


def check_cpu(lib_path: str | os.PathLike, doc: dict) -> None:
    """InputError, before dlopen, if model.so (``doc``: the build.json beside it) was compiled
    with instruction-set features this CPU lacks (artifacts/cpu_features.py)."""
    if not doc:
        return
    wanted = _built_features(doc)
    missing = missing_features(wanted) if wanted else []
    if not missing:
        return
    first = sorted(missing, key=lambda f: (f not in X86_CPUINFO, f))
    more = f" and {len(first) - 10} more" if len(first) > 10 else ""
    mcpu = built_for_cpu(doc)
    raise InputError(f"{os.fspath(lib_path)} was built for CPU '{mcpu or 'unknown'}' "
                     f"(build.json) with LLVM target features this CPU ('{host_cpu()[0]}') "
                     f"lacks: {', '.join(first[:10])}{more}; its kernels would crash (SIGILL). "
                     "Rebuild it here with `minigraph build` (--target NAME if the build picks "
                     "a CPU this machine does not fully implement)")


def file_digests(directory: Path, names: Iterable[str]) -> dict[str, dict]:
    """build.json's ``files``: name -> {"sha256", "nbytes"} of each file written."""
    return {n: {"sha256": sha256_file(directory / n), "nbytes": (directory / n).stat().st_size}
            for n in names}


def check_digest(lib_path: str | os.PathLike, doc: dict) -> None:
    """InputError if build.json beside ``lib_path`` (``doc``) recorded this file's sha256 and
    the bytes now differ (checked before dlopen: a damaged copy would crash, not fail)."""
    files = doc.get("files")
    p = Path(lib_path)
    entry = files.get(p.name) if isinstance(files, dict) else None
    want = entry.get("sha256") if isinstance(entry, dict) else None
    if not isinstance(want, str):
        return  # not recorded (an older build.json, or another file): nothing to compare
    try:
        have = sha256_file(p)
    except OSError:
        return  # unreadable: the loader says so
    twin = next((n for n, e in files.items() if isinstance(e, dict) and n != p.name and
                 e.get("sha256") == have), None)
    if twin is not None:  # e.g. model.vm.so copied over model.so
        what = " (the Relax VM executable)" if twin == "model.vm.so" else ""
        raise InputError(f"{os.fspath(lib_path)}: holds the bytes build.json recorded for "
                         f"{twin}{what}, not those of {p.name}; pass {p.name} itself")
    if have != want:
        raise InputError(f"{os.fspath(lib_path)}: its contents differ from the ones build.json "
                         f"recorded when it was built (sha256 {have[:12]}... instead of "
                         f"{want[:12]}...): a damaged or replaced copy, refused before loading. "
                         "Copy or rebuild it again (`minigraph build`); if you replaced it on "
                         "purpose, remove build.json")
