# case: HL401 real https://github.com/koko1000ban/SublimeGtags/pull/7
# The tag builder waited for the child before calling communicate(), so a run with many
# errors to report filled stderr and the wait blocked for good.
from subprocess import PIPE, Popen


class TagSubprocess:
    def __init__(self, root):
        self.root = root

    def rebuild(self):
        proc = Popen(["gtags", "-v"], cwd=self.root, stdout=PIPE, stderr=PIPE)
        code = proc.wait()  # expect: HL401
        _, errors = proc.communicate()
        return code, errors
