"""Ctrl-C and SIGTERM end a measurement within a second, even inside native code (issue 49
item 4: `profile --mode warm --repeat 1000000000` ran 12 minutes and ignored `timeout`'s
SIGTERM): warm batches are taken in slices Python can interrupt, the supervisor kills a
measuring child that has not taken the stop within STOP_S, and what was measured is kept by
the partial-file rule (NAME.partial.EXT beside a file already there). Every count and budget
of profile and diagnose is bounded, and a value past its bound is refused with `error:`."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from minigraph.measure.inflight import read_record_at

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH",
                                                                               "")])}


def _phase(pid: int) -> str:
    """The phase in the in-flight record the supervisor ``pid`` holds open ('' if none yet)."""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return ""
    for fd in fds:
        path = f"/proc/{pid}/fd/{fd}"
        try:
            if "minigraph-inflight-" in os.readlink(path):
                record = read_record_at(path)
                return record.phase if record is not None else ""
        except OSError:
            continue
    return ""


def _wait_for_phase(proc: subprocess.Popen, text: str, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while text not in _phase(proc.pid):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, f"no '{text}' phase within {timeout_s} s"
        time.sleep(0.05)


@pytest.mark.subprocess
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_ends_a_warm_profile_at_the_largest_repeat_within_a_second(sig, tiny_cnn,
                                                                          tmp_path):
    """SIGTERM (or Ctrl-C) while time_evaluator runs the largest --repeat allowed: exit 143
    (130) within about a second, not when the batch ends; the earlier p.json kept,
    p.partial.json beside it with the samples taken (the batch cut short included)."""
    from minigraph.results.profile import LIMITS
    (tmp_path / "p.json").write_text('{"earlier": true}')
    proc = subprocess.Popen([sys.executable, "-m", "minigraph", "profile", str(tiny_cnn),
                             # one thread: what is tested is the slicing of time_evaluator;
                             # a 2-thread kernel beside busy neighbours stalls at the pool's
                             # barrier for longer than any slice (the supervisor then kills)
                             "--threads", "1",
                             "--mode", "warm", "--repeat", str(LIMITS["warm_repeat"][1]),
                             "--json", str(tmp_path / "p.json")], cwd=tmp_path, env=ENV,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for_phase(proc, "warm")
        time.sleep(0.5)  # inside op 0's first batch: 1000 repeats of at least 2 ms
        t0 = time.monotonic()
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=30)
        took = time.monotonic() - t0
    finally:
        proc.kill()
    assert proc.returncode == 128 + sig, err
    assert took < 1.5, (took, err)
    assert "the profile is partial (interrupted)" in err and "Traceback" not in err, err
    assert (tmp_path / "p.json").read_text() == '{"earlier": true}'
    doc = json.loads((tmp_path / "p.partial.json").read_text())
    assert doc["partial"] is True and len(doc["samples_ns"]["warm"][0]) > 0


def _supervise(body: str, preexec=None) -> subprocess.Popen:
    """The CLI's supervisor (cli/supervise.py, stop_s 0.5) around ``body``, the child's code,
    in a fresh interpreter (``preexec``: run in it before it starts): 'ready' is printed once
    the child runs."""
    script = textwrap.dedent("""
        import os, signal, sys, time
        from minigraph.cli.supervise import supervised
        from minigraph.measure.inflight import FLIGHT
        def child():
            print("ready", flush=True)
        {body}
        sys.exit(supervised(child, "test", stop_s=0.5))
        """).format(body=textwrap.indent(textwrap.dedent(body), "    "))
    return subprocess.Popen([sys.executable, "-c", script], env=ENV, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=preexec)


def _stop(proc: subprocess.Popen) -> tuple[float, str]:
    try:
        assert proc.stdout.readline() == "ready\n", proc.communicate()
        time.sleep(0.2)
        t0 = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
        return time.monotonic() - t0, err
    finally:
        proc.kill()


@pytest.mark.subprocess
def test_a_child_deaf_to_the_stop_is_killed_within_stop_s():
    """A child in native code sees no signal (here: SIGTERM blocked, as it stays pending while
    a kernel runs): killed after stop_s, said, 128 + the signal."""
    proc = _supervise("""
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
        FLIGHT.phase("the warm mode")
        time.sleep(60)
        return 0
    """)
    took, err = _stop(proc)
    assert proc.returncode == 143 and took < 1.5, (took, err)
    assert err.startswith("error: terminated (SIGTERM): minigraph test did not stop within "
                          "0.5 s (it was in the warm mode"), err
    assert "nothing it measured was saved" in err


@pytest.mark.subprocess
def test_a_signal_the_command_was_started_ignoring_stays_ignored():
    """Started with SIGINT ignored (a background job of a script): the child inherits that and
    a SIGINT is not forwarded, so the child is not killed for not taking it past stop_s;
    SIGTERM still ends it."""
    proc = _supervise("""
        time.sleep(60)
        return 0
    """, preexec=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    try:
        assert proc.stdout.readline() == "ready\n", proc.communicate()
        proc.send_signal(signal.SIGINT)
        time.sleep(1.2)  # past stop_s (0.5 s): had it been forwarded, the child was killed
        assert proc.poll() is None, proc.communicate()
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
        proc.kill()
    assert proc.returncode == 143 and err == "", err


@pytest.mark.subprocess
def test_a_child_that_took_the_stop_is_given_time_to_save():
    """A child that took the stop (its record marked, as measure/interrupt.py does) saves for
    longer than stop_s: waited for, and its own exit code is the command's."""
    proc = _supervise("""
        def saving(sig, frame):
            FLIGHT.interrupted(sig)
            time.sleep(1.5)  # writing what it measured
            os._exit(143)
        signal.signal(signal.SIGTERM, saving)
        time.sleep(60)
        return 0
    """)
    took, err = _stop(proc)
    assert proc.returncode == 143 and 1.4 < took < 5, (took, err)
    assert err == "", err


@pytest.mark.parametrize("argv, needle", [
    (["profile", "{m}", "--repeat", "1000000000"], "--repeat: expected an integer 1 to 1000"),
    (["profile", "{m}", "--repeat", "0"], "--repeat: expected an integer 1 to 1000"),
    (["profile", "{m}", "--warmups", "1001"], "--warmups: expected an integer 0 to 1000"),
    (["profile", "{m}", "--inrun-passes", "5000"], "--inrun-passes: expected an integer 1 to 1000"),
    (["profile", "{m}", "--budget-ms", "86400000"], "--budget-ms: expected an integer 1 to 60000"),
    (["profile", "{m}", "--precision", "nan"], "--precision: expected a number between 0 and 1"),
    (["profile", "{m}", "--precision", "1.5"], "--precision: expected a number between 0 and 1"),
    (["diagnose", "{m}", "--processes", "100000"], "--processes: expected an integer 1 to 100"),
    (["diagnose", "{m}", "--budget", "1e9"], "--budget: expected a number of seconds from 0 to 3600"),
    (["diagnose", "{m}", "--budget", "nan"], "--budget: expected a number of seconds"),
    (["diagnose", "{m}", "--steady-runs", "1000000"], "--steady-runs: expected an integer 0 to 1000"),
    (["diagnose", "{m}", "--gap-ms", "99999999"], "--gap-ms: expected an integer 0 to 60000"),
    (["diagnose", "{m}", "--gap-repeat", "100000"], "--gap-repeat: expected an integer 1 to 100"),
    (["diagnose", "{m}", "--gap-processes", "100000"], "--gap-processes: expected an integer 0 to 100"),
])
def test_a_count_or_budget_past_its_bound_is_refused(argv, needle, capsys):
    from minigraph.cli import main
    with pytest.raises(SystemExit) as info:
        main([a.replace("{m}", "out") for a in argv])
    err = capsys.readouterr().err
    assert info.value.code == 2 and err.startswith("error: ") and needle in err, err


def test_every_bound_is_named_in_the_help(capsys):
    from minigraph.cli import main
    for command, options in (("profile", ("--repeat", "--warmups", "--inrun-passes",
                                          "--budget-ms", "--precision")),
                             ("diagnose", ("--processes", "--budget", "--steady-runs",
                                           "--gap-ms", "--gap-repeat", "--gap-processes"))):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        entries = re.split(r"\n  (?=-)", capsys.readouterr().out)  # one per option
        for option in options:
            entry = " ".join(next(e for e in entries if e.startswith(option + " ")).split())
            assert re.search(r"\d to \d|between 0 and 1", entry), entry
