"""Reports: built from a bundle and its diagnosis in one step, written by renderers in another."""
