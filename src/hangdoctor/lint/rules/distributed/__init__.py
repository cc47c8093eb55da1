"""Distributed rules (HL1xx): code paths on which ranks stop calling the same collectives, or
reach the end of their data at different steps."""
