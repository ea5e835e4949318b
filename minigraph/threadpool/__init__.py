"""threadpool/: TVM's CPU thread pool: what a run asks of it, checked and resolved (request),
the one writer of TVM's environment (environ), configure and verify placement (config), CPU
lists within the machine (cpulist), probe what creating it does to a fresh process (probe),
and create or wake it without model code (wake).
Counterpart: src/runtime/thread_pool.cc and threading_backend.cc.
"""
