#!/bin/bash
# One lease of the GPU machine: install hangdoctor's missing dependencies from wheels carried in
# .whl (the machine has no network), run benchmarks/gpu_checks.py with the GPU-only checks first,
# and leave every report (and the evidence bundles) in $OUT for recording as test fixtures.
#   here:  make .whl/ (benchmarks/RESULTS.md, section 6, says how)
#   there: bash benchmarks/gpu_lease.sh [BUDGET_S]  (the device tool: carry .whl)
set -u
budget=${1:-430}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
out=${OUT:-/tmp/gpu-out}
mkdir -p "$out"
{ nvidia-smi; py-spy --version; python3 -c 'import torch, pydantic; print(torch.__version__, torch.version.cuda, torch.cuda.is_available(), pydantic.VERSION)'; } \
    >"$out/machine.txt" 2>&1
cat "$out/machine.txt" | head -20
checks=kernel_hang,kernel_hang_dump,memory_then_queue,oom_line,collective_traceback,loss_hook,overhead,nan_retry,ddp_single_rank,doctor,dataloader_socket,compile
python3 benchmarks/gpu_checks.py --device cuda --budget "$budget" --only "$checks" \
    --out /tmp/gpu-checks 2>&1 | tee "$out/gpu_checks.log"
cp /tmp/gpu-checks/gpu_checks.md /tmp/gpu-checks/gpu_checks.json "$out/" 2>/dev/null
tar -czf "$out/reports.tar.gz" -C /tmp gpu-checks 2>/dev/null
ls -la "$out"
