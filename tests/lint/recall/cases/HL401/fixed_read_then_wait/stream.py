# case: HL401 fixed
# Draining the only piped stream before waiting is safe.
import subprocess


def run(cmd):
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE)
    for line in proc.stdout:
        print(line.decode(), end="")
    return proc.wait()


def run_quiet(cmd):
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE)
    data = proc.stdout.read()
    proc.wait()
    return data
