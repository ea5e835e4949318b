"""TVM's own profiler reports read back: text tables (any locale, any column set), CSV, JSON,
BenchmarkResult; malformed ones are a one-line InputError naming the line. Fixtures are printed
by tests/helpers/tvm_printer.py, which follows TVM's printing rules (no copied report text)."""
from __future__ import annotations

import json
import re

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from tvm_printer import (
    DE_CH,
    DE_DE,
    EN_US,
    FR_FR,
    FR_FR_OLD_GCC,
    HI_IN,
    SV_SE,
    C,
    Cnt,
    Dur,
    Ratio,
    as_csv,
    as_json,
    as_table,
    benchmark_repr,
    benchmark_str,
    profiled_run,
)

from minigraph.cli import main
from minigraph.errors import InputError
from minigraph.readers.documents import load_profile, parse_profile
from minigraph.readers.tvm_report import read_report, sniff
from minigraph.readers.tvm_report.convert import parse_shapes

CONV = "tvmgen_default_fused_nn_contrib_conv2d_NCHWc_add_nn_relu"
CALLS = [
    {"Name": CONV, "Duration (us)": Dur(1234567.891), "Hash": "00ab12cd34ef5678",
     "Argument Shapes": "float32[1, 3, 224, 224], float32[64, 3, 7, 7], float32[1, 64, 112, 112]",
     "data_layout": "NCHW3c", "kernel_layout": "OIHW3i16o", "out_layout": ""},
    {"Name": "tvmgen_default_fused_layout_transform", "Duration (us)": Dur(5.5),
     "Hash": "11ab12cd34ef5678", "Argument Shapes": "float32[1, 3, 224, 224], "
     "float32[1, 1, 224, 224, 3]", "src_layout": "NCHW", "dst_layout": "NCHW3c"},
    {"Name": "tvmgen_default_fused_add", "Duration (us)": Dur(45678.25),
     "Hash": "22ab12cd34ef5678", "Argument Shapes": "float32[1, 64], float32[1, 64]"},
    {"Name": "tvmgen_default_fused_add", "Duration (us)": Dur(7.25),
     "Hash": "22ab12cd34ef5678", "Argument Shapes": "float32[1, 64], float32[1, 64]"},
]
TOTAL_US = 1_300_000.0
ROWS_US = sum(c["Duration (us)"].us for c in CALLS)
CONFIG = {"Number of threads": Cnt(4), "Executor": "Graph"}


def _table(loc=C, calls=CALLS, config=CONFIG, **kw) -> bytes:
    return as_table(*profiled_run(calls, TOTAL_US), config, loc=loc, **kw)


def _read(data: bytes | str):
    return read_report(data.encode() if isinstance(data, str) else data, "r.txt")


def _one_pass_us(prof) -> float:
    return sum(s[0] for s in prof.samples["one-pass"]) / 1e3


@pytest.mark.parametrize("loc", [C, EN_US, DE_DE, HI_IN, FR_FR, FR_FR_OLD_GCC, DE_CH, SV_SE],
                         ids=["C", "en_US", "de_DE", "hi_IN", "fr_FR", "fr_FR-gcc12", "de_CH",
                              "sv_SE"])
def test_text_table_in_every_locale_loads_every_row_sum_and_total(loc):
    prof = _read(b"One or more operators have not been tuned.\n[12:00:01] log line\n" +
                 _table(loc))
    src = prof.source
    assert src["kind"] == "tvm-report" and src["format"] == "table"
    assert len(prof.ops) == 4 and len(src["rows"]) == 3     # fused_add: 2 calls, one row
    assert src["sum"]["duration_us"] == pytest.approx(ROWS_US, abs=0.01)
    assert src["sum"]["count"] == 4
    assert src["totals"]["cpu0"]["duration_us"] == pytest.approx(TOTAL_US)
    assert _one_pass_us(prof) == pytest.approx(ROWS_US, abs=0.02)
    assert src["configuration"] == {"Number of threads": 4, "Executor": "Graph"}
    assert src["protocol"]["key"] == "debug_executor.profile"
    assert src["notes"] == []
    if loc.group:   # 1,234,567.89 and the like were seen: the report's locale is recorded
        assert src["numbers"]["group"] and src["numbers"]["decimal"] == loc.decimal.decode()


def test_indian_grouping_is_recognised_and_inconsistent_grouping_is_not():
    data = _table(HI_IN)
    assert b"12,34,567.89" in data
    assert _read(data).source["numbers"]["grouping"] == [3, 2]
    bad = data.replace(b"12,34,567.89", b"1,234,567.89")   # same width, other grouping
    with pytest.raises(InputError, match=r"line \d+: column 'Duration \(us\)'.*unlike"):
        _read(bad)


def test_columns_cells_and_shapes_land_in_the_profile():
    prof = _read(_table(EN_US))
    conv = next(op for op in prof.ops if op["name"] == CONV)
    assert conv["hash"] == "00ab12cd34ef5678" and conv["kind"] == "conv2d"
    assert conv["shapes"] == [["float32", [1, 3, 224, 224]], ["float32", [64, 3, 7, 7]],
                              ["float32", [1, 64, 112, 112]]]
    assert conv["layouts"] == {"data_layout": "NCHW3c", "kernel_layout": "OIHW3i16o"}
    adds = [op for op in prof.ops if op["name"].endswith("fused_add")]
    assert [op["calls_in_row"] for op in adds] == [2, 2]   # aggregated: Duration / Count each
    assert prof.samples["one-pass"][adds[0]["index"]][0] == pytest.approx(45685.5 / 2 * 1e3)
    assert prof.source["order"] == "duration" and prof.source["aggregated"]


def test_unaggregated_unsorted_table_without_sums_and_trailing_spaces_stripped():
    data = _table(DE_DE, aggregate_calls=False, sort=False, sums=False)
    stripped = b"\n".join(line.rstrip() for line in data.split(b"\n"))
    prof = _read(b"    " + stripped.replace(b"\n", b"\n    "))   # indented, as in a forum post
    assert [op["name"] for op in prof.ops] == [c["Name"] for c in CALLS]
    assert prof.source["sum"] is None and prof.source["totals"]["cpu0"]["duration_us"] == TOTAL_US


def test_legacy_08_table_vm_rows_empty_cells_and_collector_columns():
    """0.8: no Configuration block; VM rows with empty Hash/shape cells; a PAPI-like counter
    column (a Count in the locale) and a Ratio column; 0.9+ blanks a Name aggregated from
    differently named calls."""
    calls = [dict(c, **{"PAPI_FP_OPS": Cnt(123456789 + i), "IPC": Ratio(1.5)})
             for i, c in enumerate(CALLS)]
    calls += [{"Name": "VM::AllocStorage", "Duration (us)": Dur(4.0),
               "VM::Argument Shapes": "float32[802816]"},
              {"Name": "VM::AllocStorage", "Duration (us)": Dur(3.0),
               "VM::Argument Shapes": "float32[4096]"}]
    calls += [{"Name": "fused_add_1", "Duration (us)": Dur(2.0), "Hash": "33", "Argument Shapes":
               "int8[4]"}, {"Name": "fused_add_2", "Duration (us)": Dur(2.0), "Hash": "33",
                            "Argument Shapes": "int8[4]"}]
    prof = _read(_table(EN_US, calls, config=None))
    assert prof.source["protocol"]["key"] == "vm_profiler"
    assert "VM:: rows" in prof.source["protocol"]["evidence"]
    assert prof.source["configuration"] == {}
    rows = {r["name"]: r for r in prof.source["rows"]}
    assert rows[CONV]["metrics"] == {"PAPI_FP_OPS": 123456789.0, "IPC": 1.5}
    assert rows["VM::AllocStorage"]["count"] == 2 and rows["VM::AllocStorage"]["hash"] == ""
    assert rows[""]["count"] == 2   # names differed: TVM 0.9+ prints an empty Name
    legacy = _read(_table(EN_US, calls, config=None, legacy=True))   # 0.8 keeps the first name
    assert "fused_add_1" in {r["name"] for r in legacy.source["rows"]}


def test_shape_strings():
    assert parse_shapes("float32[1, 3], int64[], float16x4[2]") == \
        [["float32", [1, 3]], ["int64", []], ["float16x4", [2]]]
    assert parse_shapes("") == []
    assert parse_shapes("float32[1, ?]") is None   # kept as text by the reader
    assert parse_shapes("float32[1, 64, 1123 112]") is None
    assert parse_shapes("float32[1,, 2]") is None


def test_csv_and_json_readers_agree_with_the_table():
    calls, devices = profiled_run(CALLS, TOTAL_US)
    for data, form in ((as_csv(calls), "csv"), (as_json(calls, devices, CONFIG), "json"),
                       (as_json(calls, devices, legacy=True), "json")):
        assert sniff(data.encode()) == form
        prof = _read(data)
        assert [op["name"] for op in prof.ops] == [c["Name"] for c in CALLS]   # call order
        assert _one_pass_us(prof) == pytest.approx(ROWS_US, rel=1e-5)
        assert prof.ops[0]["shapes"][0] == ["float32", [1, 3, 224, 224]]
        assert prof.ops[0]["layouts"]["data_layout"] == "NCHW3c"
        total = prof.source["totals"]
        assert next(iter(total.values()))["duration_us"] == pytest.approx(TOTAL_US, rel=1e-4)
    assert _read(as_csv(calls)).source["total_derived"]   # CSV: from Percent
    assert _read(as_json(calls, devices, CONFIG)).source["configuration"]["Executor"] == "Graph"


def test_benchmark_result_printed_and_repr():
    runs = [0.095, 0.097, 0.099, 0.101]
    prof = _read(benchmark_str(runs))
    assert prof.source["benchmark"]["median_ms"] == pytest.approx(98.0)
    assert prof.e2e_ns == [] and prof.ops == []
    prof = _read("log\n" + benchmark_repr(runs) + "\n")
    assert prof.e2e_ns == pytest.approx([x * 1e9 for x in runs])
    assert prof.source["protocol"]["key"] == "benchmark_e2e"


def test_a_benchmark_printed_after_the_table_is_kept_as_the_whole_run_time():
    prof = _read(_table(EN_US) + b"\n" + benchmark_str([1.0, 1.1, 1.2]).encode())
    assert prof.source["benchmark"]["median_ms"] == pytest.approx(1100.0)
    assert len(prof.ops) == 4
    from minigraph.report.tvm_report import render_report
    assert "is 1.18x the benchmark's median" in render_report(prof)


def test_a_table_wrapped_by_a_terminal_is_rejoined_only_when_the_wrap_is_exact():
    data = _table(HI_IN)
    width = 90
    wrapped = b"\n".join(piece for line in data.split(b"\n")
                         for piece in ([line[i:i + width] for i in range(0, len(line), width)]
                                       or [b""]))
    prof = _read(b"$ python profile.py\n" + wrapped)
    assert len(prof.ops) == 4 and prof.source["totals"]["cpu0"]["duration_us"] == TOTAL_US
    assert "wrapped at 90 columns" in prof.source["notes"][-1]
    with pytest.raises(InputError, match=r"line \d+"):   # trailing spaces gone: not exact
        _read(b"\n".join(line.rstrip() for line in wrapped.split(b"\n")))


def _lines(data: bytes) -> list[bytes]:
    return data.split(b"\n")


@pytest.mark.parametrize("damage, message", [
    (lambda d: b"\n".join(_lines(d)[:3]), r"table ends at line 3 without its Sum or Total row"),
    (lambda d: b"\n".join(_lines(d)[:3] + [_lines(d)[3][:69]]), r"line 4: .*does not end under"),
    (lambda d: b"\n".join(_lines(d)[:2] + [b" " + _lines(d)[2]] + _lines(d)[3:]),
     r"line 3: .*misaligned"),
    (lambda d: b"\n".join(_lines(d)[:2] + [_lines(d)[2].replace(b"  ", b"\t", 1)]
                          + _lines(d)[3:]), r"line 3: tab characters"),
    (lambda d: re.sub(rb" +", b" ", d), r"line 1: .*not two spaces apart"),
    (lambda d: d.replace(b"  ", b" "), r"line 1: .*not two spaces apart"),
    (lambda d: d + d, r"2 TVM tables \(headers on lines 1, 13\)"),
    (lambda d: d.replace(b"----------", b"==========", 1), r"line \d+: .*'=========="),
], ids=["truncated", "cut-line", "shifted-line", "tabs", "collapsed", "halved", "two-tables",
        "no-separator"])
def test_malformed_tables_are_one_line_errors_naming_the_line(damage, message):
    with pytest.raises(InputError, match=message) as err:
        _read(damage(_table(EN_US)))
    assert "\n" not in str(err.value)


def test_non_reports_and_broken_csv_json_are_one_line_errors(tmp_path, capsys):
    cases = {"notes.txt": b"hello\nName of the model: resnet\n",
             "bad.csv": b"Name,Duration (us)\n\"a\",1.5,7\n",
             "bad.json": b'{"calls": [{"Name": {"string": "x"}, "Duration (us)": {"ms": 1}}]}',
             "cut.json": b'{"calls": [{"Name": {"string": "x"}',
             "empty.txt": b""}
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
        assert main(["show", str(tmp_path / name)]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and err.count("\n") == 1, err


def test_show_writes_the_imported_report_as_a_minigraph_profile(tmp_path, capsys):
    (tmp_path / "vm.txt").write_bytes(_table(DE_DE))
    out = tmp_path / "out.json"
    assert main(["show", str(tmp_path / "vm.txt"), "--json", str(out), "--csv",
                 str(tmp_path / "o.csv")]) == 0
    text = capsys.readouterr().out
    assert "TVM profiler report" in text and "debug_executor.profile" in text
    assert "Sum vs Total" in text and "outside the timed calls" in text
    doc = json.loads(out.read_text())
    assert doc["format"] == "minigraph-profile/1" and doc["source"]["kind"] == "tvm-report"
    again = load_profile(out)
    assert again.source == parse_profile(_table(DE_DE), str(tmp_path / "vm.txt")).source
    assert main(["show", str(out)]) == 0
    assert capsys.readouterr().out == text
    assert "one-pass_median_us" in (tmp_path / "o.csv").read_text()


_CELL = st.text(st.sampled_from(list("0123456789,. '-aFx[]\u202f")), max_size=12)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_fuzzed_tables_are_parsed_or_refused_cleanly(data):
    """Any edit of a valid table (cells replaced, bytes inserted or cut) either parses or is
    an InputError; nothing else escapes."""
    base = bytearray(_table(data.draw(st.sampled_from([C, EN_US, DE_DE, HI_IN, FR_FR]))))
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(base)))
        what = data.draw(st.sampled_from(["insert", "cut", "overwrite"]))
        chunk = data.draw(_CELL).encode()
        if what == "insert":
            base[at:at] = chunk
        elif what == "cut":
            del base[at:at + len(chunk) + 1]
        else:
            base[at:at + len(chunk)] = chunk
    try:
        prof = read_report(bytes(base), "fuzz")
    except InputError as err:
        assert "\n" not in str(err)
        return
    assert all(s[0] >= 0 for s in prof.samples.get("one-pass", []))


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=400), st.sampled_from([b"", b"Name  Duration (us)  Percent\n",
                                                 b"Execution time summary:\n", b'{"calls":']))
def test_arbitrary_bytes_are_parsed_or_refused_cleanly(blob, prefix):
    try:
        parse_profile(prefix + blob, "fuzz")
    except InputError as err:
        assert "\n" not in str(err)
