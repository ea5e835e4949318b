"""The session gate: an allowlist in front of TVM's RPC server, enforced on the wire.

TVM's RPC server serves whatever a peer asks (``RPCEndpoint::EventHandler``,
src/runtime/rpc/rpc_endpoint.cc): ``kGetGlobalFunc`` resolves any registered global function
(``LocalSession::GetFunction``: a registry lookup with no hook to filter it), ``kCallFunc`` calls
whatever address the peer sends as a function handle, ``kFreeHandle`` drops a reference at any
address, ``kCopyToRemote`` / ``kCopyFromRemote`` write and read raw memory at a pointer the peer
chooses, and ``kInitServer`` may name any global as the session's constructor
(``rpc.PopenSession`` runs a program the peer sent). Shadowing globals in the registry could not
close the last four, so each session's socket goes through this gate instead: a relay, in the
session process, between the peer and one end of a socket pair whose other end TVM's
``ServerLoop`` serves. It reads whole packets in ``RPCReference``'s framing
(src/runtime/rpc/minrpc/rpc_reference.h: u64 length, i32 ``RPCCode``, packed arguments) and
passes only

- ``kInitServer`` without a constructor (TVM's ``LocalSession``), and ``kShutdown``;
- ``kGetGlobalFunc`` of a name on the allowlist;
- ``kCallFunc`` through a handle TVM gave this peer for such a name, with plain arguments
  (None, numbers, strings, bytes: no handle, tensor, device or remote object);
- ``kFreeHandle`` of such a handle, once per reference given.

Anything else is answered by the gate itself with TVM's ``kException`` packet: TVM never reads
it, so it has no side effect, and the refusal quotes no argument (no file is opened to say no).
"""
from __future__ import annotations

import socket
import struct
import threading
from collections import Counter, deque
from contextlib import suppress
from dataclasses import dataclass

from ..errors import MinigraphError

# RPCCode (rpc_reference.h)
SHUTDOWN, INIT_SERVER, CALL_FUNC, RETURN, EXCEPTION = 1, 2, 3, 4, 5
GET_GLOBAL_FUNC, FREE_HANDLE = 9, 10
REFUSED_CODES = {0: "kNone", 4: "kReturn", 5: "kException", 6: "kCopyFromRemote",
                 7: "kCopyToRemote", 8: "kCopyAck", 11: "kDevSetDevice", 12: "kDevGetAttr",
                 13: "kDevAllocData", 14: "kDevFreeData", 15: "kDevStreamSync",
                 16: "kCopyAmongRemote", 17: "kDevAllocDataWithScope", 18: "kDevCreateStream",
                 19: "kDevFreeStream", 20: "kDevSetStream", 21: "kDevGetCurrentStream"}

# TVM-FFI type indexes (tvm/ffi/c_api.h) of the argument kinds the gate reads
NONE, INT, BOOL, FLOAT, OPAQUE_PTR, RAW_STR, BYTE_ARRAY_PTR = 0, 1, 2, 3, 4, 8, 9
SMALL_STR, SMALL_BYTES, STR, BYTES = 11, 12, 65, 66

# one request is one packet (an upload is a single packet): a larger one ends the session,
# since the stream cannot be read past it without reading it
MAX_PACKET_BYTES = 1 << 32
MAX_ARGS = 64


class Refused(MinigraphError):
    """A request the gate does not pass; the message goes back to the peer as ``kException``."""

    def __init__(self, what: str) -> None:
        super().__init__(f"minigraph rpc-server refused {what} (docs/security.md)")


@dataclass(frozen=True)
class Handle:
    """An ``kTVMFFIOpaquePtr`` argument: an address in the server process."""

    value: int


@dataclass(frozen=True)
class Admitted:
    """A request that passes: whether TVM answers it, and the function it asks for, if any."""

    replies: bool
    function: str | None = None


class _Reader:
    """One packet's body, read in ``RPCReference``'s order; ``Refused`` when it runs out."""

    def __init__(self, data: memoryview) -> None:
        self.data, self.pos = data, 0

    def take(self, n: int) -> memoryview:
        if not 0 <= n <= len(self.data) - self.pos:
            raise Refused("a malformed packet")
        self.pos += n
        return self.data[self.pos - n:self.pos]

    def number(self, fmt: str) -> int:
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0]

    def end(self) -> None:
        if self.pos != len(self.data):  # TVM would stop mid-packet and end the session
            raise Refused("a malformed packet")


def _value(r: _Reader) -> object:
    """One argument as ``RPCReference::RecvPackedSeq`` reads it, if it is a plain value."""
    kind = r.number("<i")
    if kind == NONE:
        return None
    if kind in (INT, BOOL, FLOAT):
        return r.number("<q")
    if kind == OPAQUE_PTR:
        return Handle(r.number("<Q"))
    if kind in (RAW_STR, BYTE_ARRAY_PTR):
        data = r.take(r.number("<Q"))
        return bytes(data).decode("utf-8", "replace") if kind == RAW_STR else data
    if kind in (SMALL_STR, SMALL_BYTES, STR, BYTES):
        inner = r.number("<I")  # ReadFFIAny: what TVM makes of it (or an RPCObjectRef)
        if inner not in (STR, BYTES):
            raise Refused("a remote object as an argument")
        data = r.take(r.number("<Q"))
        return bytes(data).decode("utf-8", "replace") if inner == STR else data
    raise Refused(f"an argument of type index {kind} (only None, numbers, strings and bytes "
                  "are passed)")


def _arguments(r: _Reader) -> list[object]:
    count = r.number("<i")
    if not 0 <= count <= MAX_ARGS:
        raise Refused("a malformed packet")
    return [_value(r) for _ in range(count)]


def _shown(name: str) -> str:
    return repr(name[:120] + ("..." if len(name) > 120 else ""))


def exception_packet(message: str) -> bytes:
    """TVM's ``kException`` packet (``RPCReference::ReturnException``) carrying ``message``."""
    text = message.encode("utf-8", "replace").replace(b"\0", b"?")
    body = struct.pack("<iiiQ", EXCEPTION, 1, RAW_STR, len(text)) + text
    return struct.pack("<Q", len(body)) + body


def _recv_into(sock: socket.socket, view: memoryview) -> bool:
    """Fills ``view``; False if the stream ended before the first byte, ConnectionError after."""
    got = 0
    while got < len(view):
        n = sock.recv_into(view[got:])
        if n == 0:
            if got == 0:
                return False
            raise ConnectionError("the stream ended mid-packet")
        got += n
    return True


def read_packet(sock: socket.socket, limit: int | None) -> bytearray | None:
    """One whole packet (u64 length + body), or None at the end of the stream."""
    head = bytearray(8)
    if not _recv_into(sock, memoryview(head)):
        return None
    (size,) = struct.unpack("<Q", head)
    if limit is not None and size > limit:
        raise Refused(f"a packet of {size} bytes (more than {limit})")
    packet = bytearray(8 + size)
    packet[:8] = head
    if size and not _recv_into(sock, memoryview(packet)[8:]):
        raise ConnectionError("the stream ended mid-packet")
    return packet


class Gate:
    """One session's relay (see the module docstring); ``start`` returns the socket TVM serves.

    Two threads: requests (peer -> TVM: each admitted or refused) and replies (TVM -> peer:
    noting the function handles TVM gives). TVM's server answers one request at a time, in
    order, so the n-th reply answers the n-th request passed."""

    def __init__(self, peer: socket.socket, allowed: frozenset[str]) -> None:
        self.peer, self.allowed = peer, allowed
        self._tvm, self._served = socket.socketpair()  # the gate's end, TVM's end
        self._held: Counter[int] = Counter()  # handle -> references TVM gave this peer
        self._asked: deque[str | None] = deque()  # per request passed: the function asked for
        self._held_lock = threading.Lock()
        self._peer_lock = threading.Lock()  # one whole packet at a time to the peer

    def start(self) -> socket.socket:
        for run in (self._requests, self._replies):
            threading.Thread(target=run, daemon=True, name=f"rpc-gate{run.__name__}").start()
        return self._served

    def _to_peer(self, packet: bytes | bytearray) -> None:
        with self._peer_lock:
            self.peer.sendall(packet)

    def _requests(self) -> None:
        try:
            while (packet := read_packet(self.peer, MAX_PACKET_BYTES)) is not None:
                try:
                    admitted = self.admit(memoryview(packet)[8:])
                except Refused as why:
                    self._to_peer(exception_packet(str(why)))
                    continue
                if admitted.replies:
                    self._asked.append(admitted.function)  # before TVM can answer it
                self._tvm.sendall(packet)
        except Refused as why:  # too large to read past: the session ends
            with suppress(OSError):
                self._to_peer(exception_packet(str(why)))
        except OSError:
            pass  # the peer is gone
        finally:  # EOF between packets: TVM's loop ends cleanly, and so does the session
            with suppress(OSError):  # TVM's end may be closed already
                self._tvm.shutdown(socket.SHUT_WR)

    def _replies(self) -> None:
        peer_open = True
        try:
            while (packet := read_packet(self._tvm, None)) is not None:
                if self._asked and self._asked.popleft() is not None:
                    self._note_handle(_Reader(memoryview(packet)[8:]))
                if peer_open:
                    try:
                        self._to_peer(packet)
                    except OSError:  # the peer left: keep reading so TVM never blocks writing
                        peer_open = False
        except OSError:
            pass

    def _note_handle(self, r: _Reader) -> None:
        """A ``kGetGlobalFunc`` reply: ``kReturn`` with one opaque pointer, 0 if not found."""
        try:
            if r.number("<i") == RETURN and r.number("<i") == 1 and r.number("<i") == OPAQUE_PTR:
                handle = r.number("<Q")
                if handle:
                    with self._held_lock:
                        self._held[handle] += 1
        except Refused:
            pass  # a kException reply: no handle was given

    def admit(self, body: memoryview) -> Admitted:
        """Whether TVM may see this request (a packet after its length); ``Refused`` says why
        not."""
        r = _Reader(body)
        code = r.number("<i")
        if code == SHUTDOWN:
            r.end()
            return Admitted(replies=False)
        if code == INIT_SERVER:
            r.take(r.number("<Q"))  # the client's protocol version: TVM checks it
            if _arguments(r):
                raise Refused("a session constructor (kInitServer with arguments): this server "
                              "serves only TVM's local session")
            r.end()
            return Admitted(replies=True)
        if code == GET_GLOBAL_FUNC:
            return Admitted(replies=True, function=self._function(r))
        if code == CALL_FUNC:
            handle, args = r.number("<Q"), _arguments(r)
            r.end()
            self._given(handle, "a call through a function handle")
            if any(isinstance(a, Handle) for a in args):
                raise Refused("an address as an argument")
            return Admitted(replies=True)
        if code == FREE_HANDLE:
            self._free(r)
            return Admitted(replies=True)
        raise Refused(f"{REFUSED_CODES.get(code, f'RPC code {code}')}: raw memory, device and "
                      "other requests are not served")

    def _function(self, r: _Reader) -> str:
        args = _arguments(r)
        r.end()
        if len(args) != 1 or not isinstance(args[0], str):
            raise Refused("a malformed kGetGlobalFunc")
        if args[0] not in self.allowed:
            raise Refused(f"the global function {_shown(args[0])}: this server serves only "
                          + ", ".join(sorted(self.allowed)))
        return args[0]

    def _given(self, handle: int, what: str, release: bool = False) -> None:
        """``Refused`` unless TVM gave this peer ``handle`` (and has not had it back);
        ``release``: one reference is given back."""
        with self._held_lock:
            if self._held[handle] <= 0:
                raise Refused(f"{what} this session was not given")
            if release:
                self._held[handle] -= 1

    def _free(self, r: _Reader) -> None:
        args = _arguments(r)
        r.end()
        if len(args) != 1 or not isinstance(args[0], Handle):
            raise Refused("a malformed kFreeHandle")
        self._given(args[0].value, "freeing a handle", release=True)
