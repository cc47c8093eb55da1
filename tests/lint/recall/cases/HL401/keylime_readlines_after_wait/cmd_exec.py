# case: HL401 real https://github.com/keylime/keylime/pull/332
# Commands were run with stdout piped (stderr merged into it), waited for, and their lines
# read afterwards; a command with more output than the pipe holds never finished.
import subprocess


def run(cmd):
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    code = proc.wait()  # expect: HL401
    lines = proc.stdout.readlines()
    return code, lines
