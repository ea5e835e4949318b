"""A Fleet: one job's results from every device it ran on, and its serialisation.

One file (``minigraph-fleet/1``) holds a ``devices`` list; each entry names the device (the
address the tracker handed out and what the device said of itself), its environment, and
either the full result (a Profile or Diagnosis document, exactly as a local ``--json`` writes
it; for ``run``, the output lines) or the error that device ended with. ``from_dict``
validates every result with its own reader (results/profile_schema.py, Diagnosis.from_dict), so
reports can trust what they render. Counterpart: none in TVM (its tracker only hands out
sessions); ``tvm.auto_scheduler``'s RPC runner kept per-device errors beside results likewise.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

from ..errors import InputError
from ..fileio import json_document
from ..fileio.jsontext import document_text
from .diagnosis import Diagnosis
from .display import Displayable
from .profile import Profile

FORMAT = "minigraph-fleet/1"
KINDS = ("profile", "diagnose", "run")


@dataclass
class DeviceResult:
    index: int
    address: str | None = None   # host:port the tracker handed out (None: none was free)
    device: dict = field(default_factory=dict)        # identify(): host, pids, CPU, versions
    environment: dict = field(default_factory=dict)   # capture_env() by the job, on the device
    result: dict | None = None   # the Profile / Diagnosis document, or {"outputs": [...]}
    error: str | None = None
    elapsed_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.result is not None

    def name(self) -> str:
        """Short label for tables: 'host:port' (or 'device N' if none was reached)."""
        return self.address or f"device {self.index}"


@dataclass
class Fleet(Displayable):
    kind: str
    tracker: str
    key: str
    model: str
    requested: int
    registered: list[str] = field(default_factory=list)   # servers under the key at start
    devices: list[DeviceResult] = field(default_factory=list)
    partial: bool = False       # the client was interrupted

    def succeeded(self) -> list[DeviceResult]:
        return [d for d in self.devices if d.ok]

    def profiles(self) -> list[tuple[DeviceResult, Profile]]:
        """Devices with a result, each with its Profile (validated)."""
        return [(d, Profile.from_dict(d.result, f"devices[{d.index}].result"))
                for d in self.succeeded()] if self.kind == "profile" else []

    def diagnoses(self) -> list[tuple[DeviceResult, Diagnosis]]:
        """Devices with a result, each with its Diagnosis (validated)."""
        return [(d, Diagnosis.from_dict(d.result, f"devices[{d.index}].result"))
                for d in self.succeeded()] if self.kind == "diagnose" else []

    def to_dict(self) -> dict:
        return {"format": FORMAT, **asdict(self)}

    def to_json(self) -> str:
        return document_text(self.to_dict())  # compact: a fleet of diagnoses is large

    @classmethod
    def from_dict(cls, doc: object, source: str = "fleet") -> "Fleet":
        """A saved fleet back, every device's result validated; InputError if corrupt."""
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            raise InputError(f"{source}: not a minigraph fleet result (expected '{FORMAT}')")
        try:
            if doc["kind"] not in KINDS:
                raise ValueError(f"unknown kind {doc['kind']!r}")
            devices = [_device(i, d) for i, d in enumerate(doc["devices"])]
            fleet = cls(str(doc["kind"]), str(doc["tracker"]), str(doc["key"]),
                        str(doc["model"]), int(doc["requested"]),
                        [str(a) for a in doc.get("registered", [])], devices,
                        bool(doc.get("partial", False)))
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            raise InputError(f"{source}: corrupt fleet result ({type(err).__name__}: "
                             f"{err})") from None
        try:
            fleet.profiles(), fleet.diagnoses(), [_outputs(d) for d in fleet.succeeded()
                                                  if fleet.kind == "run"]
        except InputError as err:
            raise InputError(f"{source}: {err}") from None
        return fleet


def _device(i: int, d: object) -> DeviceResult:
    if not isinstance(d, dict) or d.get("index") != i:
        raise ValueError(f"devices[{i}] must be an object with index {i}")
    for key in ("device", "environment"):
        if not isinstance(d.get(key, {}), dict):
            raise ValueError(f"devices[{i}].{key} must be an object")
    result, error = d.get("result"), d.get("error")
    if result is not None and not isinstance(result, dict):
        raise ValueError(f"devices[{i}].result must be an object or null")
    if error is not None and not isinstance(error, str):
        raise ValueError(f"devices[{i}].error must be a string or null")
    address = d.get("address")
    return DeviceResult(i, None if address is None else str(address), dict(d.get("device", {})),
                        dict(d.get("environment", {})), result, error,
                        float(d.get("elapsed_s", 0.0)))


def _outputs(d: DeviceResult) -> list[str]:
    out = (d.result or {}).get("outputs")
    if not isinstance(out, list) or not all(isinstance(x, str) for x in out):
        raise InputError(f"devices[{d.index}].result.outputs must be a list of strings")
    return out


def parse_fleet(data: bytes, source: str = "fleet") -> Fleet:
    return Fleet.from_dict(json_document(data, source), source)
