"""ONNX file -> Relax IRModule with weights as ``main`` parameters (TVM's Relax ONNX frontend)."""
from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path

import numpy as np

from ..errors import BuildError, InputError

# lazy: onnx is the optional 'onnx' extra, and TVM's ONNX frontend imports it: only an .onnx model
# needs them


def load_onnx(path: str, batch: int, dtype: str):
    """Returns (mod, params, inputs, source). Weights stay graph inputs (keep_params_in_input)."""
    p = Path(path)
    if not p.is_file():
        raise InputError(f"{p}: no such ONNX file")
    try:
        import onnx
    except ImportError as err:
        raise InputError("ONNX models need the onnx package: pip install 'minigraph[onnx]'") from err
    try:
        model = onnx.load(str(p))
        # the checker given the path parses the file in C++; given the model, it first
        # serialises it again in Python (1.7 s more for 256 MiB of weights)
        onnx.checker.check_model(str(p))
    except Exception as err:  # onnx raises DecodeError, ValidationError, ...
        raise InputError(f"{p}: not a valid ONNX model ({type(err).__name__}: "
                         f"{str(err).strip().splitlines()[0][:200] if str(err).strip() else ''})") from err
    from tvm.relax.frontend import detach_params
    from tvm.relax.frontend.onnx import from_onnx
    shapes = _input_shapes(model, batch)
    try:
        with _checked_already(onnx):
            mod = from_onnx(model, shape_dict=shapes, keep_params_in_input=True)
    except Exception as err:  # noqa: BLE001 - the frontend raises many types
        raise BuildError(f"{p}: TVM's ONNX frontend failed: {str(err).strip().splitlines()[-1][:300]}"
                         ) from err
    mod, tvm_params = detach_params(mod)
    params = {v.name: a.numpy() for v, a in zip(mod["main"].params[len(shapes):],
                                                 tvm_params.get("main", []))}
    inputs = {n: (tuple(s), _dtype_of(model, n)) for n, s in shapes.items()}
    return mod, params, inputs, {"onnx": str(p.resolve()), "opset": _opset(model)}


@contextmanager
def _checked_already(onnx):
    """TVM's frontend runs onnx's checker on the model object again, only to warn; checked above
    from the file, the model is not serialised a second time for it (3 s for 256 MiB)."""
    check = onnx.checker.check_model
    onnx.checker.check_model = lambda *_args, **_kwargs: None
    try:
        yield
    finally:
        onnx.checker.check_model = check


def _input_shapes(model, batch: int) -> dict[str, list[int]]:
    """Graph inputs that are not initializers; a symbolic leading dim becomes the batch size."""
    inits = {i.name for i in model.graph.initializer}
    shapes = {}
    for inp in model.graph.input:
        if inp.name in inits:
            continue
        dims = inp.type.tensor_type.shape.dim
        shape = [d.dim_value if d.HasField("dim_value") else (batch if k == 0 else 0)
                 for k, d in enumerate(dims)]
        if any(s <= 0 for s in shape):
            raise InputError(f"ONNX input '{inp.name}' has a symbolic dimension other than the "
                             f"batch: {shape}; minigraph needs static shapes")
        shapes[inp.name] = shape
    return shapes


def _dtype_of(model, name: str) -> str:
    from onnx import helper
    for inp in model.graph.input:
        if inp.name == name:
            return str(np.dtype(helper.tensor_dtype_to_np_dtype(inp.type.tensor_type.elem_type)))
    return "float32"


def _opset(model) -> int:
    return max((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), default=0)
