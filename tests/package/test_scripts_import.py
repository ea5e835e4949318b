"""Every benchmark and tool script imports: a module moved in the package must not leave a
script behind that fails on its first line (they are run by hand, not by the suite)."""
from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted(p for d in ("benchmarks", "tools") for p in (ROOT / d).glob("*.py"))


@pytest.mark.subprocess
def test_every_benchmark_and_tool_imports():
    """One interpreter imports them all (each as its own module, ``main`` not run)."""
    code = (
        "import importlib.util, sys\n"
        "bad = []\n"
        "for path in sys.argv[1:]:\n"
        "    name = 'script_' + path.replace('/', '_').replace('.', '_')\n"
        "    spec = importlib.util.spec_from_file_location(name, path)\n"
        "    mod = importlib.util.module_from_spec(spec)\n"
        "    sys.modules[name] = mod\n"
        "    try:\n"
        "        spec.loader.exec_module(mod)\n"
        "    except SystemExit:\n"
        "        pass\n"
        "    except Exception as err:\n"
        "        bad.append(f'{path}: {type(err).__name__}: {err}')\n"
        "print('\\n'.join(bad))\n"
        "sys.exit(1 if bad else 0)\n")
    assert SCRIPTS and importlib.util.find_spec("minigraph")
    paths = [str(ROOT / "benchmarks")] + [str(ROOT)]
    done = subprocess.run([sys.executable, "-c", code, *map(str, SCRIPTS)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300,
                          env={"PYTHONPATH": ":".join(paths), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stdout + done.stderr
