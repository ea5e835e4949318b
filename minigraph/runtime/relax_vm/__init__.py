"""runtime/relax_vm/: the Relax VM door: a ``tvm.compile(...).export_library`` executable, its
bytecode read from the file, a static graph derived from it for the executor core, and the
traced cross-check against the real VM. Imports the core, never the legacy door.
Counterpart: ``relax.VirtualMachine``."""
