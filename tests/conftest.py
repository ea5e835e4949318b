"""Shared fixtures: zoo models are built once per session into a temp dir (tests/helpers/ holds
the plain helpers: model makers, printers, clocks, the browser)."""
from __future__ import annotations

import os
import signal
from pathlib import Path

import groundtruth
import pytest
import workers

# markers given by what a test uses (the other markers are written on the tests themselves)
FIXTURE_MARKS = {"legacy_model": ("cc",), "browser": ("browser",),
                 "reports": ("subprocess",),     # report/test_html.py: CLI runs in fresh processes
                 # diagnose/test_diagnose.py: a whole ladder, whose answer a neighbour changes
                 # (busy, it may end "unresolved")
                 "groundtruth": ("subprocess", workers.ALONE)}
MARK_MARKS = {"timing": workers.ALONE}  # a test that compares times holds the machine alone


def pytest_configure(config: pytest.Config) -> None:
    """The commands the tests start see Ctrl-C as from a terminal: a suite started as a
    script's background job ignores SIGINT, and the commands would inherit that (and rightly
    ignore it: tests/cli/test_stop.py checks that case on purpose). And, when it starts
    workers, the directory of their locks (tests/helpers/workers.py)."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    workers.open_locks(config)


def pytest_unconfigure(config: pytest.Config) -> None:
    workers.close_locks(config)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        names = getattr(item, "fixturenames", ())
        for fixture, marks in FIXTURE_MARKS.items():
            if fixture in names:
                for mark in marks:
                    item.add_marker(getattr(pytest.mark, mark))
        for mark, added in MARK_MARKS.items():
            if item.get_closest_marker(mark):
                item.add_marker(getattr(pytest.mark, added))
    if os.environ.get("PYTEST_XDIST_WORKER"):
        workers.first_units_first(items)


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's hook: absent under -p no:xdist
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    return workers.scheduler(config, log)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    """setup, call and teardown of one test, alone on the machine if it is marked so
    (tests/helpers/workers.py)."""
    with workers.machine_share(item.get_closest_marker(workers.ALONE) is not None):
        return (yield)


@pytest.fixture(scope="session")
def build_dir(tmp_path_factory):
    """build_dir(name) -> Path of that zoo model's artifacts, built at most once per session."""
    from minigraph.compiler.compiler import build
    cache: dict[str, Path] = {}

    def get(name: str) -> Path:
        if name not in cache:
            out = tmp_path_factory.mktemp(name.replace("-", "_"))
            build(name, out)
            cache[name] = out
        return cache[name]

    return get


@pytest.fixture(scope="session")
def tiny_cnn(build_dir) -> Path:
    return build_dir("tiny-cnn")


@pytest.fixture(scope="session")
def groundtruth_model(tmp_path_factory) -> Path:
    from minigraph.compiler.compiler import build
    out = tmp_path_factory.mktemp("groundtruth")
    build(str(groundtruth.write_groundtruth_onnx(out / "groundtruth.onnx")), out / "build")
    return out / "build"


@pytest.fixture(scope="session")
def legacy_model(tmp_path_factory):
    """legacy_model(variant) -> a directory with deploy_lib.so (old packed C ABI, compiled here
    by the system C compiler), deploy_graph.json and deploy_param.params; built once per variant:
    "A" (weak context pointers), "B" (system-lib, lazy binding), "B-now" (full RELRO, BIND_NOW),
    "B-noplt" (GOT calls, BIND_NOW)."""
    import legacy_abi_fixtures as fx
    if fx.compiler() is None:
        pytest.skip("no C compiler to build legacy-ABI fixture libraries")
    flags = {"A": ("A", ()), "B": ("B", ()), "B-now": ("B", ("-Wl,-z,now", "-Wl,-z,relro")),
             "B-noplt": ("B", ("-fno-plt", "-Wl,-z,now"))}
    cache: dict[str, Path] = {}

    def get(variant: str) -> Path:
        if variant not in cache:
            kind, extra = flags[variant]
            cache[variant] = fx.write_model(tmp_path_factory.mktemp(f"legacy_{variant}"), kind,
                                            extra)
        return cache[variant]

    return get


# what the in-process profiler, diagnose and thread configuration set for TVM (read once, at
# pool creation; the API says so), and the main thread's CPU affinity, which TVM's pool pins
# on its first parallel call: restored after every test, so a test that profiled in this
# process does not hand TVM_NUM_THREADS=1 or a one-CPU affinity (default threads: 1) to the
# next test's subprocesses
_THREAD_ENV = ("TVM_NUM_THREADS", "TVM_BIND_THREADS")


@pytest.fixture(autouse=True)
def _restore_thread_env():
    before = {k: os.environ.get(k) for k in _THREAD_ENV}
    cpus = os.sched_getaffinity(0)
    yield
    for k, v in before.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    if os.sched_getaffinity(0) != cpus:
        os.sched_setaffinity(0, cpus)


@pytest.fixture
def one_thread():
    """TVM's pool at one thread for an in-process timing test, then as it was: with a worker on
    every CPU a neighbour on one of them stalls each parallel kernel at its barrier for a
    scheduler slice (10 us kernels read 4 ms a call for whole profiles beside one spinning
    process; warm medians above cold ones), which is contention (test_verdict_corpus.py), not
    what such a test is about."""
    import tvm
    had = int(tvm.get_global_func("runtime.NumThreads")())
    config = tvm.get_global_func("runtime.config_threadpool")
    config(1, 1)  # kBig, one thread
    yield
    config(1, had)


@pytest.fixture(scope="session")
def llama_tiny(tmp_path_factory) -> Path:
    """The built-in llama-tiny LLM (2 layers, hidden 128), built once per session through
    ``minigraph build`` (llm/test_cli_run.py runs what that command wrote)."""
    from minigraph.cli import main
    out = tmp_path_factory.mktemp("llama_tiny") / "build"
    assert main(["build", "llama-tiny", "-o", str(out)]) == 0
    return out


@pytest.fixture(scope="session")
def shared_llm_compiles():
    """A context manager under which an LLM build compiles each distinct model once per
    session: llm/build.py's ``compile_llm`` (export, tvm.compile, export_library: seconds, a
    function of the config's shapes, the target and the attention kernels) runs for a model's
    first build, and the next build of the same shapes gets its library and kernel notes; each
    build still reads its own weights, saves its own params and writes its own build.json. The
    config's name is left out of the key: it labels build.json, nothing is compiled from it."""
    import contextlib
    import copy
    import dataclasses

    from minigraph.llm import build as llm_build
    from minigraph.llm.files import LIBRARY
    from minigraph.llm.model import CausalLM
    real, done = llm_build.compile_llm, {}

    def compile_once(config, target, work: Path, out: Path):
        key = (dataclasses.replace(config, name="-"), str(target), CausalLM.attention_kernels)
        if key in done:
            result, library = done[key]
            (out / LIBRARY).write_bytes(library)
        else:
            result = real(config, target, work, out)
            done[key] = copy.deepcopy(result), (out / LIBRARY).read_bytes()
        return copy.deepcopy(result)  # build_llm pops from the notes

    @contextlib.contextmanager
    def shared():
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(llm_build, "compile_llm", compile_once)
            yield
    return shared
