"""An imported model prepared for inference: what ``relay.optimize`` + ``ConvertLayout`` did for
the old graph executor, on a Relax ``main`` whose weights stay parameters.

Steps (each recorded in build.json under ``preparation``):
1. ``fold``: batch norm and bias folded into the conv weights, constant subexpressions (the
   FC weight transpose, reshaped biases) evaluated in numpy (fold.py);
2. ``convert_layout``: conv2d to NHWC activations / HWIO weights, guarded (layout.py);
3. ``fold_layout``: the weight transposes ConvertLayout inserted, evaluated in numpy, so the
   HWIO weights are params and no transpose of a constant runs at inference time.
The weights never enter the module: model.so and model.vm.so hold code, model.params the data.
"""
from __future__ import annotations

import time

import numpy as np

from .fold import fold_for_inference
from .layout import convert_layout


def prepare_for_inference(mod, params: dict[str, np.ndarray], layout: bool = True):
    """Returns (module, params, steps); ``steps`` is a list of JSON-ready dicts. A step that
    fails on an unforeseen pattern is recorded and skipped: the model is then built as
    imported (slower kernels, same answers), never not at all."""
    steps: list[dict] = []
    done = {"mod": mod, "params": params}  # the last state every step so far agreed on
    try:
        return _prepare(mod, params, layout, steps, done)
    except Exception as err:  # noqa: BLE001 - TVM and numpy raise many types
        steps.append({"step": "abandoned", "reason": f"{type(err).__name__}: "
                      f"{str(err).strip().splitlines()[0][:200] if str(err).strip() else ''}",
                      "note": "the model is built as prepared by the steps above"})
        return done["mod"], done["params"], steps


def _prepare(mod, params: dict[str, np.ndarray], layout: bool, steps: list[dict], done: dict):
    t0 = time.perf_counter()
    mod, params, stats = fold_for_inference(mod, params)
    done.update(mod=mod, params=params)
    steps.append({"step": "fold", "seconds": round(time.perf_counter() - t0, 3),
                  "batch_norms_folded": stats.batch_norms_folded,
                  "affine_ops_folded_into_conv": stats.affine_into_conv,
                  "ops_evaluated_in_numpy": stats.folded_ops,
                  "derived_params": stats.new_params})
    if not layout:
        steps.append({"step": "convert_layout", "how": "skipped", "reason": "disabled"})
        return mod, params, steps
    t0 = time.perf_counter()
    res = convert_layout(mod)
    steps.append({"step": "convert_layout", "seconds": round(time.perf_counter() - t0, 3),
                  "nchw_conv2d": res.converted, "how": res.how, "reason": res.reason,
                  "scalar_operand_ops": list(res.leftovers[:10])})
    if res.how == "skipped":
        return mod, params, steps
    t0 = time.perf_counter()
    mod, params, stats = fold_for_inference(res.mod, params)
    steps.append({"step": "fold_layout", "seconds": round(time.perf_counter() - t0, 3),
                  "ops_evaluated_in_numpy": stats.folded_ops,
                  "derived_params": stats.new_params})
    return mod, params, steps
