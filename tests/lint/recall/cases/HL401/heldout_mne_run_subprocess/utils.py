# case: HL401 real https://github.com/mne-tools/mne-python/pull/6427
# Held out (written after the rules were frozen). run_subprocess piped both streams and
# waited on the process before collecting what it printed.
import subprocess


def run_subprocess(command, env=None):
    p = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    if p.wait() != 0:  # expect: HL401
        raise subprocess.CalledProcessError(p.returncode, command)
    stdout, stderr = p.communicate()
    return stdout.decode(), stderr.decode()
