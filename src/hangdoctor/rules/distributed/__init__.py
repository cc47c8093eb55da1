"""Rules for the `distributed.*` categories of the taxonomy, one file per rule."""
