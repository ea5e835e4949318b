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

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from ..errors import InputError
from .opened import OpenedLLM

# lazy: TVM (~1.2 s to import) is imported where it is called; opening needs no TVM
PAGE_SIZE = 16  # tokens per KV-cache page (MLC-LLM's CPU default)


@dataclass
class Phase:
    """What one model call of a request is: its name, the function, the tokens it computes."""

    name: str          # "prefill" | "decode"
    tokens: int        # tokens in this call (the prompt for prefill, 1 for decode)
    depth: int         # tokens already in the KV cache before the call


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

    def embed(self, ids: Sequence[int]):
        import tvm
        from tvm.runtime import ShapeTuple
        self.opened.check_tokens(ids)
        x = self.vm["embed"](tvm.runtime.tensor(np.asarray(ids, dtype=np.int32), self.dev),
                             self.params)
        return self._f["reshape"](x, ShapeTuple([1, len(ids), self.opened.hidden]))

    def forward(self, ids: Sequence[int]) -> np.ndarray:
        """Prefill (several tokens) or one decode step: logits of the last position [vocab]."""
        from tvm.runtime import ShapeTuple
        if self.cache is None:
            self.new_cache()
        if self.depth + len(ids) > self.context:
            raise InputError(f"{self.depth + len(ids)} tokens exceed the KV cache's context "
                             f"of {self.context}")
        x = self.embed(ids)
        fn = "prefill" if self.depth == 0 or len(ids) > 1 else "decode"
        self._f["kv_state_begin_forward"](self.cache, ShapeTuple([self.SEQ]),
                                          ShapeTuple([len(ids)]))
        out = self.vm[fn](x, self.cache, self.params)
        self._f["kv_state_end_forward"](self.cache)
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

