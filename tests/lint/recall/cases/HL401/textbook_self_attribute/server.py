# case: HL401 textbook
# The child is kept on `self` and waited for in another method; nothing reads its pipe.
import subprocess


class InferenceServer:
    def start(self, port):
        self.proc = subprocess.Popen(["serve", "--port", str(port)],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def stop(self):
        self.proc.terminate()
        self.proc.wait()  # expect: HL401
