"""The package layout is the architecture: rooms import downwards only, nothing cycles, and each
concept has one source of truth that the rest (CLI, reports, README) follows."""
from __future__ import annotations

import ast
import functools
import inspect
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PKG = ROOT / "minigraph"
# bottom to top: a module may import its own room and the rooms below it, never above;
# analysis/ reads what the measuring rooms (and llm/) saved and decides what it means, and
# report/ only renders what analysis/ decided: so it sits between them
LAYERS = (("errors",), ("fileio", "__init__"), ("artifacts", "threadpool"), ("measure",),
          ("runtime",), ("results",), ("values",), ("readers",), ("protocols",),
          ("profile", "diagnose", "compiler"), ("llm",),
          # what the measured and saved documents mean: reads the measuring rooms below it, and
          # report/ above renders what it computes (report/ imports no measuring room)
          ("analysis",),
          ("report",), ("remote",), ("api",), ("cli",), ("__main__",))
LAYER_OF = {room: i for i, rooms in enumerate(LAYERS) for room in rooms}


def _module(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """Every minigraph module ``path`` imports, at module level, inside functions or under
    TYPE_CHECKING: an import for type checking is an arrow of the structure too."""
    tree = ast.parse(path.read_text())
    me, out = _module(path), set()
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = package.split(".")
            if node.level:
                base = base[:len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            names = [f"{target}.{a.name}" for a in node.names]
            out |= {n if _exists(n) else target for n in names}
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
    return {m for m in out if m == "minigraph" or m.startswith("minigraph.")}


def _exists(module: str) -> bool:
    rel = Path(*module.split("."))
    return (ROOT / rel).with_suffix(".py").exists() or (ROOT / rel / "__init__.py").exists()


def _room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


@functools.lru_cache(maxsize=1)
def _graph() -> dict[str, set[str]]:
    return {_module(p): _imports(p) - {_module(p)} for p in PKG.rglob("*.py")}


@functools.lru_cache(maxsize=1)
def _trees() -> dict[Path, tuple[str, ast.Module]]:
    """Every module's source and syntax tree, parsed once for all the checks below."""
    return {p: (p.read_text(), ast.parse(p.read_text())) for p in PKG.rglob("*.py")}


def test_imports_run_downwards_only():
    wrong = [f"{m} -> {t}" for m, ts in _graph().items() for t in ts
             if LAYER_OF[_room(t)] > LAYER_OF[_room(m)]
             or (LAYER_OF[_room(t)] == LAYER_OF[_room(m)] and _room(t) != _room(m))]
    assert not wrong, "imports that run up or sideways:\n" + "\n".join(sorted(wrong))


def test_no_import_cycles():
    graph = _graph()
    state: dict[str, int] = {}

    def visit(m: str, path: list[str]) -> None:
        state[m] = 1
        for t in sorted(graph.get(m, ())):
            if state.get(t) == 1:
                pytest.fail("import cycle: " + " -> ".join(path[path.index(t):] + [m, t]))
            if t in graph and not state.get(t):
                visit(t, path + [m])
        state[m] = 2
    for m in sorted(graph):
        if not state.get(m):
            visit(m, [])


def test_rooms_are_few_and_every_module_says_what_it_holds():
    top = sorted(p.name for p in PKG.glob("*.py"))
    assert len(top) <= 6, top
    assert set(LAYER_OF) >= {p.name for p in PKG.iterdir() if p.is_dir() and
                             (p / "__init__.py").exists()} | {p.stem for p in PKG.glob("*.py")}
    silent = [str(p.relative_to(ROOT)) for p, (_, tree) in _trees().items()
              if ast.get_docstring(tree) is None]
    assert not silent, silent


def _door(module: str) -> str | None:
    parts = module.split(".")
    if parts[:2] != ["minigraph", "runtime"] or len(parts) < 3:
        return None
    return parts[2] if parts[2] in ("legacy", "relax_vm") else "doors" \
        if parts[2] == "doors" else "core"


def test_the_doors_never_import_each_other_and_the_core_imports_no_door():
    """Like TVM's graph_executor/ beside vm/: each door may use the executor core; only
    runtime/doors.py knows all three."""
    wrong = [f"{m} -> {t}" for m, ts in _graph().items() for t in ts
             if _door(m) in ("legacy", "relax_vm", "core") and _door(t) not in (None, _door(m))
             and not (_door(m) != "core" and _door(t) == "core")]
    assert not wrong, "\n".join(sorted(wrong))


def _closure(module: str) -> set[str]:
    """Every minigraph module importing ``module`` runs, by the static walk above (lazy and
    type-checking imports included), with the packages Python runs first (their __init__)."""
    graph, seen, todo = _graph(), set(), [module]
    while todo:
        m = todo.pop()
        parents = [".".join(m.split(".")[:k]) for k in range(1, m.count(".") + 1)]
        for n in [m, *parents]:
            if n not in seen:
                seen.add(n)
                todo += graph.get(n, ())
    return seen


def test_the_executor_core_measures_nothing_and_reads_no_library():
    """runtime/executor.py plans, allocates, binds and runs, as TVM's GraphExecutor; crash
    records, per-op calls, benchmark and loading from files are the debug executor's that
    subclasses it (runtime/debug.py, as GraphExecutorDebug). So nothing the core imports,
    directly or not, is of measure/ or the ELF reader (artifacts/elf*)."""
    closure = _closure("minigraph.runtime.executor")
    assert {"minigraph.runtime.bind", "minigraph.errors"} <= closure  # the walk follows imports
    wrong = sorted(m for m in closure if m == "minigraph.measure" or
                   m.startswith(("minigraph.measure.", "minigraph.artifacts.elf")))
    assert not wrong, wrong
    assert any(m.startswith("minigraph.measure.") for m in _closure("minigraph.runtime.debug"))


def _reclassed(node: ast.AST) -> bool:
    """``x.__class__ = C`` or ``setattr(x, "__class__", C)`` (object.__setattr__ too)."""
    if isinstance(node, ast.Assign):
        return any(isinstance(t, ast.Attribute) and t.attr == "__class__" for t in node.targets)
    return isinstance(node, ast.Call) and len(node.args) > 1 and \
        ast.unparse(node.func) in ("setattr", "object.__setattr__") and \
        _literals(node.args[1]) == ["__class__"]


def test_no_object_is_given_another_class():
    """An executor is made as the class it is (the API's through the doors' ``executor_class``),
    never re-classed after it was made."""
    found = [f"{p.relative_to(ROOT)}:{n.lineno}" for p, (_, tree) in _trees().items()
             for n in ast.walk(tree) if _reclassed(n)]
    assert not found, found


def _body_lines(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    body = fn.body[1:] if ast.get_docstring(fn) is not None and len(fn.body) > 1 else fn.body
    return fn.end_lineno - body[0].lineno + 1


def test_functions_stay_short_and_the_run_loop_tiny():
    """What a reader has to hold at once: no function body over 45 lines (the guide's ~40),
    and GraphExecutor::Run is two lines of Python (call each bound op in order)."""
    long = [(f"{p.relative_to(ROOT)}:{fn.lineno} {fn.name}", _body_lines(fn))
            for p, (_, tree) in _trees().items() for fn in ast.walk(tree)
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and _body_lines(fn) > 45]
    assert not long, long
    from minigraph.runtime.executor import Executor
    run = ast.parse(textwrap.dedent(inspect.getsource(Executor.run))).body[0]
    loop = [s for s in run.body if isinstance(s, ast.For)]
    assert len(loop) == 1 and len(loop[0].body) == 1, ast.unparse(run)


def _local_imports() -> list[tuple[str, int, str]]:
    """Imports of the package's own code inside functions: (file, line, the line before)."""
    out = []
    for p, (text, tree) in _trees().items():
        lines = text.splitlines()
        for fn in ast.walk(tree):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                out += [(str(p.relative_to(ROOT)), n.lineno, lines[n.lineno - 2].strip())
                        for n in ast.walk(fn) if isinstance(n, ast.ImportFrom) and n.level]
    return out


def test_function_local_imports_are_few_and_say_why():
    """A lazy import hides an arrow of the structure: each one says why, beside it."""
    local = _local_imports()
    assert len(local) <= 25, local
    unexplained = [(f, n) for f, n, before in local
                   if not (before.startswith("#") or before.startswith("from ."))]
    assert not unexplained, unexplained


def _lazy_third_party() -> dict[str, list[int]]:
    """Modules importing an installed package inside functions, with no reason beside the
    import (a comment on its line or the line before): module -> lines."""
    std = set(sys.stdlib_module_names)
    out: dict[str, list[int]] = {}
    for p, (text, tree) in _trees().items():
        lines = text.splitlines()
        for fn in ast.walk(tree):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for n in ast.walk(fn):
                if not isinstance(n, (ast.Import, ast.ImportFrom)) or getattr(n, "level", 0):
                    continue
                top = (n.names[0].name if isinstance(n, ast.Import) else n.module).split(".")[0]
                said = "#" in lines[n.lineno - 1] or lines[n.lineno - 2].strip().startswith("#")
                if top not in std and top != "minigraph" and not said:
                    out.setdefault(str(p.relative_to(ROOT)), []).append(n.lineno)
    return out


def test_packages_imported_inside_functions_say_why_once_per_module():
    """TVM (~1.2 s), ml_dtypes and the like are imported where they are used when the CLI's
    start-up or a TVM-free command would otherwise pay them: a module doing so says why in one
    module-level comment starting '# lazy:' (or beside each import)."""
    silent = {m: lines for m, lines in _lazy_third_party().items()
              if not any(line.startswith("# lazy:")
                         for line in (ROOT / m).read_text().splitlines())}
    assert not silent, silent


def test_one_module_holds_the_comparison_pair():
    """Ops and kernels are compared as one kind of pair (measure/significance.py ``Pair``):
    no other module defines a pair class of its own; and two documents compared are one
    class, analysis/comparison.py ``Comparison`` (ops, kernels, phases are its views; a saved
    comparison read back is results/comparison.py's document)."""
    classes = [(f"{p.relative_to(ROOT)}:{n.name}", n.name) for p, (_, tree) in _trees().items()
               for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]
    pairs = sorted(where for where, name in classes if "Pair" in name)
    assert pairs == ["minigraph/measure/significance.py:Pair"], pairs
    compared = sorted(where for where, name in classes if "Comparison" in name)
    assert compared == ["minigraph/analysis/comparison.py:Comparison",
                        "minigraph/results/comparison.py:SavedComparison"], compared


def test_one_module_holds_the_comparison_thresholds():
    """Every cut-off a comparison uses is analysis/thresholds.py's: the analysis and the
    renderers of a comparison define no threshold of their own (a name in capitals bound to
    a number), and measure/significance.py is given them."""
    rooms = [PKG / "analysis", *(PKG / "report" / f for f in (
        "compare.py", "fleet.py", "kernel_report.py", "llm_compare.py", "findings.py",
        "html/compare_page.py")), PKG / "measure" / "significance.py"]
    files = [p for r in rooms for p in ([r] if r.suffix else sorted(r.glob("*.py")))]
    found = [f"{p.relative_to(ROOT)}:{t.id}" for p in files if p.name != "thresholds.py"
             for n in _trees()[p][1].body if isinstance(n, ast.Assign)
             for t in n.targets if isinstance(t, ast.Name) and t.id.lstrip("_").isupper()
             and isinstance(n.value, (ast.Constant, ast.BinOp))]
    allowed = {"minigraph/measure/significance.py:" + k for k in (
        "_IQR_SIGMA", "_MEDIAN_SE", "PRECISION_LEVEL", "_Z90")}  # normal-distribution facts
    allowed |= {"minigraph/analysis/phases.py:TOP",  # how many are listed, not a cut-off
                "minigraph/report/kernel_report.py:SHOWN"}
    assert set(found) - allowed == set(), sorted(set(found) - allowed)


@pytest.mark.subprocess
def test_the_command_line_imports_no_tvm():
    """TVM takes seconds to import: show, compare and explain of a graph.json never pay it."""
    code = ("import sys, minigraph.cli\n"
            "print([m for m in ('tvm', 'ml_dtypes', 'onnx') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, env=dict(os.environ, PYTHONPATH=str(ROOT)), check=True)
    assert out.stdout.strip() == "[]", out.stdout


def test_one_classifier_decides_what_a_library_is():
    """The TVM-FFI export prefix and the ELF magic are read in artifacts/ only."""
    rules = ('startswith("__tvm_ffi_")', "startswith(FFI_PREFIX)", '== b"\\x7fELF"',
             'b"\\x7fELF"', '"_library_bin" in')
    found = sorted({str(p.relative_to(ROOT)) for p, (text, _) in _trees().items()
                    for r in rules if r in text})
    assert found == ["minigraph/artifacts/elf.py", "minigraph/artifacts/library.py"], found


def test_every_mode_has_one_sampler_and_the_cli_offers_every_mode():
    from minigraph.cli import parser
    from minigraph.profile.samplers import SAMPLERS
    from minigraph.results.modes import NAMES, PER_OP
    assert tuple(SAMPLERS) == NAMES
    sub = next(a for a in parser()._actions if a.dest == "command").choices
    assert tuple(next(a for a in sub["profile"]._actions if a.dest == "mode").choices) == NAMES
    assert tuple(next(a for a in sub["compare"]._actions if a.dest == "mode").choices) == PER_OP


def test_readme_ladder_table_is_the_rung_table():
    from minigraph.results.rungs import markdown_table
    assert markdown_table() in (ROOT / "README.md").read_text()


@pytest.mark.subprocess
def test_a_command_whose_module_cannot_import_fails_loudly(tmp_path):
    """No command vanishes from the parser: an ImportError surfaces with its traceback."""
    (tmp_path / "sitecustomize.py").write_text(
        "import sys\n"
        "class Refuse:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'minigraph.results.rungs':\n"
        "            raise ImportError('simulated broken module')\n"
        "sys.meta_path.insert(0, Refuse())\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(ROOT)]))
    proc = subprocess.run([sys.executable, "-m", "minigraph", "build", "--help"],
                          capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode != 0
    assert "simulated broken module" in proc.stderr
    assert "invalid choice" not in proc.stderr


# the values of the kind enums (artifacts/library.py Abi, runtime/opened.py DoorKind)
KIND_VALUES = {"tvm-ffi", "relax-vm", "legacy-a", "legacy-b", "graph", "legacy"}
# names that would decide a library's kind from its file or kernel names
NAME_RULES = (".so", "model.vm.so", "__tvm_ffi_", "vm.so")
# where a name is read on purpose, and why: a file that does not exist has no bytes to read
NAME_ALLOWED = {("minigraph/cli/run.py", ".so")}


def _literals(node: ast.AST) -> list[object]:
    elts = node.elts if isinstance(node, (ast.Tuple, ast.Set, ast.List)) else [node]
    return [e.value for e in elts if isinstance(e, ast.Constant)]


def test_kinds_are_decided_once_and_compared_as_enums():
    """No module compares a value with a door's or an ABI's name as a string (the enums are
    the one rule, decided by the classifier and the door table), and none tells a library's
    kind by its file name or a kernel's name prefix."""
    found = []
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Compare):
                hits = {v for side in (node.left, *node.comparators) for v in _literals(side)}
                if hits & KIND_VALUES:
                    found.append(f"{rel}:{node.lineno}: {ast.unparse(node)}")
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                    node.func.attr in ("endswith", "startswith") and node.args:
                names = {v for v in _literals(node.args[0]) if v in NAME_RULES}
                if names - {n for f, n in NAME_ALLOWED if f == rel}:
                    found.append(f"{rel}:{node.lineno}: {ast.unparse(node)}")
    assert not found, "a second rule for a kind:\n" + "\n".join(found)


# what starts or reaps a process, as a call's dotted name
_PROCESS_CALLS = {"os.fork", "os.forkpty", "os.wait", "os.wait4", "os.waitpid", "os.system",
                  "os.posix_spawn", "os.execv", "os.execve", "os.execvp", "subprocess.Popen",
                  "subprocess.run", "subprocess.call", "subprocess.check_call",
                  "subprocess.check_output", "multiprocessing.Process"}


def test_one_module_starts_and_reaps_processes():
    """Every fork, spawn and wait is in measure/child.py (with its one die-with-parent); the
    fork server, the supervisor, remote jobs and the probes go through it."""
    found = []
    for path, (_, tree) in _trees().items():
        rel = path.relative_to(ROOT).as_posix()
        if rel == "minigraph/measure/child.py":
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and ast.unparse(node.func) in _PROCESS_CALLS:
                found.append(f"{rel}:{node.lineno}: {ast.unparse(node.func)}")
            if isinstance(node, ast.Attribute) and node.attr == "prctl":
                found.append(f"{rel}:{node.lineno}: prctl")
    assert not found, "a second process runner:\n" + "\n".join(found)
    calls = {ast.unparse(n.func) for n in ast.walk(_trees()[PKG / "measure" / "child.py"][1])
             if isinstance(n, ast.Call)}
    assert {"os.fork", "subprocess.Popen"} <= calls  # the check looks at real call names


# where a mode's name may be spelled: the enum, and the code reading a saved file's keys
MODE_SPELLED = {
    "minigraph/results/modes.py",        # ModeName: where the names are defined
    "minigraph/results/comparison.py",   # reads a saved comparison's "e2e" entry
    # the comparison document's "e2e" key is written in measure/, below results/ (no enum there)
    "minigraph/measure/significance.py",
    "minigraph/report/saved.py",         # reads a saved comparison document's "e2e" entry
}


def test_modes_are_named_by_the_enum():
    """No module spells a mode's name as a string (docstrings aside): code names modes by
    results/modes.py ``ModeName``, so a renamed or added mode is one edit."""
    from minigraph.results.modes import NAMES
    names = {str(n) for n in NAMES}
    found = []
    for path, (_, tree) in _trees().items():
        rel = path.relative_to(ROOT).as_posix()
        if rel in MODE_SPELLED:
            continue
        docs = {id(n.body[0].value) for n in ast.walk(tree)
                if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef,
                                  ast.AsyncFunctionDef)) and ast.get_docstring(n) is not None}
        found += [f"{rel}:{n.lineno}: {n.value!r}" for n in ast.walk(tree)
                  if isinstance(n, ast.Constant) and n.value in names and id(n) not in docs]
    assert not found, "a mode spelled as a string:\n" + "\n".join(sorted(found))


def _writes_pool_size(node: ast.AST) -> bool:
    """An assignment of TVM_NUM_THREADS: os.environ[...] = , dict(..., TVM_NUM_THREADS=...),
    {**env, "TVM_NUM_THREADS": ...} (a dict of labels is no environment), os.environ.setdefault
    / putenv / update with it."""
    var = "TVM_NUM_THREADS"
    if isinstance(node, (ast.Assign, ast.AugAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return any(isinstance(t, ast.Subscript) and _literals(t.slice) == [var] for t in targets)
    if isinstance(node, ast.Dict):
        return None in node.keys and \
            any(k is not None and _literals(k) == [var] for k in node.keys)
    if isinstance(node, ast.Call):
        if any(k.arg == var for k in node.keywords):
            return True
        name = node.func.attr if isinstance(node.func, ast.Attribute) else ""
        return name in ("setdefault", "putenv", "update") and \
            any(_literals(a) == [var] for a in node.args)
    return False


def test_one_module_writes_tvms_environment():
    """TVM_NUM_THREADS, which TVM's pool reads once at creation, is written in
    threadpool/environ.py only: this process's, and a fresh worker's environment."""
    found = sorted(f"{p.relative_to(ROOT)}:{n.lineno}" for p, (_, tree) in _trees().items()
                   for n in ast.walk(tree) if _writes_pool_size(n))
    assert not found, "TVM_NUM_THREADS written outside threadpool/environ.py:\n" + \
        "\n".join(found)
    from minigraph.threadpool import environ
    assert environ.POOL_SIZE_VAR == "TVM_NUM_THREADS"
    assert environ.pool_environ(3, {})["TVM_NUM_THREADS"] == "3"
