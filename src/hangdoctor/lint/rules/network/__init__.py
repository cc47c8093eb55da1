"""Network rules (HL5xx): blocking network calls that can wait forever."""
