"""Probes read the world and return evidence. They only observe, each within a time limit, and a
probe that fails records a ProbeError instead of stopping the others."""
