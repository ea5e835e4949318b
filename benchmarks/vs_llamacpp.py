"""minigraph vs llama.cpp on the same LLM: prefill and decode tokens/s side by side, each against
this machine's FMA and read-bandwidth rooflines, after checking that both compute the same logits.

llama.cpp is built from source: the ``llama-cpp-python`` sdist on PyPI vendors llama.cpp's full
tree (``pip download --no-deps --no-binary :all: llama-cpp-python``); its ``vendor/llama.cpp``
is built with cmake, Release, CPU only (``GGML_NATIVE=ON``, no BLAS, no CUDA/Vulkan/Metal,
OpenMP as llama.cpp defaults), targets ``llama-bench`` and ``libllama``, one line added to
llama-bench so that its ``-ctk/-ctv`` accept ``f32`` (``PATCHES`` below), plus a 60-line C
program against libllama that writes the logits of given token ids (``LOGITS_C`` below). All of
it lives in ``~/.cache/minigraph/llamacpp/llama-cpp-python-<version>/`` (``$XDG_CACHE_HOME``
honoured); a ``built.json`` there says it is complete, and a later run reuses it (the newest
one, unless ``--llamacpp-version`` names another; ``--skip-build`` refuses to build).

The model (``--model``, default ``llama-100m``: Llama, hidden 768, 12 layers, 12 query / 4 KV
heads, head_dim 64, intermediate 2048, vocab 32000, float32, seeded weights; or a Hugging Face
folder, or a minigraph LLM build directory, whose build.json names its source) is written
twice from the same Hugging Face-named float32 tensors, into ``~/.cache/minigraph/llamacpp/
models/`` (kept for later runs: ``--rebuild-model`` after changing minigraph's LLM build): a
minigraph build (``build_llm``) and an F32 GGUF (the ``gguf`` package, llama.cpp's
gguf-py; no torch), written as llama.cpp's ``convert_hf_to_gguf.py`` writes a Llama: the
``llama`` architecture's metadata, tensors ``token_embd``, ``blk.N.attn_norm / attn_q / attn_k /
attn_v / attn_output / ffn_norm / ffn_gate / ffn_up / ffn_down``, ``output_norm``, ``output``,
and q/k rows permuted as its ``LlamaModel.permute`` does (Hugging Face checkpoints hold q/k for
rotate-half RoPE; llama.cpp's LLAMA graph rotates adjacent pairs). The tokenizer in the GGUF is
a stand-in: a SentencePiece-style ("llama") vocabulary of the model's size (<unk>, <s>, </s>,
the 256 byte tokens, then placeholder pieces). Nothing here tokenizes text: both sides are
given token ids (llama-bench draws random ids itself; its first token is <s>).

llama.cpp's attention (``--llamacpp-attn``): by default float32 over a float32 KV cache, as
minigraph computes it: ``-fa off -ctk f32 -ctv f32``. llama-bench's own default (flash
attention auto, i.e. on for CPU, over an F16 KV cache; with a float32 cache flash attention
casts K and V to F16 first) rounds attention through F16: on llama-tiny its logits are
1e-4..1e-3 relative off a float64 reference where flash attention off is 2e-7 off.
``--llamacpp-attn default`` times that configuration instead (checked the same way: raise
``--tolerance``).

Check first (``--tolerance``, default 1e-3): the same 128 token ids, then 4 given decode ids,
through llama.cpp (the C program, with the attention settings timed) and through minigraph's
engine; for each of the 5 logits vectors max|minigraph - llama.cpp| / max|llama.cpp| must be
within tolerance, or the run stops (the two sides would not be the same model).

What it measures, for T in ``--threads`` (default 1,2):
  pp   prefill of ``--prompt-len`` (128) tokens into an empty KV cache
       llama.cpp: ``llama-bench -p 128 -n 0 -t T -fa off -ctk f32 -ctv f32 -r REPS -o json``
       minigraph: ``Engine.forward(prompt)`` on a fresh cache, after one untimed prefill
  tg   ``--decode`` (128) decode steps after a context of ``--depth`` (128) tokens, i.e. at
       depths 128..255 (the cache filled by an untimed prefill each repetition)
       llama.cpp: ``llama-bench -p 0 -n 128 -d 128 -t T -fa off -ctk f32 -ctv f32 ...``
       minigraph: 128 ``Engine.forward([id])`` calls, the time of the 128 together
Each (side, phase, T) runs in a fresh process, ``--reps`` repetitions inside it (the median is
that process's figure: llama-bench's ``samples_ns``, minigraph's own timings); ``--rounds``
rounds, every round running every (side, phase, T) once, in an order reversed every round.
tokens/s is tokens / time, as llama-bench's ``t/s`` (it times the same thing: a whole prefill,
or 128 decode calls with a synchronize each).

llama.cpp's CPU threads are OpenMP's (its default build), which spin at every barrier: on a
machine other processes also load, 2 threads on 2 cores collapse (here: tg 4 tokens/s at T=2
against 25 at T=1, a run with load average ~5; ``OMP_WAIT_POLICY=passive`` gave 23).
``--llamacpp-env OMP_WAIT_POLICY=passive`` runs llama.cpp that way; the load average at the
start and end of the timing is printed with the table. TVM's pool spins too, a bounded count
(``TVM_THREAD_POOL_SPIN_COUNT``) before it sleeps.

Printed per T and phase: each side's tokens/s (median over rounds, the rounds' range in
brackets), time ratio minigraph/llama.cpp (of the medians, and the median of per-round ratios:
paired, less sensitive to load drifting between rounds), and each side's share of a roofline:
  pp   GFLOP/s / the FMA peak for T threads (measure/peak.py); FLOPs counted as the model's
       math: every linear layer on every prompt token, causal attention (QK^T and PV over the
       positions each token sees), the LM head on the last position only (both sides compute
       only that one: llama.cpp outputs the last position's logits when the batch asks no
       others, minigraph's prefill returns only the last)
  tg   GB/s / the read bandwidth at T threads (measure/bandwidth.py); bytes per step: every
       weight once (of the embedding table one row), plus the float32 KV cache read at that
       depth (with ``--llamacpp-attn default`` llama.cpp reads half those KV bytes)
Both peaks are this machine's, cached per CPU model (measured on first use); the CPU model is
printed with the figures: they hold for that CPU only. On a shared machine re-run on a quiet one.

    pip install gguf        # (or llama.cpp's gguf-py from the unpacked sdist, used if absent)
    PYTHONPATH=. python benchmarks/vs_llamacpp.py                 # build once, then measure
    PYTHONPATH=. python benchmarks/vs_llamacpp.py --threads 2 --rounds 5 --skip-build
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SDIST = "llama-cpp-python"
CMAKE_FLAGS = ("-DCMAKE_BUILD_TYPE=Release", "-DGGML_NATIVE=ON", "-DGGML_CUDA=OFF",
               "-DGGML_BLAS=OFF", "-DGGML_VULKAN=OFF", "-DGGML_METAL=OFF", "-DGGML_CCACHE=OFF",
               "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF",
               "-DLLAMA_BUILD_SERVER=OFF", "-DLLAMA_BUILD_APP=OFF", "-DLLAMA_OPENSSL=OFF",
               "-DBUILD_SHARED_LIBS=ON")
TARGETS = ("llama-bench", "llama")
# One change to llama.cpp's source before building: llama-bench's -ctk/-ctv accept only f16,
# bf16 and quantized types (its ggml_type_from_name); "f32" is added, so that llama-bench can
# time the float32 KV cache minigraph has (libllama itself takes any type). (file, the line it
# goes before, the lines)
PATCHES = {"llama-bench-ctk-f32": (
    "tools/llama-bench/llama-bench.cpp",
    '    if (s == "f16") {\n        return GGML_TYPE_F16;',
    ('    if (s == "f32") {  // added by minigraph benchmarks/vs_llamacpp.py\n'
     '        return GGML_TYPE_F32;\n    }\n'))}
LOGITS_TOOL = "mg-llama-logits"
# --llamacpp-attn: llama.cpp's attention, as (llama-bench -fa, KV cache type, the tool's FA code).
# "f32": float32 attention over a float32 KV cache, as minigraph's (flash attention off: on, it
# casts K and V to F16 first, llama-graph.cpp's build_attn_mha); "default": llama-bench's own
# defaults (flash attention auto, which is on for CPU, over an F16 KV cache)
ATTN = {"f32": ("off", "f32", "0"), "default": ("auto", "f16", "-1")}
CHECK_PROMPT, CHECK_DECODE = 128, 4   # token ids of the logits check: prompt, then decode steps
SEED = 0

# The logits tool: prefill of N_PROMPT ids, then one decode call per further id; the last
# position's logits of each call, float32, appended to OUT. FA: flash attention -1 auto, 0 off,
# 1 on; KV: the KV cache's type, f32 or f16 (llama-bench's -fa, -ctk/-ctv).
LOGITS_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "llama.h"

static void quiet(enum ggml_log_level level, const char *text, void *user) {
    (void)user;
    if (level >= GGML_LOG_LEVEL_ERROR) fputs(text, stderr);
}

int main(int argc, char **argv) {
    if (argc < 8) {
        fprintf(stderr, "usage: %s MODEL THREADS N_PROMPT OUT FA KV ID...\n", argv[0]);
        return 2;
    }
    int threads = atoi(argv[2]), n_prompt = atoi(argv[3]), fa = atoi(argv[5]), n = argc - 7;
    enum ggml_type kv = strcmp(argv[6], "f16") == 0 ? GGML_TYPE_F16 : GGML_TYPE_F32;
    if (n_prompt < 1 || n_prompt > n) { fprintf(stderr, "bad N_PROMPT\n"); return 2; }
    llama_token *ids = malloc(sizeof(llama_token) * n);
    for (int i = 0; i < n; i++) ids[i] = atoi(argv[7 + i]);
    llama_log_set(quiet, NULL);
    llama_backend_init();
    struct llama_model_params mp = llama_model_default_params();
    struct llama_model *model = llama_model_load_from_file(argv[1], mp);
    if (!model) { fprintf(stderr, "cannot load %s\n", argv[1]); return 1; }
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = n + 64;
    cp.n_batch = n_prompt;
    cp.n_ubatch = n_prompt;
    cp.n_threads = threads;
    cp.n_threads_batch = threads;
    cp.type_k = kv;
    cp.type_v = kv;
    cp.flash_attn_type = (enum llama_flash_attn_type)fa;
    struct llama_context *ctx = llama_init_from_model(model, cp);
    if (!ctx) { fprintf(stderr, "cannot create a context\n"); return 1; }
    int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
    FILE *out = fopen(argv[4], "wb");
    if (!out) { perror(argv[4]); return 1; }
    for (int pos = 0; pos < n; ) {
        int len = pos == 0 ? n_prompt : 1;
        if (llama_decode(ctx, llama_batch_get_one(ids + pos, len))) {
            fprintf(stderr, "llama_decode failed at %d\n", pos);
            return 1;
        }
        fwrite(llama_get_logits_ith(ctx, -1), sizeof(float), n_vocab, out);
        pos += len;
    }
    fclose(out);
    llama_free(ctx);
    llama_model_free(model);
    llama_backend_free();
    printf("%d\n", n_vocab);
    return 0;
}
"""


# ---------------------------------------------------------------------------------------------
# llama.cpp: fetched as the llama-cpp-python sdist, built once into the cache


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "minigraph" / "llamacpp"


class LlamaCpp:
    """A built llama.cpp in the cache: llama-bench, libllama and the logits tool."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.src = home / "src" / "vendor" / "llama.cpp"
        self.build = home / "build"
        self.bench = self.build / "bin" / "llama-bench"
        tag = hashlib.sha1(LOGITS_C.encode()).hexdigest()[:8]
        self.logits = home / "bin" / f"{LOGITS_TOOL}-{tag}"   # rebuilt when LOGITS_C changes
        self.stamp = home / "built.json"

    def complete(self) -> bool:
        """Built, with this script's patches (an older build is brought up to date)."""
        try:
            return self.bench.is_file() and self.info().get("patches") == sorted(PATCHES)
        except (OSError, ValueError):
            return False

    def logits_tool(self) -> Path:
        """The logits tool, compiled against this build's libllama if not yet (a second)."""
        if not self.logits.is_file():
            self.logits.parent.mkdir(exist_ok=True)
            c_file = self.logits.with_suffix(".c")
            c_file.write_text(LOGITS_C)
            libdir = self.build / "bin"
            _run([os.environ.get("CC", "cc"), "-O2", "-std=c11", str(c_file), "-o",
                  str(self.logits), "-I", str(self.src / "include"),
                  "-I", str(self.src / "ggml" / "include"), "-L", str(libdir), "-lllama",
                  f"-Wl,-rpath,{libdir}"], self.home / "build.log")
        return self.logits

    def info(self) -> dict:
        return json.loads(self.stamp.read_text())


def _sdist_dirs(root: Path) -> list[Path]:
    """Builds in the cache (a built.json), newest version last."""
    def key(p: Path):
        return tuple(int(x) if x.isdigit() else 0 for x in p.name.rsplit("-", 1)[-1].split("."))
    return sorted((p for p in root.glob(f"{SDIST}-*") if (p / "built.json").is_file()), key=key)


def _patch(src: Path) -> None:
    """PATCHES applied to the unpacked source (once: an applied patch is left as it is)."""
    for name, (rel, anchor, lines) in PATCHES.items():
        f = src / rel
        text = f.read_text()
        if lines in text:
            continue
        if text.count(anchor) != 1:
            raise SystemExit(f"patch {name}: {rel} no longer has its anchor line; this "
                             "llama.cpp version needs the patch looked at")
        f.write_text(text.replace(anchor, lines + anchor))


def _run(cmd: list[str], log: Path, cwd: Path | None = None) -> None:
    """A build step; its output appended to ``log``; a failure names the log's tail."""
    with open(log, "a") as f:
        f.write(f"\n$ {' '.join(cmd)}\n")
        f.flush()
        done = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, cwd=cwd, check=False)
    if done.returncode:
        tail = log.read_text().splitlines()[-20:]
        raise SystemExit(f"build step failed ({done.returncode}): {' '.join(cmd)}\n"
                         + "\n".join(tail) + f"\n(full log: {log})")


def _download(root: Path, version: str | None) -> Path:
    """The sdist tarball, through pip (PyPI); returns its path in the cache."""
    dl = root / "download"
    dl.mkdir(parents=True, exist_ok=True)
    spec = f"{SDIST}=={version}" if version else SDIST
    print(f"downloading the {spec} sdist (llama.cpp's source) with pip ...", flush=True)
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                    spec, "-d", str(dl)], check=True,
                   stdout=subprocess.DEVNULL)
    found = sorted(dl.glob("llama_cpp_python-*.tar.gz"), key=lambda p: p.stat().st_mtime)
    if not found:
        raise SystemExit(f"pip download left no llama_cpp_python-*.tar.gz in {dl}")
    return found[-1]


def _unpack(tarball: Path, dest: Path) -> None:
    """The sdist's tree into ``dest`` (its top folder stripped), members checked."""
    tmp = Path(tempfile.mkdtemp(dir=dest.parent))
    with tarfile.open(tarball) as tf:
        tf.extractall(tmp, filter="data")
    (top,) = list(tmp.iterdir())
    top.rename(dest)
    tmp.rmdir()


def ensure_llamacpp(version: str | None, skip_build: bool, rebuild: bool) -> LlamaCpp:
    """The cached build (``version``'s, else the newest), or a fresh one."""
    root = cache_root()
    if version is None:
        have = _sdist_dirs(root) if root.is_dir() else []
        if have:
            version = have[-1].name[len(SDIST) + 1:]
    if version is not None and not rebuild and LlamaCpp(root / f"{SDIST}-{version}").complete():
        return LlamaCpp(root / f"{SDIST}-{version}")
    if skip_build:
        raise SystemExit(f"--skip-build: no complete llama.cpp build in {root} "
                         f"(version {version or 'any'})")
    tarball = None
    if version is None:
        tarball = _download(root, None)
        version = re.match(r"llama_cpp_python-(.+)\.tar\.gz", tarball.name).group(1)
    lc = LlamaCpp(root / f"{SDIST}-{version}")
    lc.home.mkdir(parents=True, exist_ok=True)
    kept = lc.home / f"llama_cpp_python-{version}.tar.gz"
    if not kept.is_file():
        tarball = tarball or _download(root, version)
        shutil.move(str(tarball), kept)
    if rebuild:
        for p in (lc.stamp, lc.home / "src", lc.build, lc.home / "bin"):
            shutil.rmtree(p, ignore_errors=True) if p.is_dir() else p.unlink(missing_ok=True)
    if not (lc.home / "src").is_dir():
        _unpack(kept, lc.home / "src")
    _patch(lc.src)
    log = lc.home / "build.log"
    t0 = time.perf_counter()
    print(f"building llama.cpp from {kept.name} in {lc.home} (log: {log}); several minutes on "
          "2 cores ...", flush=True)
    gen = ["-G", "Ninja"] if shutil.which("ninja") else []
    _run(["cmake", "-S", str(lc.src), "-B", str(lc.build), *gen, *CMAKE_FLAGS], log)
    _run(["cmake", "--build", str(lc.build), "-j", str(os.cpu_count() or 1),
          "--target", *TARGETS], log)
    lc.logits_tool()
    info = {"sdist": f"{SDIST}=={version}", "commit": _commit(log), "cmake": list(CMAKE_FLAGS),
            "targets": list(TARGETS), "patches": sorted(PATCHES),
            "build_time_s": round(time.perf_counter() - t0, 1),
            "built_at": time.strftime("%Y-%m-%dT%H:%M:%S")}
    lc.stamp.write_text(json.dumps(info, indent=1))
    print(f"built llama.cpp {info['commit']} in {info['build_time_s']:.0f} s", flush=True)
    return lc


def _commit(log: Path) -> str:
    """llama.cpp's commit as its cmake configure says (the sdist keeps no .git), else '?'."""
    found = re.findall(r"ggml commit:\s*(\S+)", log.read_text()) if log.is_file() else []
    return found[-1] if found else "?"


# ---------------------------------------------------------------------------------------------
# the model: one set of Hugging Face-named tensors, a minigraph build and an F32 GGUF of them


def _source(model: str):
    """(config, HF tensors, a cache key, what it is) for a built-in name, an HF folder or a
    minigraph LLM build directory (its build.json's source)."""
    from minigraph.llm.config import BUILTIN, LLMConfig
    from minigraph.llm.weights import read_hf_folder, seeded_weights
    if model in BUILTIN:
        c = BUILTIN[model]
        return c, seeded_weights(c, seed=0), model, f"built-in {model}, seeded weights (seed 0)"
    path = Path(model).resolve()
    key = f"{path.name}-{hashlib.sha1(str(path).encode()).hexdigest()[:8]}"
    bj = path / "build.json"
    if bj.is_file():
        info = json.loads(bj.read_text())
        src = info.get("source", {})
        if "builtin" in src:
            c = LLMConfig.from_dict(info["config"])
            return c, seeded_weights(c, seed=src.get("seed", 0)), key, \
                f"minigraph build {path} (built-in {src['builtin']}, seed {src.get('seed', 0)})"
        if "huggingface" in src:
            ck = read_hf_folder(src["huggingface"])
            return ck.config, ck.tensors, key, f"minigraph build {path} of {src['huggingface']}"
        raise SystemExit(f"{bj}: names no source this benchmark can write a GGUF from")
    ck = read_hf_folder(path)
    return ck.config, ck.tensors, key, f"Hugging Face folder {path} ({', '.join(ck.source_dtypes)})"


def permute_rope(w: np.ndarray, n_head: int) -> np.ndarray:
    """llama.cpp's ``LlamaModel.permute``: each head's rows from Hugging Face's rotate-half
    order (first half, second half) to adjacent pairs (row i of each half next to each other)."""
    return (w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:])
            .swapaxes(1, 2).reshape(w.shape))


def gguf_tensors(config, tensors: dict[str, np.ndarray]):
    """(GGUF name, float32 array) in llama.cpp's order, q/k permuted for its RoPE."""
    yield "token_embd.weight", tensors["model.embed_tokens.weight"]
    names = {"input_layernorm": "attn_norm", "self_attn.q_proj": "attn_q",
             "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
             "self_attn.o_proj": "attn_output", "post_attention_layernorm": "ffn_norm",
             "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down"}
    for n in range(config.num_hidden_layers):
        for hf, gg in names.items():
            w = tensors[f"model.layers.{n}.{hf}.weight"]
            if gg == "attn_q":
                w = permute_rope(w, config.num_attention_heads)
            elif gg == "attn_k":
                w = permute_rope(w, config.num_key_value_heads)
            yield f"blk.{n}.{gg}.weight", w
    yield "output_norm.weight", tensors["model.norm.weight"]
    if not config.tie_word_embeddings:
        yield "output.weight", tensors["lm_head.weight"]


def _gguf_module(lc: LlamaCpp):
    try:
        import gguf
    except ImportError:  # llama.cpp's own gguf-py, from the unpacked sdist
        sys.path.insert(0, str(lc.src / "gguf-py"))
        import gguf
    return gguf


def write_gguf(path: Path, config, tensors: dict[str, np.ndarray], lc: LlamaCpp) -> None:
    """The F32 GGUF llama.cpp's converter would write for this Llama, with a stand-in
    SentencePiece vocabulary of ``vocab_size`` tokens (see the module docstring)."""
    gguf = _gguf_module(lc)
    c = config
    if c.architecture != "LlamaForCausalLM" or c.attention_bias:
        raise SystemExit(f"{c.name}: only Llama (no q/k/v bias) is written as a llama GGUF here")
    if c.vocab_size < 3 + 256:
        raise SystemExit(f"{c.name}: vocab {c.vocab_size} cannot hold the stand-in vocabulary")
    tmp = path.with_suffix(".part")
    w = gguf.GGUFWriter(str(tmp), "llama")
    w.add_name(c.name)
    w.add_context_length(c.context_window_size)
    w.add_embedding_length(c.hidden_size)
    w.add_block_count(c.num_hidden_layers)
    w.add_feed_forward_length(c.intermediate_size)
    w.add_head_count(c.num_attention_heads)
    w.add_head_count_kv(c.num_key_value_heads)
    if c.head_dim * c.num_attention_heads != c.hidden_size:
        w.add_key_length(c.head_dim)
        w.add_value_length(c.head_dim)
    w.add_rope_dimension_count(c.head_dim)
    w.add_rope_freq_base(c.rope_theta)
    w.add_layer_norm_rms_eps(c.rms_norm_eps)
    w.add_vocab_size(c.vocab_size)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    types = [gguf.TokenType.UNKNOWN, gguf.TokenType.CONTROL, gguf.TokenType.CONTROL] \
        + [gguf.TokenType.BYTE] * 256
    rest = c.vocab_size - len(tokens)
    tokens += [f"\u2581t{i}" for i in range(rest)]
    types += [gguf.TokenType.NORMAL] * rest
    w.add_tokenizer_model("llama")
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_scores([0.0] * 259 + [-float(i) for i in range(rest)])
    w.add_token_types(types)
    w.add_unk_token_id(0)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_add_bos_token(True)
    for name, a in gguf_tensors(c, tensors):
        w.add_tensor(name, np.ascontiguousarray(a, dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    tmp.rename(path)


def ensure_model(model: str, lc: LlamaCpp, rebuild: bool) -> dict:
    """The minigraph build and the GGUF of ``model`` (made once, in the cache)."""
    from minigraph.llm.config import BUILTIN
    config, tensors, key, what = _source(model)
    home = cache_root() / "models" / key
    home.mkdir(parents=True, exist_ok=True)
    is_build = model not in BUILTIN and (Path(model) / "build.json").is_file()
    mg = Path(model).resolve() if is_build else home / "minigraph"
    gg = home / "model-f32.gguf"
    if rebuild and not is_build:
        shutil.rmtree(mg, ignore_errors=True)
        gg.unlink(missing_ok=True)
    if not (mg / "build.json").is_file():
        from minigraph.llm.build import build_llm
        t0 = time.perf_counter()
        build_llm(model, mg)
        print(f"built {config.name} with minigraph in {time.perf_counter() - t0:.0f} s "
              f"into {mg}", flush=True)
    if not gg.is_file():
        write_gguf(gg, config, tensors, lc)
        print(f"wrote {gg} ({gg.stat().st_size / 1e6:.0f} MB)", flush=True)
    return {"config": config, "mg": mg, "gguf": gg, "what": what}


# ---------------------------------------------------------------------------------------------
# the model's work: FLOPs of a prefill, bytes of a decode step


def prefill_flops(c, n: int) -> float:
    """Linear layers on n tokens, causal attention, the LM head on the last position."""
    q, kv = c.num_attention_heads * c.head_dim, c.num_key_value_heads * c.head_dim
    linear = c.hidden_size * (q + 2 * kv) + q * c.hidden_size + 3 * c.hidden_size * \
        c.intermediate_size
    attn = 2 * 2 * c.num_attention_heads * c.head_dim * n * (n + 1) / 2  # QK^T and PV
    return c.num_hidden_layers * (2 * linear * n + attn) + 2 * c.vocab_size * c.hidden_size


def decode_bytes(c, depth: int, steps: int) -> float:
    """Bytes ``steps`` decode steps read from depth ``depth`` on: every weight once a step (of
    the embedding table one row), float32 K and V of every position up to the new one."""
    weights = c.n_params() + c.hidden_size
    if not c.tie_word_embeddings:
        weights -= c.vocab_size * c.hidden_size
    kv = 2 * c.num_hidden_layers * c.num_key_value_heads * c.head_dim
    positions = sum(depth + i + 1 for i in range(steps))
    return 4.0 * (weights * steps + kv * positions)


# ---------------------------------------------------------------------------------------------
# workers (fresh processes)


def _engine(model: Path, threads: int, context: int):
    from minigraph.llm.engine import Engine
    from minigraph.llm.opened import open_llm
    from minigraph.threadpool.config import ThreadRequest, configure_threads
    configure_threads(ThreadRequest(threads=threads))
    return Engine(open_llm(model), context=context)


def _worker_mg(a: argparse.Namespace) -> dict:
    """minigraph's pp or tg, ``reps`` times, in this process (ns per repetition)."""
    rng = np.random.default_rng(int(time.time_ns() % 2**32))
    eng = _engine(a.model, a.worker_threads, a.prompt_len + a.depth + a.decode + 16)
    v = eng.opened.vocab
    if a.worker == "mg-pp":
        prompt = rng.integers(0, v, a.prompt_len).tolist()
        eng.new_cache()
        eng.forward(prompt)                     # warm-up, as llama-bench's
        out = []
        for _ in range(a.reps):
            eng.new_cache()
            t0 = time.perf_counter_ns()
            eng.forward(prompt)
            out.append(time.perf_counter_ns() - t0)
        return {"samples_ns": out}
    ctx = rng.integers(0, v, a.depth).tolist()
    steps = rng.integers(0, v, a.decode).tolist()
    eng.new_cache()
    eng.forward(ctx)
    eng.forward(steps[:1])                      # warm-up: one decode step, as llama-bench's
    out = []
    for _ in range(a.reps):
        eng.new_cache()
        eng.forward(ctx)
        t0 = time.perf_counter_ns()
        for t in steps:
            eng.forward([t])
        out.append(time.perf_counter_ns() - t0)
    return {"samples_ns": out}


def _worker_machine(a: argparse.Namespace) -> dict:
    """The rooflines at T threads (cached per machine) and the CPU."""
    from minigraph.measure.bandwidth import machine_bandwidth
    from minigraph.measure.environment import capture_env
    from minigraph.measure.peak import machine_peak
    from minigraph.threadpool.config import ThreadRequest, configure_threads
    configure_threads(ThreadRequest(threads=a.worker_threads))
    peak, bw = machine_peak(a.worker_threads), machine_bandwidth(a.worker_threads)
    cpu = capture_env()["cpu"]
    return {"gflops": peak.get("gflops"), "gbps": bw.get("gbps"), "key": peak.get("key"),
            "cpu": cpu.get("model") or "?"}


def _worker_logits(a: argparse.Namespace) -> dict:
    """minigraph's logits of the check's ids (prefill, then one decode call per further id)."""
    ids = json.loads(a.ids)
    eng = _engine(a.model, a.worker_threads, len(ids) + 16)
    eng.new_cache()
    out = [eng.forward(ids[:a.prompt_len])]
    out += [eng.forward([t]) for t in ids[a.prompt_len:]]
    np.save(a.out_file, np.stack(out))
    return {}


def worker(a: argparse.Namespace) -> None:
    fn = {"mg-pp": _worker_mg, "mg-tg": _worker_mg, "machine": _worker_machine,
          "logits": _worker_logits}[a.worker]
    print(json.dumps(fn(a)))


def _spawn(a: argparse.Namespace, kind: str, threads: int, *extra: str) -> dict:
    cmd = [sys.executable, __file__, "--worker", kind, "--worker-threads", str(threads),
           "--model", str(a.mg), "--prompt-len", str(a.prompt_len), "--decode", str(a.decode),
           "--depth", str(a.depth), "--reps", str(a.reps), *extra]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False,
                          env={**os.environ, "TVM_NUM_THREADS": str(threads),
                               "PYTHONPATH": str(ROOT)})
    if done.returncode:
        raise SystemExit(f"worker {kind} T={threads} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _llama_bench(a: argparse.Namespace, lc: LlamaCpp, phase: str, threads: int) -> dict:
    """One llama-bench process: pp (``-p P -n 0``) or tg (``-p 0 -n N -d D``)."""
    shape = (["-p", str(a.prompt_len), "-n", "0"] if phase == "pp" else
             ["-p", "0", "-n", str(a.decode), "-d", str(a.depth)])
    fa, kv, _ = ATTN[a.llamacpp_attn]
    cmd = [str(lc.bench), "-m", str(a.gguf), *shape, "-t", str(threads), "-r", str(a.reps),
           "-fa", fa, "-ctk", kv, "-ctv", kv, "-o", "json"]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False,
                          env={**os.environ, **a.llamacpp_env})
    if done.returncode:
        raise SystemExit(f"llama-bench failed ({done.returncode}): {' '.join(cmd)}\n"
                         f"{done.stderr[-3000:]}")
    (res,) = json.loads(done.stdout)
    return {"samples_ns": res["samples_ns"]}


# ---------------------------------------------------------------------------------------------
# the check and the table


def check_logits(a: argparse.Namespace, lc: LlamaCpp, threads: int) -> list[float]:
    """max|minigraph - llama.cpp| / max|llama.cpp| for each logits vector of the check."""
    rng = np.random.default_rng(SEED)
    ids = rng.integers(3, a.config.vocab_size, CHECK_PROMPT + CHECK_DECODE).tolist()
    with tempfile.TemporaryDirectory() as tmp:
        ref_f, mg_f = Path(tmp) / "llama.f32", Path(tmp) / "mg.npy"
        _, kv, fa = ATTN[a.llamacpp_attn]
        done = subprocess.run([str(lc.logits_tool()), str(a.gguf), str(threads),
                               str(CHECK_PROMPT), str(ref_f), fa, kv, *map(str, ids)],
                              capture_output=True, text=True, check=False,
                              env={**os.environ, **a.llamacpp_env})
        if done.returncode:
            raise SystemExit(f"{LOGITS_TOOL} failed: {done.stderr[-2000:]}")
        ref = np.fromfile(ref_f, dtype=np.float32).reshape(CHECK_DECODE + 1, -1)
        _spawn(a, "logits", threads, "--ids", json.dumps(ids), "--out-file", str(mg_f),
               "--check-prompt", str(CHECK_PROMPT))
        got = np.load(mg_f)
    if got.shape != ref.shape:
        raise SystemExit(f"logits shapes differ: minigraph {got.shape}, llama.cpp {ref.shape}")
    return [float(np.max(np.abs(g - r)) / np.max(np.abs(r))) for g, r in zip(got, ref)]


def _med(xs):
    return statistics.median(xs)


def report(a, results: dict, machine: dict, threads: list[int]) -> list[str]:
    c = a.config
    work = {"pp": (prefill_flops(c, a.prompt_len), a.prompt_len),
            "tg": (decode_bytes(c, a.depth, a.decode), a.decode)}
    lines = [f"{'':16}{'tokens/s':^52} {'time mg/llama.cpp':^19} {'roofline share':^21}",
             (f"{'T':>2} {'phase':<12} {'llama.cpp':>25} {'minigraph':>25}   {'medians':>8} "
              f"{'paired':>8}   {'llama.cpp':>10} {'minigraph':>10}")]
    for t in threads:
        for ph in ("pp", "tg"):
            name = f"pp{a.prompt_len}" if ph == "pp" else f"tg{a.decode}@d{a.depth}"
            per = {s: [_med(r["samples_ns"]) / 1e9 for r in results[(s, ph, t)]]
                   for s in ("llama", "mg")}
            tok = {s: [work[ph][1] / x for x in per[s]] for s in per}
            ratio = _med(per["mg"]) / _med(per["llama"])
            paired = _med([m / l for m, l in zip(per["mg"], per["llama"])])
            amount = work[ph][0]
            if ph == "pp":
                peak = machine[t]["gflops"]
                share = {s: amount / _med(per[s]) / 1e9 / peak if peak else float("nan")
                         for s in per}
                unit = f"{amount / 1e9:.1f} GFLOP a prefill; FMA peak {peak:.0f} GFLOP/s"
            else:
                bw = machine[t]["gbps"]
                share = {s: amount / _med(per[s]) / 1e9 / bw if bw else float("nan")
                         for s in per}
                unit = (f"{amount / a.decode / 1e6:.0f} MB read a step; read bandwidth "
                        f"{bw:.1f} GB/s")

            col = {s: f"{_med(x):8.1f} [{min(x):.1f}-{max(x):.1f}]" for s, x in tok.items()}
            lines.append(f"{t:>2} {name:<12} {col['llama']:>25} {col['mg']:>25}   "
                         f"{ratio:7.2f}x {paired:7.2f}x   {share['llama']:>10.0%} "
                         f"{share['mg']:>10.0%}   ({unit})")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="llama-100m",
                    help="a built-in LLM config, a Hugging Face folder or a minigraph LLM build "
                         "(default llama-100m, seeded weights)")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--rounds", type=int, default=3, help="fresh processes per side, phase, T")
    ap.add_argument("--reps", type=int, default=3, help="timed repetitions inside each process")
    ap.add_argument("--prompt-len", type=int, default=128)
    ap.add_argument("--decode", type=int, default=128, help="decode steps timed (tg)")
    ap.add_argument("--depth", type=int, default=None,
                    help="tokens in the KV cache before the decode steps (default --prompt-len)")
    ap.add_argument("--tolerance", type=float, default=1e-3,
                    help="largest max|diff|/max|llama.cpp| of the logits check")
    ap.add_argument("--no-check", action="store_true", help="skip the logits check")
    ap.add_argument("--llamacpp-attn", choices=sorted(ATTN), default="f32",
                    help="llama.cpp's attention: f32 (flash attention off, KV cache f32: the "
                         "same arithmetic as minigraph; default) or default (llama-bench's "
                         "defaults: flash attention auto, KV cache f16; its logits differ by "
                         "~1e-3, raise --tolerance)")
    ap.add_argument("--skip-build", action="store_true",
                    help="never build llama.cpp: use the cached build or stop")
    ap.add_argument("--rebuild", action="store_true",
                    help="unpack and build llama.cpp again (minutes)")
    ap.add_argument("--rebuild-model", action="store_true",
                    help="build the model with minigraph and write its GGUF again")
    ap.add_argument("--llamacpp-version", default=None,
                    help=f"the {SDIST} sdist version (default: the newest cached build, else "
                         "the newest on PyPI)")
    ap.add_argument("--llamacpp-env", action="append", default=[], metavar="KEY=VALUE",
                    help="an environment variable for llama.cpp's processes (repeatable), e.g. "
                         "OMP_WAIT_POLICY=passive on a loaded machine (see the docstring)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--worker-threads", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--ids", help=argparse.SUPPRESS)
    ap.add_argument("--out-file", help=argparse.SUPPRESS)
    ap.add_argument("--check-prompt", type=int, help=argparse.SUPPRESS)
    a = ap.parse_args()
    a.depth = a.prompt_len if a.depth is None else a.depth
    a.llamacpp_env = dict(kv.split("=", 1) for kv in a.llamacpp_env if "=" in kv)
    if a.worker:
        if a.worker == "logits":
            a.prompt_len = a.check_prompt
        return worker(a)
    threads = [int(x) for x in a.threads.split(",") if x]

    lc = ensure_llamacpp(a.llamacpp_version, a.skip_build, a.rebuild)
    m = ensure_model(a.model, lc, a.rebuild_model)
    a.config, a.mg, a.gguf = m["config"], m["mg"], m["gguf"]
    info = lc.info()
    machine = {t: _spawn(a, "machine", t) for t in threads}
    cpu = machine[threads[0]]["cpu"]
    print(f"CPU: {cpu} ({machine[threads[0]]['key']}); FMA peak / read bandwidth: " + ", ".join(
        f"T={t} {machine[t]['gflops']:.0f} GFLOP/s / {machine[t]['gbps']:.1f} GB/s"
        for t in threads))
    fa, kv, _ = ATTN[a.llamacpp_attn]
    print(f"llama.cpp {info['commit']} from {info['sdist']} (cmake Release, GGML_NATIVE=ON, "
          f"no BLAS, CPU only): F32 GGUF, flash attention {fa}, KV cache {kv}"
          + "".join(f", {k}={v}" for k, v in a.llamacpp_env.items()))
    print(f"model: {m['what']}: {a.config.n_params() / 1e6:.1f}M parameters, float32")
    print(f"minigraph build: {a.mg}")
    if not a.no_check:
        rel = check_logits(a, lc, max(threads))
        ok = max(rel) <= a.tolerance
        print(f"logits check ({CHECK_PROMPT} prompt ids, then {CHECK_DECODE} decode ids; "
              f"max|mg - llama.cpp| / max|llama.cpp| per call): "
              + " ".join(f"{r:.1e}" for r in rel)
              + (f"  <= {a.tolerance:g}: same model" if ok else f"  > {a.tolerance:g}: FAILED"),
              flush=True)
        if not ok:
            raise SystemExit("the two sides do not compute the same logits; not timing them")
    load0 = os.getloadavg()
    units = [(s, ph, t) for t in threads for ph in ("pp", "tg") for s in ("llama", "mg")]
    results: dict = {u: [] for u in units}
    for r in range(a.rounds):
        t0 = time.perf_counter()
        for s, ph, t in (units if r % 2 == 0 else units[::-1]):
            if s == "llama":
                res = _llama_bench(a, lc, ph, t)
            else:
                res = _spawn(a, f"mg-{ph}", t)
            results[(s, ph, t)].append(res)
        print(f"round {r + 1}/{a.rounds}: {time.perf_counter() - t0:.0f} s", flush=True)
    print(f"\n{a.config.name} on {cpu}: tokens/s, median over {a.rounds} rounds of each "
          f"process's median of {a.reps} [range of the rounds]; load average "
          f"{load0[0]:.1f} at the start, {os.getloadavg()[0]:.1f} at the end on "
          f"{os.cpu_count()} CPUs")
    print("\n".join(report(a, results, machine, threads)))


if __name__ == "__main__":
    main()
