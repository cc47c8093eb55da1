"""Facts from public sources that rules and checks share (each with its source)."""
