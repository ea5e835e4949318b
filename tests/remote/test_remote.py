"""Remote devices through TVM's real RPC tracker: a tracker and `minigraph rpc-server`s started
on 127.0.0.1 (free ports, each in its own session, always stopped), jobs run on several devices
at once, one server killed mid-job, and cleanup checked (no processes, no uploaded files)."""
from __future__ import annotations

import gc
import json
import os
import selectors
import signal
import socket
import struct
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import cli_runner
import cloudpickle  # noqa: F401 - tvm.rpc.Server needs it: the test extra installs it
import psutil
import pytest
import tornado  # noqa: F401 - TVM's RPC tracker needs it: the test extra installs it

from minigraph.cli import main  # noqa: E402
from minigraph.diagnose.attribution import attribution_of  # noqa: E402
from minigraph.errors import InputError  # noqa: E402
from minigraph.remote import gate  # noqa: E402
from minigraph.remote.spec import JobSpec  # noqa: E402
from minigraph.remote.tracker import Tracker, parse_address  # noqa: E402
from minigraph.analysis.fleet import standing  # noqa: E402
from minigraph.report.fleet import outlier_line  # noqa: E402
from minigraph.results.fleet import FORMAT as FLEET, Fleet  # noqa: E402
from minigraph.results.formats import sniff  # noqa: E402

pytestmark = [pytest.mark.rpc, pytest.mark.subprocess]

ROOT = Path(__file__).resolve().parents[2]
QUICK = ["--mode", "first-run", "--mode", "e2e", "--quiet"]  # the fastest real profile


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Service:
    """A process in its own session, stopped (then its whole group killed) at teardown."""

    def __init__(self, cmd: list[str], env: dict | None = None) -> None:
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     env=env, text=True, start_new_session=True)

    def tree(self) -> list[psutil.Process]:
        try:
            return [psutil.Process(self.proc.pid)] + \
                psutil.Process(self.proc.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            return []

    def line(self, timeout_s: float) -> str:
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        if not sel.select(timeout_s):
            raise AssertionError(f"no output from {self.proc.args} within {timeout_s} s")
        return self.proc.stdout.readline()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)  # whatever is left of its session
        except ProcessLookupError:
            pass
        self.proc.wait()
        self.proc.stdout.close()


def _gone(procs: list[psutil.Process], timeout_s: float = 15.0) -> list[psutil.Process]:
    _, alive = psutil.wait_procs(procs, timeout=timeout_s)
    return [p for p in alive if p.status() != psutil.STATUS_ZOMBIE]


@pytest.fixture(scope="module")
def tracker():
    port = _free_port()
    svc = Service([sys.executable, "-m", "tvm.exec.rpc_tracker", "--host", "127.0.0.1",
                   "--port", str(port), "--port-end", str(port + 1), "--silent"])
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                Tracker(("127.0.0.1", port)).close()
                break
            except Exception:
                if time.monotonic() > deadline or svc.proc.poll() is not None:
                    raise
                time.sleep(0.3)
        yield f"127.0.0.1:{port}"
    finally:
        os.killpg(svc.proc.pid, signal.SIGKILL)  # TVM's tracker: no graceful stop is needed
        svc.proc.wait()
        svc.proc.stdout.close()


def start_servers(tracker: str, key: str, n: int, tmp: Path) -> list[Service]:
    """n `minigraph rpc-server`s under ``key``, each with its own TMPDIR; registered."""
    servers = []
    for i in range(n):
        port = _free_port()
        env = dict(os.environ, TMPDIR=str(tmp / f"server{i}"),
                   PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
        (tmp / f"server{i}").mkdir(parents=True)
        servers.append(Service([sys.executable, "-m", "minigraph", "rpc-server", "--tracker",
                                tracker, "--key", key, "--port", str(port), "--port-end",
                                str(port + 1)], env))
    try:
        for s in servers:
            assert "listening on 127.0.0.1:" in s.line(90)
        wait_registered(tracker, key, n)
    except BaseException:
        for s in servers:
            s.stop()
        raise
    return servers


def wait_registered(tracker: str, key: str, n: int, timeout_s: float = 60) -> None:
    """Until the tracker lists ``n`` servers under ``key`` (a server registers again only
    after its last session has ended)."""
    deadline = time.monotonic() + timeout_s
    with Tracker(parse_address(tracker)) as t:
        while len(t.servers(key)) < n:
            assert time.monotonic() < deadline, "servers never registered with the tracker"
            time.sleep(0.3)


def stop_all(servers: list[Service]) -> None:
    """Stops every server; none may leave a process or its work root behind."""
    trees = [p for s in servers for p in s.tree()]
    for s in servers:
        s.stop()
    assert not _gone(trees), "processes left behind"


@pytest.fixture(scope="module")
def fleet(tracker, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("fleet")
    servers = start_servers(tracker, "k", 2, tmp)
    try:
        yield tracker, servers, tmp
    finally:
        stop_all(servers)
    assert not [p for d in tmp.iterdir() for p in d.iterdir()], "work roots left behind"


def _rpc(tracker: str, key: str = "k", devices: str = "2") -> list[str]:
    return ["--rpc-tracker", tracker, "--rpc-key", key, "--rpc-devices", devices]


def _sessions_closed(fl: Fleet) -> None:
    """Every session's directory (its uploads) is gone once the job is done."""
    dirs = [Path(d.device["workdir"]) for d in fl.devices if d.device.get("workdir")]
    deadline = time.monotonic() + 15
    while any(d.exists() for d in dirs) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert dirs and not any(d.exists() for d in dirs), [list(d.iterdir()) for d in dirs
                                                        if d.exists()]


def test_profile_on_two_devices_then_show_and_compare(fleet, tiny_cnn, tmp_path, capsys):
    tracker, servers, _ = fleet
    out = tmp_path / "r.json"
    assert main(["profile", str(tiny_cnn), *QUICK, *_rpc(tracker), "--json", str(out)]) == 0
    data = out.read_bytes()
    assert sniff(data) == FLEET  # the registry tells the document's format
    fl = Fleet.from_dict(json.loads(data))
    assert [d.ok for d in fl.devices] == [True, True], [d.error for d in fl.devices]
    assert len({d.address for d in fl.devices}) == 2  # distinct servers
    assert {d.device["server_pid"] for d in fl.devices} == {s.proc.pid for s in servers}
    for d, prof in fl.profiles():
        assert len(prof.samples["first-run"]) == len(prof.ops) > 1  # per-op rows
        assert prof.env["process"]["pid"] not in (d.device["server_pid"], os.getpid())
        assert d.environment["cpu"]["logical_cores"] >= 1
        assert len(prof.speed["samples"]) >= 2  # the device's own speed probe, per mode
    _sessions_closed(fl)
    capsys.readouterr()
    assert main(["show", str(out)]) == 0
    shown = capsys.readouterr().out
    assert "Per-op first-run medians across devices" in shown and "outlier:" in shown
    assert all(d.address in shown for d in fl.devices)
    assert main(["compare", str(out), "--mode", "first-run"]) == 0
    assert "against the pooled samples of the others" in capsys.readouterr().out
    with pytest.raises(InputError, match="fleet result"):
        main(["--debug", "compare", str(out), str(out)])


def test_diagnose_on_all_devices(fleet, tiny_cnn, tmp_path, capsys):
    tracker, _, _ = fleet
    out = tmp_path / "d.json"
    rc = main(["diagnose", str(tiny_cnn), *_rpc(tracker, devices="all"), "--processes", "1",
               "--rungs", "a,f", "--gap-ms", "0", "--no-protocols", "--quiet",
               "--json", str(out)])
    assert rc == 0, capsys.readouterr()
    fl = Fleet.from_dict(json.loads(out.read_bytes()))
    assert fl.requested == 2 and all(d.ok for d in fl.devices)
    for _, diag in fl.diagnoses():
        assert set(diag.runs) == {"a", "f"} and attribution_of(diag) is not None
        assert set(diag.probes) == {"a", "f"}  # each device worker timed its speed probe
    capsys.readouterr()
    assert main(["show", str(out)]) == 0
    assert "Where each device's first run goes" in capsys.readouterr().out
    _sessions_closed(fl)


def test_run_on_two_devices_gives_the_same_outputs(fleet, tiny_cnn, tmp_path, capsys):
    tracker, _, _ = fleet
    out = tmp_path / "run.json"
    assert main(["run", str(tiny_cnn), *_rpc(tracker), "--json", str(out)]) == 0
    assert "outputs: identical on every device" in capsys.readouterr().out
    fl = Fleet.from_dict(json.loads(out.read_bytes()))
    assert all(d.result["outputs"][0].startswith("output 0") for d in fl.devices)


def test_artifacts_the_device_cannot_load_are_per_device_errors(fleet, tiny_cnn, tmp_path,
                                                                capsys):
    tracker, _, _ = fleet
    arm = tmp_path / "arm"
    arm.mkdir()
    for f in ("model.so", "graph.json", "model.params"):
        (arm / f).write_bytes((tiny_cnn / f).read_bytes())
    with open(arm / "model.so", "r+b") as f:  # ELF e_machine: AArch64, as if cross-built
        f.seek(18)
        f.write((183).to_bytes(2, "little"))
    out = tmp_path / "arm.json"
    assert main(["run", str(arm), *_rpc(tracker), "--json", str(out)]) == 1
    assert "no device produced a result" in capsys.readouterr().err
    fl = Fleet.from_dict(json.loads(out.read_bytes()))
    assert all("built for aarch64" in d.error for d in fl.devices), fl.devices
    _sessions_closed(fl)


def test_tracker_down_and_key_without_devices(fleet, tiny_cnn, capsys):
    tracker, _, _ = fleet
    down = f"127.0.0.1:{_free_port()}"
    assert main(["run", str(tiny_cnn), *_rpc(down, devices="1")]) == 1
    assert "cannot reach the RPC tracker" in capsys.readouterr().err
    assert main(["run", str(tiny_cnn), *_rpc(tracker, "nobody", "all")]) == 1
    assert "no RPC server is registered under key 'nobody'" in capsys.readouterr().err
    start = time.monotonic()
    assert main(["run", str(tiny_cnn), *_rpc(tracker, "nobody", "1"), "--rpc-wait", "1"]) == 1
    assert time.monotonic() - start < 30
    assert "no free device under key 'nobody' within 1 s" in capsys.readouterr().out


def _server_running_a_job(servers: list[Service], timeout_s: float):
    """The first server with a job process under it, and its whole process tree."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for s in servers:
            tree = s.tree()
            if any("minigraph.remote.job" in " ".join(_cmdline(p)) for p in tree):
                return s, tree
        time.sleep(0.1)
    raise AssertionError("no job started on any server")


def _cmdline(p: psutil.Process) -> list[str]:
    try:
        return p.cmdline()
    except psutil.Error:
        return []


def test_server_confines_uploads_and_downloads_to_the_session(fleet, tmp_path):
    """TVM's own upload/download take any path; a minigraph server refuses escapes."""
    from tvm import rpc
    tracker, _, _ = fleet
    with Tracker(parse_address(tracker)) as t:
        grant = t.request("k", 60)
    sess = rpc.connect(grant.host, grant.port, grant.matchkey)
    try:
        for name in (str(tmp_path / "escaped"), "../escaped"):
            with pytest.raises(Exception, match="outside the session directory"):
                sess.upload(bytearray(b"x"), name)
        with pytest.raises(Exception, match="outside the session directory"):
            sess.download("/etc/hostname")
        sess.upload(bytearray(b"inside"), "inside.txt")
        assert bytes(sess.download("inside.txt")) == b"inside"
    finally:
        del sess
        gc.collect()  # ends the session now (see _refused)
    assert not (tmp_path / "escaped").exists()


def _session(tracker: str, **connect):
    """A TVM RPC session with one of the module's servers (close it with ``del``)."""
    from tvm import rpc
    with Tracker(parse_address(tracker)) as t:
        grant = t.request("k", 60)
    return rpc.connect(grant.host, grant.port, grant.matchkey, **connect)


def _refused(call, what: str) -> str:
    """``call()`` must be refused by the server's gate; the error text. The caught error's
    traceback holds the remote function (and so the session) in a reference cycle: a test
    that used a session runs the collector after dropping it, or the server stays busy until
    the collector runs by itself (under pytest-xdist the kill-a-server test's second device
    then waited 60 s for it)."""
    with pytest.raises(Exception, match="minigraph rpc-server refused") as err:
        call()
    assert what in str(err.value)
    return str(err.value)


def test_every_other_global_function_is_refused(fleet, tiny_cnn, tmp_path):
    """Issue 49: the escapes TVM's own server allows any peer, replayed against a minigraph
    server; each is refused before TVM sees it, and nothing it would have done is done."""
    from minigraph.remote.client import _call
    from minigraph.remote.server import IDENTIFY
    tracker, _, _ = fleet
    written, marker = tmp_path / "written.params", tmp_path / "ran"
    script = bytearray(f"#!/bin/sh\ntouch {marker}\n".encode())
    escapes = [  # (global function, its arguments): each worked on TVM's own server
        ("ffi.Module.load_from_file.so", ("/lib/x86_64-linux-gnu/libm.so.6", "so")),
        ("runtime.LoadParamsFromFile", (str(tiny_cnn / "model.params"),)),  # + SaveParams:
        ("runtime.SaveParams", ()),                                          # any file read back
        ("runtime.SaveParamsToFile", ((), str(written))),
        ("ffi.Module.load_from_file.ll", ("/etc/passwd", "ll")),  # its error quoted the file
        ("rpc.PopenSession", (script,)),                          # ran the script with /bin/sh
        ("ffi.FunctionRemoveGlobal", (IDENTIFY,)),
        ("tvm.rpc.server.load_module", ("model.so",)),
        ("tvm.rpc.server.workpath", ("/etc/passwd",)),
    ]
    sess = _session(tracker)
    try:
        texts = [_refused(lambda: sess.get_function(name)(*args), repr(name))
                 for name, args in escapes]
        sess.upload(str(tiny_cnn / "model.so"), "model.so")  # the client's own upload works
        texts.append(_refused(lambda: sess.load_module("model.so"), "tvm.rpc.server.load_module"))
        texts.append(_refused(lambda: sess.download_linked_module("model.so"),
                              "tvm.rpc.server.download_linked_module"))
        texts.append(_refused(lambda: sess.listdir("."), "tvm.rpc.server.listdir"))
        assert json.loads(_call(sess, IDENTIFY))["device"]["session_pid"]  # not removed
        sess.remove("model.so")
    finally:
        del sess
        gc.collect()  # ends the session now (see _refused)
    time.sleep(0.5)  # a script started by the server would have run by now
    assert not written.exists() and not marker.exists()
    passwd = [ln for ln in Path("/etc/passwd").read_text().splitlines() if ln.strip()]
    assert not [ln for ln in passwd for t in texts if ln in t], "a refusal quoted /etc/passwd"
    with pytest.raises(Exception, match="refused a session constructor"):
        _session(tracker, session_constructor_args=["rpc.PopenSession", script])
    time.sleep(0.5)
    assert not marker.exists()


class RawPeer:
    """A hand-rolled RPC client in TVM's framing (rpc_reference.h: u64 length, i32 RPCCode,
    packed arguments), for the requests TVM's own client never sends but any peer can."""

    def __init__(self, tracker: str) -> None:
        from tvm.rpc import base
        with Tracker(parse_address(tracker)) as t:
            grant = t.request("k", 60)
        self.sock = socket.create_connection((grant.host, grant.port), timeout=60)
        key = f"client:{grant.matchkey}".encode()
        self.sock.sendall(struct.pack("<ii", base.RPC_MAGIC, len(key)) + key)
        assert struct.unpack("<i", base.recvall(self.sock, 4))[0] == base.RPC_CODE_SUCCESS
        base.recvall(self.sock, struct.unpack("<i", base.recvall(self.sock, 4))[0])

    def send(self, code: int, body: bytes = b"") -> tuple[int, bytes]:
        """One request; the reply's RPCCode and the rest of its packet."""
        payload = struct.pack("<i", code) + body
        self.sock.sendall(struct.pack("<Q", len(payload)) + payload)
        return self.reply()

    def reply(self) -> tuple[int, bytes]:
        packet = gate.read_packet(self.sock, None)
        assert packet is not None, "the server closed the session"
        return struct.unpack_from("<i", packet, 8)[0], bytes(packet[12:])

    def close(self) -> None:
        self.sock.close()


def _str_arg(text: str) -> bytes:
    return struct.pack("<iQ", gate.RAW_STR, len(text)) + text.encode()


RPC_OBJECT_REF = 128 - 13  # src/runtime/rpc/rpc_session.h: kRuntimeRPCObjectRef, a remote object


def _tensor(address: int, nbytes: int) -> bytes:
    """A DLTensor as RPCReference::SendDLTensor writes it: a CPU uint8 vector at ``address``."""
    return struct.pack("<QiiiBBHqQQ", address, 1, 0, 1, 1, 8, 1, nbytes, 0, nbytes)


def test_raw_requests_past_the_allowlist_are_refused(fleet):
    """A peer need not use TVM's client: raw memory copies, forged function handles, remote
    objects as arguments, replies sent to the server, malformed and oversized packets are
    answered by the gate (kException) and never reach TVM; the session keeps serving."""
    from minigraph.remote.server import IDENTIFY
    tracker, _, _ = fleet
    peer = RawPeer(tracker)
    try:
        assert peer.send(gate.INIT_SERVER, struct.pack("<Q", 5) + b"0.8.0" +
                         struct.pack("<i", 0))[0] == gate.RETURN
        code, body = peer.send(gate.GET_GLOBAL_FUNC, struct.pack("<i", 1) + _str_arg(IDENTIFY))
        assert code == gate.RETURN
        handle = struct.unpack_from("<iiQ", body)[2]
        forged = handle + 64
        refused = {  # what: (RPCCode, body)
            "kCopyToRemote": (7, _tensor(0x1000, 8) + b"\x41" * 8),  # would write at 0x1000
            "kCopyFromRemote": (6, _tensor(0x1000, 8)),              # would read at 0x1000
            "kDevAllocData": (13, struct.pack("<i", 0)),
            "kReturn": (gate.RETURN, struct.pack("<i", 0)),  # would end TVM's loop in error
            "a call through a function handle": (gate.CALL_FUNC, struct.pack("<Qi", forged, 0)),
            "freeing a handle": (gate.FREE_HANDLE, struct.pack("<iiQ", 1, gate.OPAQUE_PTR,
                                                               forged)),
            "an argument of type index 7": (gate.CALL_FUNC, struct.pack("<Qii", handle, 1, 7) +
                                            _tensor(0x1000, 8)[:-8]),
            "an argument of type index 115": (gate.CALL_FUNC, struct.pack(  # RPCObjectRef
                "<QiiIQ", handle, 1, RPC_OBJECT_REF, RPC_OBJECT_REF, 0x1000)),
            "a remote object": (gate.CALL_FUNC, struct.pack(  # the same, dressed as a string
                "<QiiIQ", handle, 1, gate.STR, RPC_OBJECT_REF, 0x1000)),
            "an address as an argument": (gate.CALL_FUNC, struct.pack("<QiiQ", handle, 1,
                                                                     gate.OPAQUE_PTR, 0x1000)),
            "a malformed packet": (gate.GET_GLOBAL_FUNC, struct.pack("<i", 1) +
                                   _str_arg(IDENTIFY)[:-3]),
            "a session constructor": (gate.INIT_SERVER, struct.pack("<Q", 5) + b"0.8.0" +
                                      struct.pack("<i", 1) + _str_arg("rpc.PopenSession")),
        }
        for what, (code, body) in refused.items():
            reply, text = peer.send(code, body)
            assert reply == gate.EXCEPTION and what.encode() in text, (what, text)
        code, body = peer.send(gate.CALL_FUNC, struct.pack("<Qi", handle, 0))
        assert code == gate.RETURN and b'"device"' in body  # the allowed call still works
        assert peer.send(gate.FREE_HANDLE, struct.pack("<iiQ", 1, gate.OPAQUE_PTR,
                                                       handle))[0] == gate.RETURN
        code, _ = peer.send(gate.CALL_FUNC, struct.pack("<Qi", handle, 0))  # freed: not given
        assert code == gate.EXCEPTION
        peer.sock.sendall(struct.pack("<Q", gate.MAX_PACKET_BYTES + 1))
        code, text = peer.reply()
        assert code == gate.EXCEPTION and b"a packet of" in text
        assert peer.sock.recv(1) == b""  # a stream it cannot read past: the session ends
    finally:
        peer.close()


def test_a_plain_tvm_server_is_named_as_such(fleet, tiny_cnn, capsys):
    """A device key served by TVM's own rpc_server (no minigraph functions): a clear error."""
    from tvm import rpc
    tracker, _, _ = fleet
    port = _free_port()
    server = rpc.Server("127.0.0.1", port, port + 1, tracker_addr=parse_address(tracker),
                        key="plain", silent=True)
    try:
        assert main(["run", str(tiny_cnn), *_rpc(tracker, "plain", "1")]) == 1
        assert "not a minigraph rpc-server" in capsys.readouterr().out
    finally:
        server.terminate()


def test_job_spec_refuses_paths_and_unknown_fields():
    with pytest.raises(InputError, match="plain file name"):
        JobSpec("profile", "../../etc/passwd", None, None)
    with pytest.raises(InputError, match="plain file name"):
        JobSpec("run", "model.so", "/abs/graph.json", None)
    with pytest.raises(InputError, match="unknown fields"):
        JobSpec.from_json(json.dumps({"kind": "run", "lib": "model.so", "graph": None,
                                      "params": None, "command": "rm -rf /"}))
    spec = JobSpec("diagnose", "model.so", "graph.json", None, settings={"processes": 1})
    assert JobSpec.from_json(spec.to_json()) == spec


def test_fleet_documents_are_validated():
    with pytest.raises(InputError, match="not a minigraph fleet"):
        Fleet.from_dict({"format": "minigraph-profile/1"})
    doc = {"format": "minigraph-fleet/1", "kind": "profile", "tracker": "h:1", "key": "k",
           "model": "m", "requested": 1,
           "devices": [{"index": 0, "result": {"format": "minigraph-profile/1", "ops": 3}}]}
    with pytest.raises(InputError, match=r"devices\[0\]\.result"):
        Fleet.from_dict(doc)
    doc["devices"][0] = {"index": 0, "error": "no free device"}
    assert Fleet.from_dict(doc).devices[0].error == "no free device"


def test_outlier_is_the_device_furthest_from_the_others_median():
    four = standing({0: 100.0, 1: 102.0, 2: 150.0, 3: 99.0}, "e2e")
    assert four.ratios[2] == pytest.approx(150 / 100)
    line = outlier_line(four, {i: f"d{i}" for i in range(4)})
    assert "device 2 (d2)" in line and "slower" in line
    assert "none" in outlier_line(standing({0: 100.0, 1: 101.0}, "e2e"), {0: "a", 1: "b"})
    two = outlier_line(standing({0: 100.0, 1: 300.0}, "e2e"), {0: "a", 1: "b"})
    assert "device 1 (b): e2e 3x" in two and "slower" in two  # of two, the slower one


def test_rpc_server_listens_on_localhost_by_default():
    from minigraph.cli import parser
    args = parser().parse_args(["rpc-server", "--tracker", "h:9190", "--key", "k"])
    assert args.host == "127.0.0.1"


def test_killing_one_server_mid_job_keeps_the_others_result(fleet, tiny_cnn, tmp_path):
    """Last in this file: it kills one of the module's servers (the fixture stops the rest)."""
    tracker, servers, roots = fleet
    out = tmp_path / "r.json"
    # both devices free again after the tests before (the client starts fast, forked)
    wait_registered(tracker, "k", len(servers))
    with ThreadPoolExecutor(1) as pool:  # the client runs while this thread kills a server
        client = pool.submit(cli_runner.run, ["profile", tiny_cnn, *QUICK, *_rpc(tracker),
                                              "--json", out], timeout=180)
        victim, tree = _server_running_a_job(servers, 90)
        os.kill(victim.proc.pid, signal.SIGKILL)  # the device drops: no chance to clean up
        done = client.result(timeout=200)
    stdout = done.stdout
    assert done.returncode == 0, done.stderr
    assert not _gone(tree), "the killed server left processes behind"
    root = [p for p in (roots / f"server{servers.index(victim)}").iterdir()]
    assert not root, f"the killed server left files: {root}"
    fl = Fleet.from_dict(json.loads(out.read_bytes()))
    dead = [d for d in fl.devices if d.device.get("server_pid") == victim.proc.pid]
    alive = [d for d in fl.devices if d not in dead]
    assert len(dead) == 1 and len(alive) == 1
    assert not dead[0].ok and "dropped out during the profile job" in dead[0].error
    assert alive[0].ok and len(alive[0].result["samples_ns"]["first-run"]) > 1
    assert "error: device" in stdout and "ok (" in stdout
    _sessions_closed(Fleet(fl.kind, "", "", "", 1, devices=alive))
