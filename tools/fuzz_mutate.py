"""Mutations for tools/fuzz.py: structural edits of decoded JSON/msgpack documents and
byte-level edits of any encoding. Pure functions of a ``random.Random``: a case is reproducible
from its seed. Not a test; imported by tools/fuzz.py and tests/cli/test_fuzz.py.
"""
from __future__ import annotations

import copy
import json
import random
import struct
from typing import Callable

INTS = [0, 1, -1, 2, 3, 7, 255, 256, 2**15, 2**16 - 1, 2**31 - 1, 2**31, -2**31, 2**32,
        2**53 + 1, 2**62, 2**63 - 1, 2**63, -2**63, 2**64 - 1, 2**64, 10**30, -10**30]
VALUES = INTS + [None, True, False, 0.5, -0.0, 1e308, -1e308, float("inf"), float("nan"), "",
                 "0", "-1", "1e999", "x" * 300, "float32", "bool", "tvm_op", "null", "__nop",
                 "__copy", "list_int", "list_shape", [], {}, [[]], [0], [0, 0], [0, 0, 0],
                 [-1, 0], [2**40, 2**40, 2**40], {"a": 1}, ["list_int", []]]


def value_paths(obj, limit: int = 4000) -> list[tuple]:
    """(container, key) for every value inside ``obj``, breadth-first, at most ``limit``."""
    out, todo = [], [obj]
    while todo and len(out) < limit:
        cur = todo.pop(0)
        items = cur.items() if isinstance(cur, dict) else enumerate(cur)
        for k, v in items:
            out.append((cur, k))
            if isinstance(v, (dict, list)):
                todo.append(v)
    return out


def _value(rng: random.Random):
    """A fresh copy: later edits must never change the shared VALUES table (reproducibility)."""
    return copy.deepcopy(rng.choice(VALUES))


def _retype(v):
    """The same value as another JSON type (what a hand edit or another tool produces)."""
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, (int, float)):
        return str(v)
    if isinstance(v, str):
        return [v]
    if isinstance(v, list):
        return {str(i): x for i, x in enumerate(v)}
    return list(v.values()) if isinstance(v, dict) else 0


def mutate_structure(rng: random.Random, obj) -> None:
    """One edit at a random place: drop, replace, retype, grow, shrink, scale or duplicate."""
    paths = value_paths(obj)
    if not paths:
        return
    cur, key = rng.choice(paths)
    v, op = cur[key], rng.randrange(10)
    if op == 0:
        del cur[key]
    elif op == 1:
        cur[key] = _value(rng)
    elif op == 2:
        cur[key] = _retype(v)
    elif op == 3 and isinstance(v, (int, float)) and not isinstance(v, bool):
        cur[key] = rng.choice([-v, v * 2**rng.randrange(1, 70), v + rng.choice([-1, 1]), -1])
    elif op == 4 and isinstance(v, list):
        v.insert(rng.randrange(len(v) + 1), copy.deepcopy(rng.choice(v))
                 if v and rng.random() < .5 else _value(rng))
    elif op == 5 and isinstance(v, list) and v:
        if rng.random() < .5:
            rng.shuffle(v)
        else:
            v.pop(rng.randrange(len(v)))
    elif op == 6 and isinstance(v, dict):
        v[rng.choice(["x", "attrs", "format", "inputs", "op", "index", "", "0"])] = \
            _value(rng)
    elif op == 7 and type(v) is int:  # small and plausible: keeps more cases parseable
        cur[key] = rng.randrange(0, 12)
    elif op == 8 and isinstance(v, (dict, list)):  # empty, e.g. a profile with no per-op modes
        v.clear()
    else:
        cur[key] = json.loads(json.dumps(rng.choice(paths)[0]))  # a copy of another subtree


def mutate_graph_refs(rng: random.Random, doc) -> None:
    """Forward references and cycles: an op's input or a head pointing at itself or later."""
    nodes = doc.get("nodes") if isinstance(doc, dict) else None
    if not isinstance(nodes, list) or not nodes:
        return
    i = rng.randrange(len(nodes))
    node = nodes[i]
    if isinstance(node, dict) and isinstance(node.get("inputs"), list) and node["inputs"]:
        j = rng.randrange(len(node["inputs"]))
        node["inputs"][j] = [rng.randrange(i, len(nodes) + 3), rng.randrange(3), 0]
    elif isinstance(doc.get("heads"), list):
        doc["heads"].append([rng.randrange(len(nodes) + 3), rng.randrange(3)])


def mutate_bytes(rng: random.Random, data: bytes) -> bytes:
    """One byte-level edit: flips, random bytes, cuts, inserts, integer overwrites, nesting."""
    b = bytearray(data)
    pos = rng.randrange(len(b) + 1)
    op = rng.randrange(9)
    if op == 0 and b:
        b[min(pos, len(b) - 1)] ^= 1 << rng.randrange(8)
    elif op == 1 and b:
        b[min(pos, len(b) - 1)] = rng.randrange(256)
    elif op == 2:
        del b[pos:]  # truncation, the commonest real corruption
    elif op == 3:
        del b[pos:pos + rng.randrange(1, 64)]
    elif op == 4:
        b[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 16)))
    elif op == 5:
        fmt = rng.choice(["<q", "<Q", "<i", "<I", "<H", "<B"])
        lo, hi = {"<q": (-2**63, 2**63 - 1), "<i": (-2**31, 2**31 - 1), "<H": (0, 2**16 - 1),
                  "<B": (0, 255)}.get(fmt, (0, 2**(64 if fmt == "<Q" else 32) - 1))
        value = max(lo, min(hi, rng.choice(INTS)))
        raw = struct.pack(fmt, value)
        b[pos:pos + len(raw)] = raw
    elif op == 6:
        depth = rng.choice([10, 1000, 100_000])
        b[pos:pos] = rng.choice([b"[", b"{\"a\":", b"\x91", b"\x81\xa1a"]) * depth
    elif op == 7 and b:
        start = rng.randrange(len(b))
        b[pos:pos] = b[start:start + rng.randrange(1, 256)]
    else:
        b[pos:pos] = rng.choice([b"9" * 40, b"-1", b"1e400", b"NaN", b"\xff\xfe", b"\x00",
                                 b"\"\\ud800\"", b"null", b",", b"]"])
    return bytes(b)


def mutate_doc(rng: random.Random, doc, refs: bool) -> object:
    doc = json.loads(json.dumps(doc))
    for _ in range(rng.choice((1, 1, 1, 2, 3, 4))):  # mostly one edit: deeper coverage
        if refs and rng.random() < .25:
            mutate_graph_refs(rng, doc)
        else:
            mutate_structure(rng, doc)
    return doc


def mutated(rng: random.Random, seed_doc, encode: Callable[[object], bytes],
            refs: bool = False) -> bytes:
    """A structural edit, a byte edit, or both (never the seed itself more than rarely)."""
    mode = rng.randrange(3)
    data = encode(mutate_doc(rng, seed_doc, refs) if mode != 1 else seed_doc)
    for _ in range(rng.randrange(1, 4) if mode != 0 else 0):
        data = mutate_bytes(rng, data)
    return data
