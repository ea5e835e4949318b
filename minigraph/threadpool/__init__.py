"""threadpool/: TVM's CPU thread pool: configure and verify placement (config), probe what
creating it does to a fresh process (probe), and create or wake it without model code (wake).
Counterpart: src/runtime/thread_pool.cc and threading_backend.cc.
"""
