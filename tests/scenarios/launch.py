"""How the corpus starts its framework programs, and why most programs wait 10 s, not 3, before
a silence is a hang.

`accelerate launch` on a CPU-only machine, two processes: `--cpu --num_processes 2` starts ONE
process (accelerate launches multi-CPU jobs only through mpirun); `--multi_gpu` starts two
through torchrun, and ACCELERATE_USE_CPU=true makes each Accelerator join a gloo process group
(without it both run alone, as DistributedType.NO, silently).

Hang timeouts: starting torchrun and importing torch in every rank takes more than 3 s, without
a line of output, on a loaded 2-core machine, so a 3 s hang timeout declares the hang during
start-up. Importing Lightning or transformers takes 5-10 s there; with a 3 s (and even 5 s)
hang timeout, hangdoctor declared three Lightning jobs hung while rank 0 was still importing
(CPU share under contention fell below its "computing" threshold). 10 s keeps start-up clear of
that; the hangs themselves do not change. The programs written from public reports (rounds 3 to
10) therefore run with `hang_timeout_s=10.0` (round 9 with the 5 s of the template its
helpers were given), the first programs with the default 3 s.
"""

from __future__ import annotations

from types import MappingProxyType

ACCELERATE_LAUNCH = (
    "-m",
    "accelerate.commands.launch",
    "--multi_gpu",
    "--num_processes",
    "2",
    "--num_machines",
    "1",
    "--mixed_precision",
    "no",
    "--dynamo_backend",
    "no",
    "--main_process_port",
    "{port}",
)
ACCELERATE_ENV = MappingProxyType({"ACCELERATE_USE_CPU": "true"})
