"""`hangdoctor doctor`: check a node before a run. Probes gather `Facts`, checks turn facts into
`CheckResult`s (pure functions), renderers format them."""
