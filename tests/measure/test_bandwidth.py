"""The read bandwidth a build asks for (measure/bandwidth.py ``known_bandwidth``): the cached
best when one is there, measured and cached only when none is (or the cache holds no
plausible figure), with the pool set first; and the build's exchange rate built from it."""
from __future__ import annotations

import json

import pytest

from minigraph.compiler import machine_rates
from minigraph.measure import bandwidth
from minigraph.measure.peak import machine_key


@pytest.fixture
def cache_home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    return tmp_path / "minigraph"


def _write(cache_home, entries: dict) -> None:
    cache_home.mkdir(parents=True, exist_ok=True)
    (cache_home / bandwidth.CACHE).write_text(json.dumps(entries))


def test_a_cached_figure_is_used_without_measuring(cache_home, monkeypatch):
    _write(cache_home, {f"{machine_key()} | threads 2": {"gbps": 31.5, "method": "m"}})
    monkeypatch.setattr(bandwidth, "measure_bandwidth", lambda: pytest.fail("measured"))
    got = bandwidth.known_bandwidth(2, lambda: pytest.fail("pool set"))
    assert got["gbps"] == 31.5 and got["threads"] == 2


@pytest.mark.parametrize("bad", [True, "31", float("nan"), 1e9, None])
def test_an_implausible_cache_entry_is_measured_again_and_replaced(cache_home, monkeypatch, bad):
    _write(cache_home, {f"{machine_key()} | threads 1": {"gbps": bad}})
    monkeypatch.setattr(bandwidth, "measure_bandwidth", lambda: 12.25)
    pools = []
    got = bandwidth.known_bandwidth(1, lambda: pools.append(1))
    assert got["gbps"] == 12.25 and pools == [1]
    stored = json.loads((cache_home / bandwidth.CACHE).read_text())
    assert stored[f"{machine_key()} | threads 1"]["gbps"] == 12.25


def test_the_rate_is_the_peak_over_the_bandwidth(cache_home, monkeypatch):
    _write(cache_home, {f"{machine_key()} | threads 2": {"gbps": 20.0, "method": "m"}})
    monkeypatch.setattr(machine_rates, "machine_peak", lambda t: {"gflops": 80.0 * t})
    monkeypatch.setattr(machine_rates, "vector_bits", lambda: 512)
    rate = machine_rates.measured(2, 16)
    assert rate.mac_per_byte == pytest.approx(80e9 / 20e9)  # 160 GFLOP/s = 80 GMAC/s
    assert "80 GMAC/s" in rate.source and "20.0 GB/s" in rate.source
    # a target half as wide as the host: half the multiply-adds per byte
    assert machine_rates.measured(2, 8).mac_per_byte == pytest.approx(2.0)


def test_no_plausible_peak_falls_back_to_the_reference(cache_home, monkeypatch):
    _write(cache_home, {f"{machine_key()} | threads 1": {"gbps": 20.0}})
    monkeypatch.setattr(machine_rates, "machine_peak", lambda t: {})
    rate = machine_rates.measured(1, 16)
    assert rate.mac_per_byte == machine_rates.REFERENCE_MAC_PER_BYTE
    assert "not plausible" in rate.source
