"""Rules for the `data.*` categories of the taxonomy, one file per rule."""
