"""Rules for the `algorithm.*` categories of the taxonomy, one file per rule."""
