"""Rules for the `env.*` categories of the taxonomy, one file per rule."""
