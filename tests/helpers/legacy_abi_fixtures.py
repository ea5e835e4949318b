"""Small libraries with the old (TVM <= 0.20) packed C ABI, compiled at test time with the system
C compiler, and an NNVM-style model over them (graph.json, params, a float64 numpy reference).

The kernels check their arguments the way MakePackedAPI's generated code does (argument count,
type codes, ndim, dtype, shape constants, device) and report failures through
TVMAPISetLastError with TVM's own wording ("Assert fail: ..., <name>: num_args should be N").
Variant A reaches the runtime through weak ``__TVM*`` pointer variables the loader fills in;
variant B (system-lib) imports ``TVMBackend*`` and registers its kernels from a constructor.
Used by tests/runtime/test_legacy*.py and benchmarks/legacy_kernels.py; nothing here is downloaded.
"""
from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
from pathlib import Path

import numpy as np

HEADER = r"""
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
typedef struct { void* data; int32_t device_type, device_id, ndim; uint8_t code, bits;
                 uint16_t lanes; int64_t* shape; int64_t* strides; uint64_t byte_offset; } DLTensor;
typedef union { int64_t v_int64; double v_float64; void* v_handle; } TVMValue;
typedef struct { void* sync_handle; int32_t num_task; } TVMParallelGroupEnv;
typedef int (*FTVMParallelLambda)(int, TVMParallelGroupEnv*, void*);
#ifdef VARIANT_B
void TVMAPISetLastError(const char*);
int TVMBackendParallelLaunch(FTVMParallelLambda, void*, int);
void* TVMBackendAllocWorkspace(int, int, uint64_t, int, int);
int TVMBackendFreeWorkspace(int, int, void*);
int TVMBackendRegisterSystemLibSymbol(const char*, void*);
int TVMBackendGetFuncFromEnv(void*, const char*, void**);
int TVMFuncCall(void*, TVMValue*, int*, int, TVMValue*, int*);
static void* module_ctx_b = 0;
#define GET_FUNC TVMBackendGetFuncFromEnv
#define FUNC_CALL TVMFuncCall
#define MODULE_CTX module_ctx_b
#define SET_ERROR TVMAPISetLastError
#define LAUNCH TVMBackendParallelLaunch
#define ALLOC TVMBackendAllocWorkspace
#define FREE TVMBackendFreeWorkspace
#else
__attribute__((weak)) void (*__TVMAPISetLastError)(const char*) = 0;
__attribute__((weak)) int (*__TVMBackendParallelLaunch)(FTVMParallelLambda, void*, int) = 0;
__attribute__((weak)) int (*__TVMBackendParallelBarrier)(int, TVMParallelGroupEnv*) = 0;
__attribute__((weak)) void* (*__TVMBackendAllocWorkspace)(int, int, uint64_t, int, int) = 0;
__attribute__((weak)) int (*__TVMBackendFreeWorkspace)(int, int, void*) = 0;
__attribute__((weak)) int (*__TVMBackendGetFuncFromEnv)(void*, const char*, void**) = 0;
__attribute__((weak)) int (*__TVMFuncCall)(void*, TVMValue*, int*, int, TVMValue*, int*) = 0;
__attribute__((weak)) void* __tvm_module_ctx = 0;
#define GET_FUNC __TVMBackendGetFuncFromEnv
#define FUNC_CALL __TVMFuncCall
#define MODULE_CTX __tvm_module_ctx
#define SET_ERROR __TVMAPISetLastError
#define LAUNCH __TVMBackendParallelLaunch
#define ALLOC __TVMBackendAllocWorkspace
#define FREE __TVMBackendFreeWorkspace
#endif
static char msg_[512];
#define FAIL(...) do { snprintf(msg_, sizeof msg_, __VA_ARGS__); SET_ERROR(msg_); return -1; } while (0)
#define NUM_ARGS(name, n) if (num_args != n) { \
    SET_ERROR("Assert fail: (num_args == " #n "), " name ": num_args should be " #n); return -1; }
/* type code, ndim, dtype, shape and device of argument i, as ArgBinder::BindDLTensor checks */
static int check_(const char* name, TVMValue* args, int* codes, int i, int code, int bits,
                  int ndim, const int64_t* shape) {
  if (codes[i] != 7 && codes[i] != 13 && codes[i] != 3 && codes[i] != 4) {
    snprintf(msg_, sizeof msg_, "Assert fail: %s: Expect arg[%d] to be pointer", name, i);
    SET_ERROR(msg_); return -1; }
  DLTensor* t = (DLTensor*)args[i].v_handle;
  if (t->ndim != ndim) {
    snprintf(msg_, sizeof msg_, "Assert fail: (%d == tvm_struct_get(arg%d, 0, 5)), arg%d.ndim "
             "is expected to equal %d", ndim, i, i, ndim); SET_ERROR(msg_); return -1; }
  if (t->code != code || t->bits != bits || t->lanes != 1) {
    snprintf(msg_, sizeof msg_, "Assert fail: dtype of arg%d, arg%d.dtype is expected to be "
             "code %d bits %d", i, i, code, bits); SET_ERROR(msg_); return -1; }
  for (int d = 0; d < ndim; ++d) if (t->shape[d] != shape[d]) {
    snprintf(msg_, sizeof msg_, "Assert fail: (%lld == int32(arg%d.shape[%d])), Argument "
             "arg%d.shape[%d] has an unsatisfied constraint", (long long)shape[d], i, d, i, d);
    SET_ERROR(msg_); return -1; }
  if (t->strides != 0 || t->byte_offset != 0 || t->device_type != 1) {
    snprintf(msg_, sizeof msg_, "Assert fail: Argument arg%d.device_type has an unsatisfied "
             "constraint", i); SET_ERROR(msg_); return -1; }
  return 0;
}
#define ARG(i, code, bits, ...) do { static const int64_t s_[] = {__VA_ARGS__}; \
    if (check_(NAME, args, codes, i, code, bits, sizeof s_ / sizeof s_[0], s_)) return -1; } while (0)
#define PTR(i, T) ((T*)((DLTensor*)args[i].v_handle)->data)
#define KERNEL(f) int f(TVMValue* args, int* codes, int num_args, TVMValue* ret, int* ret_code, void* rh)
"""

MODEL_KERNELS = r"""
#define NAME "fuse___layout_transform___1"
KERNEL(fuse___layout_transform___1) {  /* NCHW [1,4,6,6] -> NCHW2c [1,2,6,6,2] */
  NUM_ARGS(NAME, 2); ARG(0, 2, 32, 1, 4, 6, 6); ARG(1, 2, 32, 1, 2, 6, 6, 2);
  float *x = PTR(0, float), *y = PTR(1, float);
  for (int c = 0; c < 4; ++c) for (int p = 0; p < 36; ++p) y[((c / 2) * 36 + p) * 2 + c % 2] = x[c * 36 + p];
  return 0; }
#undef NAME
typedef struct { float *x, *w, *b, *y; } conv_closure;
static int conv_lambda(int task, TVMParallelGroupEnv* env, void* cdata) {
  conv_closure* c = (conv_closure*)cdata;      /* rows (oc_chunk, h) split over the tasks */
  int rows = 2 * 6, per = (rows + env->num_task - 1) / env->num_task;
  for (int r = task * per; r < rows && r < (task + 1) * per; ++r) {
    int oc = r / 6, h = r % 6;
    for (int w = 0; w < 6; ++w) for (int ob = 0; ob < 2; ++ob) {
      float acc = c->b[oc * 2 + ob];
      for (int ic = 0; ic < 2; ++ic) for (int ib = 0; ib < 2; ++ib)
        acc += c->x[((ic * 6 + h) * 6 + w) * 2 + ib] * c->w[((oc * 2 + ic) * 2 + ib) * 2 + ob];
      c->y[((oc * 6 + h) * 6 + w) * 2 + ob] = acc > 0 ? acc : 0; } }
  return 0; }
#define NAME "fuse__contrib_conv2d_NCHWc_broadcast_add_relu"
KERNEL(fuse__contrib_conv2d_NCHWc_broadcast_add_relu) {  /* 1x1 conv in NCHW2c, parallel */
  NUM_ARGS(NAME, 4); ARG(0, 2, 32, 1, 2, 6, 6, 2); ARG(1, 2, 32, 2, 2, 1, 1, 2, 2);
  ARG(2, 2, 32, 2, 1, 1, 2); ARG(3, 2, 32, 1, 2, 6, 6, 2);
  conv_closure c = {PTR(0, float), PTR(1, float), PTR(2, float), PTR(3, float)};
  return LAUNCH(conv_lambda, &c, 0); }
#undef NAME
#define NAME "fuse___layout_transform___2"
KERNEL(fuse___layout_transform___2) {  /* NCHW2c -> NCHW */
  NUM_ARGS(NAME, 2); ARG(0, 2, 32, 1, 2, 6, 6, 2); ARG(1, 2, 32, 1, 4, 6, 6);
  float *x = PTR(0, float), *y = PTR(1, float);
  for (int c = 0; c < 4; ++c) for (int p = 0; p < 36; ++p) y[c * 36 + p] = x[((c / 2) * 36 + p) * 2 + c % 2];
  return 0; }
#undef NAME
#define NAME "fuse_mean"
KERNEL(fuse_mean) {  /* [1,4,6,6] -> [1,4], partial sums in a workspace */
  NUM_ARGS(NAME, 2); ARG(0, 2, 32, 1, 4, 6, 6); ARG(1, 2, 32, 1, 4);
  double* ws = (double*)ALLOC(1, 0, 4 * sizeof(double), 2, 64);
  if (!ws) FAIL("Assert fail: workspace, " NAME ": TVMBackendAllocWorkspace returned NULL");
  float *x = PTR(0, float), *y = PTR(1, float);
  for (int c = 0; c < 4; ++c) { ws[c] = 0; for (int p = 0; p < 36; ++p) ws[c] += x[c * 36 + p]; }
  for (int c = 0; c < 4; ++c) y[c] = (float)(ws[c] / 36.0);
  return FREE(1, 0, ws); }
#undef NAME
#define NAME "fuse_cast_multiply"
KERNEL(fuse_cast_multiply) {  /* float32[4] * cast(uint8[4]) */
  NUM_ARGS(NAME, 3); ARG(0, 2, 32, 4); ARG(1, 1, 8, 4); ARG(2, 2, 32, 4);
  for (int i = 0; i < 4; ++i) PTR(2, float)[i] = PTR(0, float)[i] * (float)PTR(1, uint8_t)[i];
  return 0; }
#undef NAME
#define NAME "fuse_split"
KERNEL(fuse_split) {  /* [4] -> [2], [2]: two outputs */
  NUM_ARGS(NAME, 3); ARG(0, 2, 32, 4); ARG(1, 2, 32, 2); ARG(2, 2, 32, 2);
  for (int i = 0; i < 2; ++i) { PTR(1, float)[i] = PTR(0, float)[i]; PTR(2, float)[i] = PTR(0, float)[i + 2]; }
  return 0; }
#undef NAME
#define NAME "fuse_argmax"
KERNEL(fuse_argmax) {  /* [4] -> int64 argmax [1], int32 count of positives [1] */
  NUM_ARGS(NAME, 3); ARG(0, 2, 32, 4); ARG(1, 0, 64, 1); ARG(2, 0, 32, 1);
  float* x = PTR(0, float); int64_t best = 0; int32_t pos = 0;
  for (int i = 0; i < 4; ++i) { if (x[i] > x[best]) best = i; pos += x[i] > 0; }
  PTR(1, int64_t)[0] = best; PTR(2, int32_t)[0] = pos;
  return 0; }
#undef NAME
#define NAME "fuse_add_many"
KERNEL(fuse_add_many) {  /* ten [2] inputs summed: a kernel with 11 arguments */
  NUM_ARGS(NAME, 11);
  for (int i = 0; i < 11; ++i) ARG(i, 2, 32, 2);
  for (int j = 0; j < 2; ++j) { float s = 0; for (int i = 0; i < 10; ++i) s += PTR(i, float)[j];
                                PTR(10, float)[j] = s; }
  return 0; }
#undef NAME
"""

WHOAMI_KERNEL = r"""
typedef struct { int64_t* out; } who_closure;
static int who_lambda(int task, TVMParallelGroupEnv* env, void* cdata) {
  int64_t* out = ((who_closure*)cdata)->out;
  if (task < 8) { out[task * 2] = env->num_task; out[task * 2 + 1] = (int64_t)syscall(SYS_gettid); }
  return 0; }
#define NAME "fuse_whoami"
KERNEL(fuse_whoami) {  /* per task: (num_task, the thread id that ran it) */
  NUM_ARGS(NAME, 1); ARG(0, 0, 64, 8, 2);
  memset(PTR(0, int64_t), 0, 16 * sizeof(int64_t));
  who_closure c = {PTR(0, int64_t)};
  return LAUNCH(who_lambda, &c, 0); }
#undef NAME
typedef struct { float *x, *y; int64_t n; } heavy_closure;
static int heavy_lambda(int task, TVMParallelGroupEnv* env, void* cdata) {
  heavy_closure* c = (heavy_closure*)cdata;
  int64_t per = (c->n + env->num_task - 1) / env->num_task;
  for (int64_t i = task * per; i < c->n && i < (task + 1) * per; ++i) {
    float v = c->x[i]; for (int k = 0; k < 400; ++k) v = v * 0.999f + 0.001f; c->y[i] = v; }
  return 0; }
#define NAME "fuse_heavy"
KERNEL(fuse_heavy) {  /* [65536] -> [65536], 400 dependent multiply-adds per element */
  NUM_ARGS(NAME, 2); ARG(0, 2, 32, 65536); ARG(1, 2, 32, 65536);
  heavy_closure c = {PTR(0, float), PTR(1, float), 65536};
  return LAUNCH(heavy_lambda, &c, 0); }
#undef NAME
"""

EXTERN_KERNEL = r"""
#define NAME "fuse_dense_cblas"
KERNEL(fuse_dense_cblas) {  /* what an extern BLAS call compiled to: runtime lookups */
  void* f = 0;
  if (GET_FUNC(MODULE_CTX, "tvm.contrib.cblas.matmul", &f)) return -1;
  int rc = 0; TVMValue rv;
  return FUNC_CALL(f, args, codes, num_args, &rv, &rc); }
#undef NAME
"""

SORT_KERNEL = r"""
#define NAME "fuse_argsort"
KERNEL(fuse_argsort) {  /* descending argsort of [6] through tvm.contrib.sort.argsort, as
                           TOPI's CPU argsort (and NMS) lowered it: a packed call */
  NUM_ARGS(NAME, 2); ARG(0, 2, 32, 6); ARG(1, 0, 32, 6);
  static void* f = 0;
  if (!f && GET_FUNC(MODULE_CTX, "tvm.contrib.sort.argsort", &f)) return -1;
  TVMValue v[4], rv; int c[4] = {7, 7, 0, 0}, rc = 0;
  v[0].v_handle = args[0].v_handle; v[1].v_handle = args[1].v_handle;
  v[2].v_int64 = 0; v[3].v_int64 = 0;
  return FUNC_CALL(f, v, c, 4, &rv, &rc); }
#undef NAME
"""

def _registration(names: tuple[str, ...]) -> str:
    """variant B's __tvm_module_startup: every kernel and the module context registered."""
    calls = "".join(f'  TVMBackendRegisterSystemLibSymbol("{n}", (void*){n});\n' for n in names)
    return ("static void* __tvm_module_ctx_b = 0;\n"
            "__attribute__((constructor)) static void __tvm_module_startup(void) {\n"
            '  TVMBackendRegisterSystemLibSymbol("__tvm_module_ctx", &__tvm_module_ctx_b);\n'
            f"{calls}}}\n")


def compiler() -> str | None:
    return shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")


def build_library(out: Path, body: str, variant: str = "A", flags: tuple[str, ...] = (),
                  extra_c: str = "") -> Path:
    """Compiles HEADER + ``body`` (+ variant B's constructor registering every KERNEL of
    ``body``) into ``out``."""
    names = tuple(re.findall(r"^KERNEL\((\w+)\)", body, re.M))
    src = out.with_suffix(".c")
    defines = "#define VARIANT_B 1\n" if variant == "B" else ""
    src.write_text(defines + HEADER + body + extra_c + (_registration(names) if variant == "B"
                                                        else ""))
    cc = compiler()
    if cc is None:
        raise RuntimeError("no C compiler (cc, gcc or clang) to build legacy-ABI fixtures")
    subprocess.run([cc, "-O2", "-shared", "-fPIC", *flags, "-o", str(out), str(src)],
                   check=True, capture_output=True, text=True)
    return out


def blob_c(name: str, payload: bytes) -> str:
    """A C definition of ``name`` holding ``payload`` behind its u64 length, as
    PackImportsToC writes ``__tvm_dev_mblob``."""
    data = struct.pack("<Q", len(payload)) + payload
    return (f"const unsigned char {name}[{len(data)}] = {{" +
            ",".join(str(b) for b in data) + "};\n")


def dmlc_str(s: str | bytes) -> bytes:
    raw = s.encode() if isinstance(s, str) else s
    return struct.pack("<Q", len(raw)) + raw


def factory_blob(graph_json: str, params_blob: bytes) -> bytes:
    """``_lib`` + ``GraphExecutorFactory`` (graph, params, name) + ``_import_tree``, as Relay's
    export_library packs them (params_blob: a standard param blob, re-split here)."""
    count = struct.unpack_from("<Q", params_blob, 16)[0]
    pos, names = 24, []
    for _ in range(count):
        n = struct.unpack_from("<Q", params_blob, pos)[0]
        names.append(params_blob[pos + 8:pos + 8 + n])
        pos += 8 + n
    arrays = params_blob[pos + 8:]
    factory = dmlc_str(graph_json) + struct.pack("<QQ", count, count) + \
        b"".join(dmlc_str(n) for n in names) + arrays + dmlc_str("default")
    tree = struct.pack("<Q", 3) + struct.pack("<3Q", 0, 1, 1) + struct.pack("<Q", 1) + \
        struct.pack("<Q", 1)
    return struct.pack("<Q", 3) + dmlc_str("GraphExecutorFactory") + factory + \
        dmlc_str("_lib") + dmlc_str("_import_tree") + tree


# ---- the NNVM-style model over MODEL_KERNELS ---------------------------------------------------
def model_graph() -> dict:
    """graph.json in NNVM's form: fuse_* names, NCHWc layouts, params named after layout
    transforms, a 'dtype' list_int attr, no device_index; __nop and __copy nodes, an op with two
    outputs, int64/int32/uint8 entries, and storage shared by entries of different sizes."""
    def null(name):
        return {"op": "null", "name": name, "inputs": []}

    def op(name, func, inputs, n_out=1):
        return {"op": "tvm_op", "name": name, "inputs": [[i, k, 0] for i, k in inputs],
                "attrs": {"flatten_data": "0", "func_name": func, "num_inputs": str(len(inputs)),
                          "num_outputs": str(n_out)}}
    nodes = [null("data"), op("data_NCHW2c", "fuse___layout_transform___1", [(0, 0)]),
             null("conv_weight_OIHW2i2o"), null("bias_expand"),
             op("relu0", "fuse__contrib_conv2d_NCHWc_broadcast_add_relu", [(1, 0), (2, 0), (3, 0)]),
             op("relu0_NCHW", "fuse___layout_transform___2", [(4, 0)]),
             op("mean0", "fuse_mean", [(5, 0)]), op("reshape0", "__nop", [(6, 0)]),
             null("scale"), op("mul0", "fuse_cast_multiply", [(7, 0), (8, 0)]),
             op("split0", "fuse_split", [(9, 0)], 2), op("argmax0", "fuse_argmax", [(9, 0)], 2),
             op("copy0", "__copy", [(10, 1)]),
             op("sum0", "fuse_add_many", [(10, 0), (12, 0)] * 5)]
    shapes = [[1, 4, 6, 6], [1, 2, 6, 6, 2], [2, 2, 1, 1, 2, 2], [2, 1, 1, 2], [1, 2, 6, 6, 2],
              [1, 4, 6, 6], [1, 4], [4], [4], [4], [2], [2], [1], [1], [2], [2]]
    dltypes = ["float32"] * 8 + ["uint8"] + ["float32"] * 3 + ["int64", "int32"] + ["float32"] * 2
    sids = [0, 1, 2, 3, 4, 1, 4, 4, 5, 6, 7, 8, 9, 10, 11, 12]
    row_ptr = [0]
    for n in nodes:
        row_ptr.append(row_ptr[-1] + int(n.get("attrs", {}).get("num_outputs", 1)))
    return {"nodes": nodes, "arg_nodes": [0, 2, 3, 8], "node_row_ptr": row_ptr,
            "heads": [[13, 0, 0], [11, 0, 0], [11, 1, 0], [7, 0, 0]],
            "attrs": {"storage_id": ["list_int", sids], "dtype": ["list_int", [0] * len(sids)],
                      "dltype": ["list_str", dltypes], "shape": ["list_shape", shapes]}}


def model_params(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"conv_weight_OIHW2i2o": rng.standard_normal((2, 2, 1, 1, 2, 2)).astype("float32"),
            "bias_expand": rng.standard_normal((2, 1, 1, 2)).astype("float32"),
            "scale": np.array([1, 2, 3, 250], dtype="uint8")}


def reference(data: np.ndarray, p: dict[str, np.ndarray]) -> list[np.ndarray]:
    """The model in float64 numpy, written from the ops' definitions (NCHW throughout)."""
    x = data.astype(np.float64)[0]                                       # [4, 6, 6]
    w = p["conv_weight_OIHW2i2o"].astype(np.float64)                      # [O/2, I/2, 1, 1, 2i, 2o]
    w_oi = w[:, :, 0, 0].transpose(0, 3, 1, 2).reshape(4, 4)              # [O, I]
    b = p["bias_expand"].astype(np.float64).reshape(4)
    y = np.maximum(np.einsum("oi,ihw->ohw", w_oi, x) + b[:, None, None], 0)
    mean = y.mean(axis=(1, 2))                                            # [4]
    mul = mean * p["scale"].astype(np.float64)
    first, second = mul[:2], mul[2:]
    total = 5 * first + 5 * second
    return [total, np.array([np.argmax(mul)]), np.array([np.sum(mul > 0)]), mean]


def write_model(d: Path, variant: str = "A", flags: tuple[str, ...] = ()) -> Path:
    """deploy_lib.so + deploy_graph.json + deploy_param.params in ``d`` (TVM's tutorial names)."""
    from minigraph.artifacts.params import save_params
    d.mkdir(parents=True, exist_ok=True)
    build_library(d / "deploy_lib.so", MODEL_KERNELS + WHOAMI_KERNEL + SORT_KERNEL, variant, flags)
    (d / "deploy_graph.json").write_text(json.dumps(model_graph(), indent=2))
    (d / "deploy_param.params").write_bytes(save_params(model_params()))
    return d
