"""The compiler side: zoo / ONNX -> Relax -> fused, scheduled kernels -> classic artifacts."""
