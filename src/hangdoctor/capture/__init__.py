"""Capture: run the probes over a process tree and assemble an evidence bundle."""
