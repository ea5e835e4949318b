"""Target features against the CPU's (artifacts/cpu_features.py, buildinfo.check_cpu): every
instruction-set feature LLVM enabled for the build must be this CPU's, or model.so is refused
before dlopen, naming the missing ones (issue 49 item 5: a diamondrapids build on an Emerald
Rapids CPU died of SIGILL in op 0, since only a few vector extensions were compared)."""
from __future__ import annotations

import json

import pytest
from tvm.target import Target

from minigraph.artifacts import buildinfo
from minigraph.artifacts.cpu_features import (
    X86_CPUINFO,
    host_cpu,
    is_isa,
    missing_features,
    target_features,
)
from minigraph.errors import InputError


def _features(mcpu: str) -> list[str]:
    return target_features(Target({"kind": "llvm", "mcpu": mcpu}))


def _machine(mcpu: str) -> tuple[str, frozenset[str], frozenset[str]]:
    """A host of that CPU: LLVM's features of it, and the cpuinfo flags it would show."""
    feats = frozenset(_features(mcpu))
    return mcpu, feats, frozenset(X86_CPUINFO[f] for f in feats if f in X86_CPUINFO)


EMERALD = _machine("emeraldrapids")


def test_diamondrapids_on_emerald_rapids_lacks_avx10_and_more_amx() -> None:
    """The issue's case: Emerald Rapids has AVX-512, AVX-VNNI and AMX (all the old check
    compared); Diamond Rapids code may also use AVX10, AMX-FP16/FP8, APX registers, ..."""
    missing = missing_features(_features("diamondrapids"), EMERALD)
    assert {"avx10.1", "amx-fp16", "amx-fp8", "egpr", "avxvnniint8"} <= set(missing)
    assert not {"amx-tile", "avx512fp16", "avxvnni"} & set(missing)  # Emerald Rapids has them
    assert missing_features(_features("sapphirerapids"), EMERALD) == []
    assert missing_features(EMERALD[1], EMERALD) == []


def test_tuning_features_are_never_compared() -> None:
    """skylake-avx512 code runs on Zen 4; what it has more is how LLVM tunes (fast-gather,
    prefer-256-bit, false-deps-popcnt, ...), not instructions."""
    extra = set(_features("skylake-avx512")) - set(_features("znver4"))
    assert extra and not any(is_isa(f) for f in extra), extra
    assert missing_features(_features("skylake-avx512"), _machine("znver4")) == []


def test_this_machines_own_build_passes_and_cpuinfo_decides_the_vector_extensions() -> None:
    name, feats, flags = host_cpu()
    assert missing_features(_features(name)) == []
    # a hypervisor that hides AVX-512: LLVM's model of the CPU still lists it, cpuinfo does not
    hidden = (name, feats | {"avx512f"}, frozenset({"sse2", "avx2"}))
    assert "avx512f" in missing_features(_features("x86-64-v4"), hidden)
    assert missing_features(["neon", "sve"], EMERALD) == []  # not x86: dlopen decides


def _doc(**fields) -> dict:
    return {"format": buildinfo.BUILD_FORMAT, **fields}


def _refusal(doc: dict, monkeypatch) -> str:
    monkeypatch.setattr(buildinfo, "host_cpu", lambda: EMERALD)
    monkeypatch.setattr(buildinfo, "missing_features", lambda w: missing_features(w, EMERALD))
    with pytest.raises(InputError) as info:
        buildinfo.check_cpu("out/model.so", doc)
    return str(info.value)


def test_check_cpu_names_what_is_missing_from_the_recorded_list(monkeypatch) -> None:
    target = json.dumps({"kind": "llvm", "mcpu": "diamondrapids"})
    msg = _refusal(_doc(target=target, cpu_features=_features("diamondrapids")), monkeypatch)
    assert msg.startswith("out/model.so was built for CPU 'diamondrapids' (build.json) with "
                          "LLVM target features this CPU ('emeraldrapids') lacks: ")
    assert "amx-fp16" in msg and "more; its kernels would crash (SIGILL)" in msg
    # a recorded list is honoured even where the target string says less
    plain = json.dumps({"kind": "llvm", "mcpu": "emeraldrapids"})
    msg = _refusal(_doc(target=plain, cpu_features=[*EMERALD[1], "avx10.2"]), monkeypatch)
    assert msg.endswith("machine does not fully implement)") and "lacks: avx10.2;" in msg


def test_an_older_build_json_without_the_list_is_checked_by_its_target(monkeypatch) -> None:
    old = _doc(target=json.dumps({"kind": "llvm", "mcpu": "diamondrapids"}))
    assert "lacks: amx-avx512, amx-complex, amx-fp16, amx-fp8, amx-movrs, amx-tf32, avx10.1" \
        in _refusal(old, monkeypatch)
    monkeypatch.setattr(buildinfo, "host_cpu", lambda: EMERALD)
    monkeypatch.setattr(buildinfo, "missing_features", lambda w: missing_features(w, EMERALD))
    for doc in ({}, _doc(target=json.dumps({"kind": "llvm", "mcpu": "emeraldrapids"})),
                _doc(target="not json"), _doc(target=json.dumps({"kind": "llvm",
                                                                 "mcpu": "no-such-cpu"})),
                _doc(cpu_features="avx10.1")):  # not a list: ignored, as a missing one
        buildinfo.check_cpu("out/model.so", doc)
