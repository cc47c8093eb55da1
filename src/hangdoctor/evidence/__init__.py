"""Typed evidence: what probes observed, serialisable to JSON and back."""
