"""Nothing measured or built is lost on an error path: outputs checked before work, every
export attempted and the report shown before a write error, builds staged and moved into
place as a complete set (and what a killed build left behind removed by the next one), Ctrl-C
inside TVM reported as an interrupt (exit 130), SIGTERM as a termination (exit 143)."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from terminal import OnTerminal

from minigraph.cli import main
from minigraph.diagnose.spec import DiagnoseSettings


def _digest(directory: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(directory.iterdir())
            if p.is_file()}


def _staging_left(root: Path) -> list[Path]:
    return list(root.rglob(".minigraph-staging-*"))


@pytest.mark.parametrize("argv", [
    ["profile", "{model}", "--json", "/nonexistent_dir/x.json"],
    ["profile", "{model}", "--csv", "/proc/self/x.csv"],
    ["diagnose", "{model}", "--trace", "/nonexistent_dir/t.json"],
    ["compare", "{model}/a.json", "{model}/b.json", "--json", "/nonexistent_dir/c.json"],
])
def test_a_bad_output_path_fails_in_under_a_second_with_exit_2(argv, tiny_cnn, capsys):
    t0 = time.monotonic()
    assert main([a.format(model=tiny_cnn) for a in argv]) == 2
    assert time.monotonic() - t0 < 1.0
    assert capsys.readouterr().err.startswith("error: --")


def test_a_failed_write_still_shows_the_report_and_writes_the_other_outputs(tiny_cnn, tmp_path,
                                                                          capsys):
    """--json to a full device fails (exit 1), but the table is printed and --csv written."""
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full")
    rc = main(["profile", str(tiny_cnn), "--mode", "e2e", "--quiet", "--json", "/dev/full",
               "--csv", str(tmp_path / "p.csv")])
    out, err = capsys.readouterr()
    assert rc == 1 and "End to end" in out and "No space left" in err
    assert (tmp_path / "p.csv").read_text().startswith("index,")


@pytest.mark.parametrize("argv, needle", [
    (["build", "no-such-model", "-o", "{out}"], "unknown model"),
    (["build", "tiny-cnn", "-o", "{out}", "--target", "no-such-cpu"], "unknown target CPU"),
    (["build", "{tmp}/missing.onnx", "-o", "{out}"], "no such ONNX file"),
])
def test_a_failed_build_leaves_nothing_behind(argv, needle, tmp_path, capsys):
    out = tmp_path / "a" / "b" / "out"
    assert main([a.format(out=out, tmp=tmp_path) for a in argv]) == 2
    assert needle in capsys.readouterr().err
    assert not (tmp_path / "a").exists() and not _staging_left(tmp_path)


def test_a_rebuild_replaces_the_whole_set_and_leaves_other_files_alone(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["build", "tiny-cnn", "-o", str(out)]) == 0
    assert oct(out.stat().st_mode & 0o777) != oct(0o700)  # as mkdir makes it, not mkdtemp
    (out / "notes.txt").write_text("mine")
    assert main(["build", "tiny-cnn", "-o", str(out), "--no-vm"]) == 0
    names = sorted(p.name for p in out.iterdir())
    assert names == ["build.json", "graph.json", "model.params", "model.so", "notes.txt"]
    assert not _staging_left(tmp_path)


@pytest.mark.subprocess
def test_ctrl_c_during_build_is_an_interrupt_and_keeps_the_previous_build(tiny_cnn, tmp_path):
    """SIGINT while TVM builds: 'interrupted', exit 130, the directory's previous build intact
    (no new model.so beside the old graph.json), no staging directory left."""
    out = tmp_path / "out"
    shutil.copytree(tiny_cnn, out)
    before = _digest(out)
    proc = subprocess.Popen([sys.executable, "-m", "minigraph", "build", "resnet18", "-o",
                             str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not _staging_left(out) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.5)  # inside the build (resnet18 takes several seconds more)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    assert "error: interrupted" in stderr and "internal error" not in stderr
    assert _digest(out) == before and not _staging_left(tmp_path)


def test_an_interrupt_tvm_reported_as_an_empty_runtime_error_stays_an_interrupt():
    from minigraph.measure.interrupt import interrupts_kept
    before = signal.getsignal(signal.SIGINT)  # SIG_IGN where the suite began as a background job
    with pytest.raises(KeyboardInterrupt):
        with interrupts_kept():
            try:
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(1)  # the handler raises here
            except KeyboardInterrupt:
                raise RuntimeError("") from None  # what TVM's FFI makes of it
    with pytest.raises(RuntimeError):  # no signal: a RuntimeError is what it is
        with interrupts_kept():
            raise RuntimeError("real")
    assert signal.getsignal(signal.SIGINT) == before  # the handler it found, given back


@pytest.mark.subprocess
def test_quick_diagnose_settings_and_explicit_options_win():
    from minigraph.cli import parser
    from minigraph.cli.diagnose import QUICK, _settings
    quick = _settings(parser().parse_args(["diagnose", "m.so", "--quick"]))
    assert (quick.processes, quick.rungs, quick.gap_repeat) == \
        (QUICK["processes"], QUICK["rungs"], QUICK["gap_repeat"])
    mixed = _settings(parser().parse_args(["diagnose", "m.so", "--quick", "--processes", "5"]))
    assert mixed.processes == 5 and mixed.rungs == QUICK["rungs"]
    full = _settings(parser().parse_args(["diagnose", "m.so"]))
    assert full.processes == DiagnoseSettings().processes and len(full.rungs) == 7


def test_a_long_diagnosis_hints_at_quick(capsys):
    import minigraph.cli.diagnose as cli_diagnose
    from minigraph.diagnose.estimate import Estimate
    cli_diagnose._hint(newline=False, quick=False)(Estimate(7.0, 140.0, 12.0, before_s=3.0))
    err = capsys.readouterr().err
    assert "hint: this diagnosis will take about 155 s in all (3 s to start, the ladder 140 s, " \
        "then 12 s)" in err
    full = DiagnoseSettings().processes * 7  # --quick runs 9 of the full ladder's processes
    assert f"`--quick` gives a first look in about {140 * 9 / full:.0f} s" in err
    cli_diagnose._hint(newline=False, quick=True)(Estimate(1.0, 18.0, 0.1))
    assert "--quick" not in capsys.readouterr().err
    # under a budget: the ladder is the budget, --quick a share of the planned rounds
    cli_diagnose._hint(newline=False, quick=False)(Estimate(7.0, 45.0, 22.0, before_s=3.0,
                                                            budget_s=45.0, planned_s=70.0))
    err = capsys.readouterr().err
    assert "about 70 s in all (3 s to start, the ladder up to its 45 s budget" in err
    assert f"`--quick` gives a first look in about {70 * 9 / full:.0f} s" in err


def test_a_mode_that_fails_keeps_the_modes_before_it(tiny_cnn):
    """A kernel that starts failing in the warm mode: the error carries the first-run samples,
    marked partial, for the CLI to save and show before it reports the error."""
    from minigraph.errors import MinigraphError
    from minigraph.profile.profiler import MeasurementError, measure
    from minigraph.results.profile import Settings
    from minigraph.runtime.debug import DebugExecutor
    base = DebugExecutor.from_files(tiny_cnn / "model.so", tiny_cnn / "graph.json")
    table = {op.func_name: op.fn for op in base.ops}
    calls = [0]
    victim = base.ops[1].func_name

    def breaks_later(*args):
        calls[0] += 1
        if calls[0] > 1:
            raise MinigraphError("kernel broke")
        table[victim](*args)
    ex = DebugExecutor(base.graph, {**table, victim: breaks_later}, module=None)
    with pytest.raises(MeasurementError, match="warm mode failed: op 1 .*kernel broke") as info:
        measure(ex, Settings(modes=("first-run", "warm", "e2e"), warm_repeat=2))
    prof = info.value.profile
    assert prof.partial and len(prof.samples["first-run"]) == len(base.ops)
    assert "warm" not in prof.samples and not prof.e2e_ns


def test_sigterm_turned_into_an_interrupt_exits_143():
    """128 + the signal, as a shell reports a process the signal ended (issue #24)."""
    from minigraph.measure import interrupt
    with pytest.raises(KeyboardInterrupt):
        with interrupt.terminate_as_interrupt():
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(1)
    assert interrupt.interrupt_exit_code() == 143
    assert interrupt.interrupt_message() == "terminated (SIGTERM)"
    interrupt._ARRIVED.clear()
    assert interrupt.interrupt_exit_code() == 130 and interrupt.interrupt_message() == \
        "interrupted"


def test_a_killed_builds_staging_area_is_removed_unless_still_locked(tmp_path):
    """An area whose build died outright (nobody holds its lock) goes; a live one stays."""
    import fcntl

    from minigraph.fileio.staging import PREFIX, remove_stale
    dead, live = tmp_path / f"{PREFIX}dead", tmp_path / f"{PREFIX}live"
    for area in (dead, live):
        (area / "files").mkdir(parents=True)
        (area / "work" / "lib0.o").parent.mkdir()
        (area / "work" / "lib0.o").write_bytes(b"\x7fELF")
    fd = os.open(live, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # another build, running
        assert remove_stale(tmp_path) == [dead]
        assert not dead.exists() and live.exists()
    finally:
        os.close(fd)


@pytest.mark.subprocess
def test_sigkill_during_build_leaves_nothing_the_next_build_keeps(tiny_cnn, tmp_path):
    """The build's process killed outright (the OOM killer's way): its staging area (with
    TVM's lib0.o in it, not in /tmp) is removed by the next build into the same place."""
    out, tmp = tmp_path / "out", tmp_path / "tmp"
    shutil.copytree(tiny_cnn, out)
    tmp.mkdir()
    before = _digest(out)
    env = dict(os.environ, TMPDIR=str(tmp))
    proc = subprocess.Popen([sys.executable, "-m", "minigraph", "build", "tiny-cnn", "-o",
                             str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)
    deadline = time.monotonic() + 120
    # killed once its area is set up (files/ and work/ made): an area still without them is
    # one another build may be making, spared for a minute by design (fileio/staging.py)
    while not any((a / "work").is_dir() for a in _staging_left(out)) and proc.poll() is None \
            and time.monotonic() < deadline:
        time.sleep(0.005)
    worker = psutil.Process(proc.pid).children()  # the CLI's watched child runs the build
    assert worker and _staging_left(out), "the build ended before it could be killed"
    worker[0].kill()
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 137 and "SIGKILL" in stderr, stderr
    assert _digest(out) == before  # the previous build is whole
    assert _staging_left(out) and not list(tmp.rglob("*.o"))  # left, but not in /tmp
    assert main(["build", "tiny-cnn", "-o", str(out), "--no-vm"]) == 0
    assert not _staging_left(tmp_path)


@pytest.mark.subprocess
def test_killing_the_cli_outright_ends_its_command_too(tiny_cnn, tmp_path):
    """SIGKILL to `minigraph profile` (the watcher): the command it runs gets SIGTERM (no
    orphan), so it still saves what it measured, marked partial."""
    out, tmp = tmp_path / "p.json", tmp_path / "tmp"
    tmp.mkdir()
    # the largest --repeat (results/profile.py LIMITS): 5 ops x 1000 x 2 ms a warm round
    with OnTerminal([sys.executable, "-m", "minigraph", "profile", str(tiny_cnn), "--mode",
                     "first-run", "--mode", "warm", "--repeat", "1000", "--json",
                     str(out)], env=dict(os.environ, TMPDIR=str(tmp))) as cmd:
        assert cmd.wait_for(b"warm", 120)  # the progress line: first-run measured, in warm
        child = psutil.Process(cmd.proc.pid).children()[0]
        cmd.proc.kill()
        try:
            child.wait(timeout=60)  # ended by the SIGTERM its parent's death sent it
        finally:
            if child.is_running():
                child.kill()
        cmd.finish(30)
    assert json.loads(out.read_text())["partial"] is True
    assert not list(tmp.iterdir())  # its in-flight record was unlinked as soon as opened
