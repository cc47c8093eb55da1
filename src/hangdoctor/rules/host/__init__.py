"""Rules for the `host.*` categories of the taxonomy, one file per rule."""
