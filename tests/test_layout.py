"""The package layout is the architecture: rooms import downwards only, nothing cycles, and each
concept has one source of truth that the rest (CLI, reports, README) follows."""
from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "minigraph"
# bottom to top: a module may import its own room and the rooms below it, never above
LAYERS = (("errors",), ("fileio", "__init__"), ("artifacts", "threadpool"), ("measure",),
          ("runtime",), ("data",), ("results",), ("readers",), ("protocols",),
          ("profile", "diagnose", "compiler"), ("report",), ("remote",), ("api",), ("cli",),
          ("__main__",))
LAYER_OF = {room: i for i, rooms in enumerate(LAYERS) for room in rooms}


def _module(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """Every minigraph module ``path`` imports, at module level or inside functions
    (lazy imports count), TYPE_CHECKING blocks aside."""
    tree = ast.parse(path.read_text())
    skip = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If)
            and "TYPE_CHECKING" in ast.unparse(node.test) for n in ast.walk(node)}
    me, out = _module(path), set()
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
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


def _graph() -> dict[str, set[str]]:
    return {_module(p): _imports(p) - {_module(p)} for p in PKG.rglob("*.py")}


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


def test_rooms_are_few_and_modules_small():
    top = sorted(p.name for p in PKG.glob("*.py"))
    assert len(top) <= 6, top
    assert set(LAYER_OF) >= {p.name for p in PKG.iterdir() if p.is_dir() and
                             (p / "__init__.py").exists()} | {p.stem for p in PKG.glob("*.py")}
    big = [(str(p.relative_to(ROOT)), n) for p in PKG.rglob("*.py")
           if (n := len(p.read_text().splitlines())) > 310]
    assert not big, big


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
