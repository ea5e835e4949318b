"""The saved formats: one registry, format name -> reader, that ``show``, ``compare`` and the
golden-document tests dispatch through (no if-chain of ``is_*`` sniffers).

Each minigraph document names its format in its ``"format"`` field (JSON) or map key
(msgpack). ``sniff`` reads that name from the bytes, ``read`` decodes and validates the document
with its own reader (schema checks, no computation). TVM's own report forms carry no format
name; readers/ recognises them by content and falls back on them when no format here matches.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from ..errors import InputError
from ..fileio.jsontext import loads_strict, non_finite
from . import comparison, diagnosis, fleet, llm, llm_diagnosis, profile_schema, protocols, sweep
from .diagnosis import Diagnosis
from .files import is_msgpack, msgpack_document
from .fleet import Fleet
from .profile import Profile
from .sweep import Sweep


@dataclass(frozen=True)
class Format:
    """One saved format: its name, what it holds and how a decoded document becomes an object."""

    name: str                                   # e.g. "minigraph-profile/1"
    kind: str                                   # profile | diagnosis | fleet | ...
    read: Callable[[object, str], object]       # (decoded document, source) -> object
    written_by: str                             # the command that saves it


FORMATS: tuple[Format, ...] = (
    Format(profile_schema.FORMAT, "profile", Profile.from_dict, "profile --json / --raw"),
    Format(diagnosis.FORMAT, "diagnosis", Diagnosis.from_dict, "diagnose --json"),
    Format(fleet.FORMAT, "fleet", Fleet.from_dict, "profile|diagnose|run --rpc-tracker --json"),
    Format(comparison.FORMAT, "comparison", comparison.read, "compare --json"),
    Format(comparison.KERNEL_FORMAT, "kernel-comparison", comparison.read_kernels,
           "compare --by-kernel --json (or of TVM reports)"),
    Format(protocols.FORMAT, "protocols", protocols.read, "benchmarks/protocols_demo.py"),
    Format(sweep.FORMAT, "sweep", Sweep.from_dict, "profile --sweep NAME=V1,V2,... --json"),
    Format(llm.FORMAT, "llm-profile", llm.read, "profile LLM_DIR --json"),
    Format(llm.COMPARISON_FORMAT, "llm-comparison", llm.read_comparison,
           "compare LLM profiles --json"),
    Format(llm_diagnosis.FORMAT, "llm-diagnosis", llm_diagnosis.LLMDiagnosis.from_dict,
           "diagnose LLM_DIR --json"),
)
BY_NAME: dict[str, Format] = {f.name: f for f in FORMATS}
FAMILIES: dict[str, Format] = {f.name.split("/")[0]: f for f in FORMATS}
_NAMED = re.compile(rb'"format"\s*:\s*"(minigraph-[a-z-]+)/([^"]{1,16})"')
_WITHIN = 4096  # bytes: every document writes its format among its first keys


def _family(name: str, source: str) -> Format:
    """The format of ``name``'s family: a document of another version of it goes to that
    family's reader, whose check says which version it reads."""
    fmt = FAMILIES.get(name.partition("/")[0])
    if fmt is None:
        raise InputError(f"{source}: an unknown minigraph format '{name}'")
    return fmt


def sniff(data: bytes) -> str | None:
    """The format name a saved document declares near its start (JSON), None if none. msgpack
    documents are decoded to find it (``read`` does)."""
    if data.lstrip()[:1] != b"{":
        return None
    m = _NAMED.search(data[:_WITHIN])
    return None if m is None else (m[1] + b"/" + m[2]).decode("ascii", "replace")


def read(data: bytes, source: str) -> tuple[Format, object] | None:
    """(format, object) for a minigraph document, None when ``data`` names none of ours (a TVM
    report, say); an InputError when it names one and is corrupt, or another version's."""
    if is_msgpack(data):
        doc = msgpack_document(data, source)
        where = non_finite(doc)
        if where is not None:  # JSON cannot hold it, and no saved document does
            raise InputError(f"{source}: {where} is not a finite number")
        name = doc.get("format") if isinstance(doc, dict) else None
        if not isinstance(name, str):
            raise InputError(f"{source}: a msgpack document without a minigraph format")
        fmt = _family(name, source)
        return fmt, fmt.read(doc, source)
    name = sniff(data)
    if name is None:
        return None
    fmt = _family(name, source)
    try:
        doc = loads_strict(data)
    except (ValueError, RecursionError) as err:  # JSONDecodeError, UnicodeDecodeError, strict
        raise InputError(f"{source}: names {name} but is not JSON ({err})") from None
    return fmt, fmt.read(doc, source)
