"""Every path a user types works from any folder (issue #29): ``cd out && minigraph run model.so
graph.json`` once failed because ``model.so`` (or ``./model.so``, which pathlib shortens to it)
reached dlopen, which searches the library path for a name without a slash. Each command runs
here as the program, in a fresh process whose working directory is the model's own folder."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import cli_runner
import pytest

from minigraph.artifacts.model_files import locate
from minigraph.fileio import user_path
from minigraph.runtime.kernels import dlopen_failure

pytestmark = pytest.mark.subprocess


def _cli(cwd: Path, *args: str, home: Path | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    if home is not None:
        env["HOME"] = str(home)
    return cli_runner.run(args, cwd=cwd, env=env, timeout=300)


def _ok(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.fixture(scope="module")
def spaced(tiny_cnn, tmp_path_factory) -> Path:
    """The tiny-cnn build reached through a symlink whose name has a space in it."""
    link = tmp_path_factory.mktemp("links") / "my model"
    link.symlink_to(tiny_cnn, target_is_directory=True)
    return link


@pytest.mark.parametrize("args", [["model.so", "graph.json"], ["./model.so", "./graph.json"],
                                  ["."], ["model.vm.so"], ["./model.vm.so"]])
def test_run_from_the_models_own_folder(spaced, args):
    assert "output 0" in _ok(_cli(spaced, "run", *args))


def test_tilde_and_parent_paths(spaced):
    home = spaced.parent
    assert "output 0" in _ok(_cli(Path("/"), "run", "~/my model/model.so", "~/my model/graph.json",
                                  home=home))
    # '..' is the kernel's: from inside the link it names the real folder's parent
    assert "output 0" in _ok(_cli(spaced, "run", f"../{spaced.resolve().name}"))


def test_profile_and_diagnose_from_the_models_own_folder(spaced):
    out = _ok(_cli(spaced, "profile", "model.so", "graph.json", "--mode", "warm", "--quiet",
                   "--budget-ms", "20", "--json", "p.json"))
    assert "warm" in out and (spaced / "p.json").is_file()
    assert "warm" in _ok(_cli(spaced, "profile", "./model.vm.so", "--mode", "warm", "--quiet",
                              "--budget-ms", "20"))
    assert "first" in _ok(_cli(spaced, "diagnose", "model.so", "graph.json", "--quick",
                               "--quiet", "--no-protocols", "--gap-ms", "0")).lower()
    assert "warm" in _ok(_cli(spaced, "show", "p.json"))


def test_a_legacy_library_from_its_own_folder(legacy_model):
    d = legacy_model("A")
    assert "output 0" in _ok(_cli(d, "run", "deploy_lib.so", "deploy_graph.json"))
    assert "output 0" in _ok(_cli(d, "run", "."))
    assert "warm" in _ok(_cli(d, "profile", "./deploy_lib.so", "deploy_graph.json", "--mode",
                              "warm", "--quiet", "--budget-ms", "20"))


def test_paths_are_made_absolute_once_at_the_boundary(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert user_path("./model.so") == tmp_path / "model.so"
    assert user_path("~/x/model.so") == tmp_path / "x" / "model.so"
    files = locate("model.so", "graph.json")
    assert files.lib.is_absolute() and files.graph.is_absolute()


def test_a_missing_file_says_dlopen_and_its_reason_not_a_tvm_version():
    p = Path("/nowhere/model.so")
    said = dlopen_failure(p, "Check failed: (lib_handle_ != nullptr) is false: Failed to load "
                             f"dynamic shared library {p} {p}: cannot open shared object file: "
                             "No such file or directory")
    assert said == f"{p}: dlopen failed: cannot open shared object file: No such file or directory"
    assert "TVM version" in dlopen_failure(p, f"{p}: undefined symbol: TVMFuncCall")
