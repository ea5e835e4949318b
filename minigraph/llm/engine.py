"""An LLM executable opened for requests: TVM's VM over the executable, the weights bound, a
paged KV cache, and the request's phases (sequence added, prefill, decode steps).

Counterpart: the tutorial's ``TVMEngine`` and MLC-LLM's engine (one sequence, greedy
sampling): ``vm.builtin.paged_attention_kv_cache_create`` through the executable's
``create_tir_paged_kv_cache``, ``vm.builtin.kv_state_add_sequence``,
``kv_state_begin_forward(cache, ShapeTuple(ids), ShapeTuple(lens))`` / ``end_forward`` around
each model call. An executable built with plain TVM (the tutorial's four functions, llvm
target) opens the same way, its weights from an ``.npz`` in ``export_tvm``'s order.
"""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np

from ..errors import InputError
from .opened import OpenedLLM

# lazy: TVM (~1.2 s to import) is imported where it is called; opening needs no TVM
PAGE_SIZE = 16  # tokens per KV-cache page (MLC-LLM's CPU default)


class Engine:
    """One sequence's requests against an opened executable (TVM's VM does the calls)."""

    SEQ = 0  # the sequence id of the one request

    def __init__(self, opened: OpenedLLM, context: int | None = None) -> None:
        import tvm
        from tvm import relax
        self.opened = opened
        self.dev = tvm.cpu()
        self.vm = relax.VirtualMachine(opened.executable, self.dev)
        self.params = [tvm.runtime.tensor(a, self.dev) for a in opened.params]
        self.context = min(context or opened.context, opened.context)
        self._f = {n: tvm.get_global_func(f"vm.builtin.{n}") for n in (
            "kv_state_add_sequence", "kv_state_remove_sequence", "kv_state_begin_forward",
            "kv_state_end_forward", "kv_state_popn", "reshape")}
        self.cache = None
        self.depth = 0

    def new_cache(self) -> None:
        """A fresh KV cache holding one empty sequence (what a new request starts from)."""
        from tvm.runtime import ShapeTuple
        create = self.vm[self.opened.cache_function]
        self.cache = create(ShapeTuple([1]), ShapeTuple([self.context]),
                            ShapeTuple([self.context]), ShapeTuple([PAGE_SIZE]))
        self._f["kv_state_add_sequence"](self.cache, self.SEQ)
        self.depth = 0

    def use_cache(self, cache) -> None:
        """Requests go to ``cache`` (made elsewhere, e.g. inside.py's timed one), emptied."""
        self.cache = cache
        self._f["kv_state_add_sequence"](self.cache, self.SEQ)
        self.depth = 0

    def token_tensor(self, ids: Sequence[int]):
        """The ids as embed's int32 input, checked against the vocabulary first."""
        import tvm
        self.opened.check_tokens(ids)
        return tvm.runtime.tensor(np.asarray(ids, dtype=np.int32), self.dev)

    def as_batch(self, x, n: int):
        """embed's [n, hidden] as the model's [1, n, hidden] (``vm.builtin.reshape``)."""
        from tvm.runtime import ShapeTuple
        return self._f["reshape"](x, ShapeTuple([1, n, self.opened.hidden]))

    def embed(self, ids: Sequence[int]):
        return self.as_batch(self.vm["embed"](self.token_tensor(ids), self.params), len(ids))

    def function_for(self, n: int) -> str:
        """The model function a call of n tokens at this depth is: prefill or decode."""
        return "prefill" if self.depth == 0 or n > 1 else "decode"

    def forward_calls(self, n: int) -> tuple[tuple, tuple]:
        """begin_forward's and end_forward's (function, arguments) for a call of n tokens."""
        from tvm.runtime import ShapeTuple
        return ((self._f["kv_state_begin_forward"],
                 (self.cache, ShapeTuple([self.SEQ]), ShapeTuple([n]))),
                (self._f["kv_state_end_forward"], (self.cache,)))

    def rewind(self, n: int) -> None:
        """Takes the last n tokens back out of the cache (``kv_state_popn``)."""
        self._f["kv_state_popn"](self.cache, self.SEQ, n)
        self.depth -= n

    def forward(self, ids: Sequence[int]) -> np.ndarray:
        """Prefill (several tokens) or one decode step: logits of the last position [vocab]."""
        if self.cache is None:
            self.new_cache()
        if self.depth + len(ids) > self.context:
            raise InputError(f"{self.depth + len(ids)} tokens exceed the KV cache's context "
                             f"of {self.context}")
        x = self.embed(ids)
        (begin, b_args), (end, e_args) = self.forward_calls(len(ids))
        begin(*b_args)
        out = self.vm[self.function_for(len(ids))](x, self.cache, self.params)
        end(*e_args)
        self.depth += len(ids)
        return out[0].numpy().reshape(-1)

    def generate(self, prompt: Sequence[int], n: int) -> tuple[np.ndarray, list[int]]:
        """Greedy: (the prompt's last-position logits, the n tokens generated)."""
        self.new_cache()
        first = self.forward(prompt)
        tokens = [int(np.argmax(first))]
        while len(tokens) < n:
            tokens.append(int(np.argmax(self.forward([tokens[-1]]))))
        return first, tokens[:n]


def load_tokenizer(path: Path):
    """The folder's tokenizer.json through the ``tokenizers`` library (Hugging Face's)."""
    try:
        from tokenizers import Tokenizer
    except ImportError:
        raise InputError("--prompt needs the `tokenizers` package: pip install tokenizers") \
            from None
    try:
        return Tokenizer.from_file(str(path))
    except Exception as err:  # noqa: BLE001 - the library's own message names the problem
        raise InputError(f"{path}: not a readable tokenizer.json ({err})") from None

