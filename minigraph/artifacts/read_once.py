"""A model's files -> what is read of them before any of their code is loaded, read once.

``read_artifacts`` is called at the boundary (runtime/doors.py ``open_model``,
``DebugExecutor.from_files``, the CLI's explain) and its ``ModelArtifacts`` passed down: the library's
facts (artifacts/library.py ``classify``: ELF tables, ABI, kernels, an executable's bytecode)
and the build.json beside the library and beside graph.json. No stage below re-reads these
files or takes a "the facts, if you already have them" argument. graph.json itself is parsed by
the stage that checks it (runtime/load.py), so that its errors come before the library's.
Counterpart: what ``tvm.runtime.load_module`` reads of a file before ``dlopen``.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import InputError
from .buildinfo import read_build, read_builds
from .library import LibraryFacts, classify
from .model_files import ModelFiles


@dataclass(frozen=True)
class ModelArtifacts:
    files: ModelFiles
    # the classifier's facts, or why it could not read the library: with a graph.json, that
    # error is raised by ``facts`` once graph.json has been checked (its errors come first)
    classified: LibraryFacts | InputError
    lib_build: dict      # build.json beside the library ({}: none usable)
    graph_build: dict    # build.json beside graph.json (the same dict when it is one file)

    @property
    def readable(self) -> bool:
        """Whether the classifier could read the library."""
        return isinstance(self.classified, LibraryFacts)

    @property
    def facts(self) -> LibraryFacts:
        """The library's facts; InputError (the classifier's) if it could not be read."""
        if isinstance(self.classified, InputError):
            raise InputError(str(self.classified))
        return self.classified


def read_artifacts(files: ModelFiles) -> ModelArtifacts:
    """Reads the library and the build.json files once; without a graph.json an unreadable
    library is an InputError at once (there is nothing else to check first)."""
    try:
        classified: LibraryFacts | InputError = classify(files.lib)
    except InputError as err:
        if files.graph is None:
            raise
        classified = err
    if files.graph is None:
        lib_build = read_build(files.lib)
        return ModelArtifacts(files, classified, lib_build, {})
    lib_build, graph_build = read_builds(files.lib, files.graph)
    return ModelArtifacts(files, classified, lib_build, graph_build)
