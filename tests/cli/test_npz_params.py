"""``--params weights.npz``: numpy archives run the model exactly as its TVM param blob does."""
from __future__ import annotations

import numpy as np

from minigraph.artifacts.params import load_params_file
from minigraph.cli import main


def test_run_with_npz_params_gives_the_blobs_outputs(tiny_cnn, tmp_path, capsys):
    np.savez(tmp_path / "w.npz", **load_params_file(tiny_cnn / "model.params"))
    for name, params in [("blob", []), ("npz", ["--params", str(tmp_path / "w.npz")])]:
        assert main(["run", str(tiny_cnn), *params, "--out", str(tmp_path / name)]) == 0
    capsys.readouterr()
    outs = sorted(p.name for p in (tmp_path / "blob").glob("*.npy"))
    assert outs
    for out in outs:
        assert np.array_equal(np.load(tmp_path / "blob" / out), np.load(tmp_path / "npz" / out))


def test_npz_missing_a_weight_is_refused_by_name(tiny_cnn, tmp_path, capsys):
    params = load_params_file(tiny_cnn / "model.params")
    dropped = next(iter(params))
    np.savez(tmp_path / "w.npz", **{k: v for k, v in params.items() if k != dropped})
    assert main(["run", str(tiny_cnn), "--params", str(tmp_path / "w.npz")]) != 0
    assert dropped in capsys.readouterr().err
