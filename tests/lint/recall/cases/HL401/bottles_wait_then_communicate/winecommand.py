# case: HL401 real https://github.com/bottlesdevs/Bottles/pull/2260
# A program launcher added a wait() in front of communicate(); a chatty program then filled
# the pipe and the launcher hung (only the non-terminal mode, which pipes, was affected).
import subprocess


def launch(command, env):
    proc = subprocess.Popen(command, shell=True, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.wait()  # expect: HL401
    result = proc.communicate()[0]
    return result.decode("utf-8", "replace")
