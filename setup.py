"""Everything about the package is in pyproject.toml; this only adds `hangdoctor-watch.pth` to
the top of site-packages, beside the package, which pyproject.toml cannot say: Python runs its
one line at start-up, and it imports hangdoctor only when HANGDOCTOR_WATCH is set."""

import os

from setuptools import setup
from setuptools.command.build_py import build_py

PTH = "hangdoctor-watch.pth"


class BuildWithWatchHook(build_py):
    """build_py, plus the .pth file at the root of what is installed (wheels and editable
    installs alike)."""

    def run(self) -> None:
        super().run()
        self.copy_file(os.path.join("src", PTH), os.path.join(self.build_lib, PTH))
        if getattr(self, "editable_mode", False):
            # An editable wheel holds only a link to src/; setuptools writes what it installs
            # as is (data, scripts) straight into the wheel, at `install_lib`: so does this.
            wheel_root = self.get_finalized_command("install").install_lib
            if wheel_root:
                self.copy_file(os.path.join("src", PTH), os.path.join(wheel_root, PTH))

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        return [*super().get_outputs(include_bytecode), os.path.join(self.build_lib, PTH)]

    def get_output_mapping(self) -> dict[str, str]:
        mapping = dict(super().get_output_mapping())
        mapping[os.path.join(self.build_lib, PTH)] = os.path.join("src", PTH)
        return mapping


setup(cmdclass={"build_py": BuildWithWatchHook})
