"""Profile -> text and files: the table (TVM profiling Report style), JSON, CSV, trace, msgpack."""
