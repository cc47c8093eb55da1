"""Rules for the `native.*` categories of the taxonomy, one file per rule."""
