"""`hangdoctor.watch()`: the watchdog that runs inside the job, for jobs that no wrapper
starts (a managed launcher runs `python train.py` itself) and containers where ptrace is
refused. See docs/watch.md."""
