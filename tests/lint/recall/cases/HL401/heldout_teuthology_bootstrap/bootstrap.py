# case: HL401 real https://github.com/ceph/teuthology/pull/1089
# Held out. Bootstrapping ran pip with its output piped and waited for it; pip's output
# filled the pipe and jobs hung until the wait was replaced by communicate().
import subprocess


def bootstrap(venv):
    args = [f"{venv}/bin/pip", "install", "-e", "."]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    status = proc.wait()  # expect: HL401
    if status != 0:
        raise RuntimeError(proc.stdout.read().decode())
