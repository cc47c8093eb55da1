"""`hangdoctor doctor`: check a node before a run. Probes gather `Facts`; checks (classes in
`checks/`, one module per area, each with its own examples) turn facts into `CheckResult`s with
no I/O; renderers format them."""
