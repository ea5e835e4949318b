"""The peak cache is data from disk (issue #24): an implausible or foreign entry is measured
again, never used, and a saved document never holds (nor is read with) NaN or Infinity."""
from __future__ import annotations

import json
import math

import pytest

from minigraph.errors import InputError
from minigraph.measure import peak
from minigraph.results.files import parse_saved_profile, to_json
from minigraph.results.profile import Profile

FRESH = {"gflops_per_thread": 40.0, "method": "test", "measured_at": "now"}


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A private cache, this CPU's vector width, and a counted fake measurement."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    _, bits = peak._target_and_bits()
    measured = []

    def measure() -> dict:
        measured.append(1)
        return {**FRESH, "vector_bits": bits}
    monkeypatch.setattr(peak, "measure_peak", measure)
    path = peak.cache_path()
    path.parent.mkdir(parents=True)
    return path, peak.machine_key(), bits, measured


def _write(path, key: str, entry: object, raw: str | None = None) -> None:
    path.write_text(raw if raw is not None else json.dumps({key: entry}))


@pytest.mark.parametrize("value", [-1e308, 0.0, 1e-9, 1e6, float("inf"), "fast", None, True])
def test_an_implausible_figure_is_measured_again(cache, value) -> None:
    path, key, bits, measured = cache
    _write(path, key, {"gflops_per_thread": value, "vector_bits": bits})
    got = peak.machine_peak(2)
    assert measured == [1] and got["gflops_per_thread"] == 40.0 and got["gflops"] == 80.0
    assert json.loads(path.read_text())[key]["gflops_per_thread"] == 40.0  # replaced


def test_an_entry_of_another_vector_width_is_measured_again(cache) -> None:
    path, key, bits, measured = cache
    _write(path, key, {"gflops_per_thread": 30.0, "vector_bits": 128 if bits != 128 else 512})
    assert peak.machine_peak(1)["gflops_per_thread"] == 40.0 and measured == [1]


@pytest.mark.parametrize("raw", ['{"K": {"gflops_per_thread": -Infinity}}', '{"K": NaN}',
                                 "not json", '[1, 2]', '{"K": 1, "K": 2}'])
def test_a_cache_that_is_not_strict_json_is_ignored(cache, raw) -> None:
    path, key, _, measured = cache
    _write(path, key, None, raw.replace('"K"', json.dumps(key)))
    assert peak.machine_peak(1)["gflops_per_thread"] == 40.0 and measured == [1]
    assert "Infinity" not in path.read_text() and "NaN" not in path.read_text()


def test_a_plausible_entry_is_used_as_is(cache) -> None:
    path, key, bits, measured = cache
    _write(path, key, {"gflops_per_thread": 12.5, "vector_bits": bits})
    assert peak.machine_peak(4)["gflops"] == 50.0 and measured == []


def test_a_measurement_that_is_not_plausible_is_neither_used_nor_cached(cache, monkeypatch):
    path, key, bits, _ = cache
    monkeypatch.setattr(peak, "measure_peak",
                        lambda: {"gflops_per_thread": math.inf, "vector_bits": bits})
    assert peak.machine_peak(1) == {} and not path.exists()


def _profile_with_peak(gflops: float) -> Profile:
    prof = Profile([{"index": 0, "name": "a", "func_name": "f", "kind": "k", "hash": "",
                     "shapes": [], "layouts": {}, "flops": 1e6}], {"modes": ["warm"]})
    prof.samples["warm"] = [[1000.0, 1100.0]]
    prof.env["peak"] = {"gflops": gflops, "gflops_per_thread": gflops, "threads": 1}
    return prof


def test_a_saved_profile_never_holds_nan_or_infinity() -> None:
    text = to_json(_profile_with_peak(-math.inf))
    assert "Infinity" not in text and "NaN" not in text
    assert json.loads(text)["env"]["peak"]["gflops"] is None  # strict parsers read it


@pytest.mark.parametrize("literal", ["-Infinity", "Infinity", "NaN"])
def test_show_refuses_a_profile_holding_nan_or_infinity(literal) -> None:
    text = to_json(_profile_with_peak(5.0)).replace('"gflops": 5.0', f'"gflops": {literal}')
    with pytest.raises(InputError, match="not a JSON number"):
        parse_saved_profile(text.encode(), "p.json")


def test_a_saved_peak_that_is_not_positive_is_refused() -> None:
    text = to_json(_profile_with_peak(5.0)).replace('"gflops": 5.0', '"gflops": -1e308')
    with pytest.raises(InputError, match="env.peak"):
        parse_saved_profile(text.encode(), "p.json")


def test_msgpack_non_finite_values_are_refused() -> None:
    import msgpack

    from minigraph.results.files import from_msgpack
    doc = _profile_with_peak(5.0).to_dict()
    doc["env"]["peak"]["gflops"] = -math.inf
    with pytest.raises(InputError, match="env.peak.gflops.*not a finite number"):
        from_msgpack(msgpack.packb(doc), "p.msgpack")
