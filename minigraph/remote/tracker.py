"""Talking to TVM's RPC tracker (``python -m tvm.exec.rpc_tracker``): summary and device requests.

TVM's own ``tvm.rpc.TrackerSession`` retries a refused connection for 60 s and waits for a free
device forever, and it hides which server it handed out. A fleet tool needs to say at once that
the tracker is down, to wait for a free device with a deadline, and to name the device, so this
speaks the tracker's documented protocol itself with TVM's own constants and framing
(``tvm.rpc.base``: RPC_TRACKER_MAGIC, TrackerCode, sendjson/recvjson), every socket operation
under a timeout. Sessions are then opened with ``tvm.rpc.connect(url, port, matchkey)``, exactly
as ``TrackerSession.request`` does.
"""
from __future__ import annotations

import socket
import struct
import time
from dataclasses import dataclass

from ..errors import InputError, MinigraphError

# lazy: TVM's RPC tracker client (TVM: ~1.2 s to import) is imported where it is called;
# TVM-free commands load this module

CONNECT_TIMEOUT_S = 5.0


def parse_address(text: str, what: str = "--rpc-tracker") -> tuple[str, int]:
    """'HOST:PORT' -> (host, port); InputError naming the option otherwise."""
    host, sep, port = str(text).rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise InputError(f"{what} expects HOST:PORT (e.g. 127.0.0.1:9190), got '{text}'")
    return host.strip("[]"), int(port)


class NoFreeDevice(MinigraphError):
    """The tracker handed out no server under the key before the deadline."""


@dataclass(frozen=True)
class Grant:
    """A free server the tracker handed out: where it listens and the key that opens it."""

    host: str
    port: int
    matchkey: str

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


class Tracker:
    """One connection to the tracker (one pending request at a time: open one per device)."""

    def __init__(self, addr: tuple[str, int], timeout_s: float = CONNECT_TIMEOUT_S) -> None:
        from tvm.rpc import base
        self.addr, self._base = addr, base
        where = f"RPC tracker {addr[0]}:{addr[1]}"
        try:
            self._sock = socket.create_connection(addr, timeout=timeout_s)
        except OSError as err:
            raise MinigraphError(f"cannot reach the {where}: {err.strerror or err}; start it "
                                 "with `python -m tvm.exec.rpc_tracker --host HOST --port "
                                 f"{addr[1]}`") from None
        try:
            self._sock.sendall(struct.pack("<i", base.RPC_TRACKER_MAGIC))
            magic = struct.unpack("<i", base.recvall(self._sock, 4))[0]
        except OSError as err:
            self.close()
            raise MinigraphError(f"{where}: no handshake ({err})") from None
        if magic != base.RPC_TRACKER_MAGIC:
            self.close()
            raise MinigraphError(f"{addr[0]}:{addr[1]} is not a TVM RPC tracker")

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def __enter__(self) -> "Tracker":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, message: list, timeout_s: float | None):
        self._sock.settimeout(timeout_s)
        self._base.sendjson(self._sock, message)
        return self._base.recvjson(self._sock)

    def servers(self, key: str) -> list[str]:
        """Addresses ('host:port') of the servers registered under ``key``, busy or free."""
        try:
            reply = self._call([self._base.TrackerCode.SUMMARY], CONNECT_TIMEOUT_S)
        except OSError as err:
            raise MinigraphError(f"RPC tracker {self.addr[0]}:{self.addr[1]}: no summary "
                                 f"({err})") from None
        info = reply[1].get("server_info", []) if reply and reply[0] == 0 else []
        return [f"{i['addr'][0]}:{i['addr'][1]}" for i in info
                if i.get("key") == f"server:{key}" and i.get("addr")]

    def request(self, key: str, wait_s: float, priority: int = 1) -> Grant:
        """Waits up to ``wait_s`` for a free server under ``key`` (TVM's REQUEST call)."""
        start = time.monotonic()
        try:
            reply = self._call([self._base.TrackerCode.REQUEST, key, "", priority], wait_s)
        except TimeoutError:
            raise NoFreeDevice(f"no free device under key '{key}' within {wait_s:.3g} s") \
                from None
        except OSError as err:
            raise MinigraphError(f"RPC tracker {self.addr[0]}:{self.addr[1]} dropped the "
                                 f"request after {time.monotonic() - start:.1f} s "
                                 f"({err})") from None
        if not reply or reply[0] != self._base.TrackerCode.SUCCESS:
            raise MinigraphError(f"RPC tracker refused the request for '{key}': {reply}")
        host, port, matchkey = reply[1]
        return Grant(str(host), int(port), str(matchkey))
