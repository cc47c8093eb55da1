"""Rules for the `gpu.*` categories of the taxonomy, one file per rule."""
