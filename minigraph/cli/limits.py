"""What to say when the process ran out of something the operating system limits.

A ``ulimit -v`` (address space) or ``ulimit -u`` (processes) limit makes TVM fail to create its
thread pool ("Resource temporarily unavailable", from pthread_create) or to allocate
(std::bad_alloc, MemoryError), which reads like a bug or a broken graph.json. These messages
say which limit is set and how large it is, so the fix (raise it, or fewer threads) is plain.
"""
from __future__ import annotations

import resource

from ..errors import last_line

# (limit, what it bounds, the shell's name for it, below what it is worth naming)
_LIMITS = (("RLIMIT_AS", "address space", "ulimit -v", None),
           ("RLIMIT_DATA", "data", "ulimit -d", None),
           ("RLIMIT_NPROC", "processes and threads", "ulimit -u", 4096))
_BIG_STACK = 64 << 20  # each thread reserves this much address space (glibc's default)


def _limits() -> list[str]:
    """The limits this process runs under that could have been reached, as text."""
    out = []
    for name, what, shell, below in _LIMITS:
        soft, _ = resource.getrlimit(getattr(resource, name))
        if soft == resource.RLIM_INFINITY or (below is not None and soft >= below):
            continue
        amount = f"{soft} {what}" if name == "RLIMIT_NPROC" else f"{soft >> 20} MiB of {what}"
        out.append(f"{amount} (`{shell}`)")
    stack, _ = resource.getrlimit(resource.RLIMIT_STACK)
    if out and stack != resource.RLIM_INFINITY and stack >= _BIG_STACK:
        out.append(f"{stack >> 20} MiB of stack per thread (`ulimit -s`)")
    return out


def out_of_memory() -> str:
    """The message for a MemoryError (numpy, or TVM's std::bad_alloc)."""
    limits = [t for t in _limits() if "MiB" in t]
    if limits:
        return (f"out of memory: this process may use at most {' and '.join(limits)}; "
                "raise the limit (the model, TVM and its thread pool need more)")
    return "out of memory; check the shapes in graph.json (`minigraph explain`)"


def is_resource_limit(err: BaseException) -> bool:
    """TVM or the C library could not create a thread or map memory (EAGAIN, ENOMEM)."""
    text = str(err)
    return "Resource temporarily unavailable" in text or "std::bad_alloc" in text or \
        "Cannot allocate memory" in text


def limit_hint(err: BaseException) -> str:
    """For a minigraph error that quotes such a refusal (a kernel that could not start its
    threads): which limit, and what to do; else ""."""
    if not is_resource_limit(err):
        return ""
    limits = _limits()
    where = f"this process is limited to {' and '.join(limits)}" if limits else \
        "the machine is short of memory or threads"
    return f" ({where}: raise the limit, or use fewer threads: --threads 1 or TVM_NUM_THREADS=1)"


def foreign_error(err: BaseException) -> str:
    """The message for an exception minigraph did not raise itself."""
    if is_resource_limit(err):
        return f"the system refused a thread or memory: {last_line(err)}{limit_hint(err)}"
    return (f"internal error: {type(err).__name__}: {err} (run with --debug for the "
            "traceback)")
