"""What a device is asked to do: the artifacts to upload and the job that runs on them.

A ``JobSpec`` crosses the network as JSON (``to_json`` / ``from_json``, validated on the device
before anything runs): the kind of job, the *uploaded names* of the artifacts (plain file names
in the session's directory, never paths), and the settings of the job as their own classes
serialize them (``profile.model.Settings``, ``diagnose.spec.DiagnoseSettings``). Settings that
depend on the machine are resolved on the device, not copied from the client: the thread count
(``None``: every CPU the device allows) and the cold flush size (2x the device's LLC).
"""
from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..artifacts.model_files import ModelFiles
from ..errors import InputError
from ..fileio import dataclass_from_json
from ..values.policy import FILLS

KINDS = ("profile", "diagnose", "run")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")  # a file name, no path, no ".."


@dataclass(frozen=True)
class JobSpec:
    kind: str
    lib: str                      # uploaded names, relative to the session's directory
    graph: str | None
    params: str | None
    vm_lib: str | None = None     # model.vm.so, for diagnose's Relax VM protocols
    settings: dict = field(default_factory=dict)   # Settings / DiagnoseSettings .to_dict()
    threads: dict = field(default_factory=dict)    # ThreadRequest fields (profile)
    inputs: dict = field(default_factory=dict)     # input name -> uploaded .npy name (run)
    seed: int = 0
    force: bool = False
    protocols: bool = True        # diagnose: TVM's protocols side by side
    timeout_s: float = 3600.0     # the device kills a job that runs longer (a hung kernel)
    fill: str | None = None       # --fill: what weights nobody gave get (values/policy.py)
    shapes: dict = field(default_factory=dict)  # --shape: a Relax VM function's sizes

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise InputError(f"bad job spec: unknown kind {self.kind!r}")
        if not all(isinstance(k, str) and type(v) is int and v > 0
                   for k, v in dict(self.shapes).items()):
            raise InputError("bad job spec: shapes must map names to positive integers")
        if self.fill is not None and self.fill not in FILLS:
            raise InputError(f"bad job spec: fill must be one of {', '.join(FILLS)}")
        if isinstance(self.timeout_s, bool) or not isinstance(self.timeout_s, (int, float)) \
                or not 0 < self.timeout_s < 1e7:
            raise InputError(f"bad job spec: timeout_s must be a positive number of seconds, "
                             f"got {self.timeout_s!r}")
        names = [self.lib, self.graph, self.params, self.vm_lib, *self.inputs.values()]
        bad = [n for n in names if n is not None and not _NAME.match(str(n))]
        if bad:
            raise InputError(f"bad job spec: {bad[0]!r} is not a plain file name")

    def uploaded(self) -> list[str]:
        """Every file name this job expects in the session's directory."""
        return [n for n in (self.lib, self.graph, self.params, self.vm_lib,
                            *self.inputs.values()) if n is not None]

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> "JobSpec":
        """The spec back; a missing, unknown or mistyped field is an InputError."""
        try:
            spec = dataclass_from_json(cls, text, "job spec")
            for key in ("settings", "threads", "inputs", "shapes"):
                if not isinstance(getattr(spec, key), dict):
                    raise ValueError(f"{key} must be an object")
            return spec
        except (ValueError, TypeError) as err:
            raise InputError(f"bad job spec: {err}") from None


def upload_plan(files: ModelFiles, inputs: dict[str, str] | None = None,
                with_vm: bool = False) -> list[tuple[Path, str]]:
    """(local file, uploaded name) for the model's artifacts (+ .npy inputs), names unique."""
    plan = [(files.lib, "model.so")]
    if files.graph is not None:
        plan.append((files.graph, "graph.json"))
    if files.params is not None:
        plan.append((files.params, "model.params"))
    vm = files.lib.with_name("model.vm.so")
    if with_vm and vm.is_file():
        plan.append((vm, "model.vm.so"))
    for i, (name, path) in enumerate(sorted((inputs or {}).items())):
        plan.append((Path(path), f"input{i}.npy"))
    missing = [str(p) for p, _ in plan if not p.is_file()]
    if missing:
        raise InputError(f"cannot upload {missing[0]}: not a file")
    return plan


def spec_for(kind: str, plan: list[tuple[Path, str]], inputs: dict[str, str] | None = None,
             **job: object) -> JobSpec:
    """The JobSpec naming the uploaded files of ``plan`` (from upload_plan)."""
    names = {remote for _, remote in plan}
    pick = lambda n: n if n in names else None  # noqa: E731
    uploaded_inputs = {name: f"input{i}.npy" for i, name in enumerate(sorted(inputs or {}))}
    return JobSpec(kind, "model.so", pick("graph.json"), pick("model.params"),
                   pick("model.vm.so"), inputs=uploaded_inputs, **job)  # type: ignore[arg-type]
