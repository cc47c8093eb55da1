"""Diagnosis rules: pure functions from evidence (a JobView) to findings."""
