"""Rules for the `process.*` categories of the taxonomy, one file per rule."""
