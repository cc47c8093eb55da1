# case: HL401 real https://github.com/localstack/localstack/pull/1101
# A helper that runs a shell command with every stream piped, waits for it, and only then
# collects the output: `cat` of a 1 MB file fills the pipe and the wait never returns.
import subprocess


def run(command, cwd=None):
    process = subprocess.Popen(
        command, shell=True, cwd=cwd,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    process.wait()  # expect: HL401
    output = process.stdout.read()
    return output.decode()
