"""CUDA rules (HL6xx): kernels that index global memory past the end of their data."""
