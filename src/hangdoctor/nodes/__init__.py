"""Multi-node jobs: which node of the job this one is, from the launcher and the scheduler."""
