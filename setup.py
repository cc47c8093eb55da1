"""Everything about the package is in pyproject.toml; this adds what pyproject.toml cannot say:

- `hangdoctor-watch.pth` at the top of site-packages, beside the package: Python runs its one
  line at start-up, and it imports hangdoctor only when HANGDOCTOR_WATCH is set;
- the message catalogs compiled, each `locale/<lang>/LC_MESSAGES/hangdoctor.po` to the `.mo`
  the installed package reads. The `.mo` files are built, never committed; the compiler is
  hangdoctor's own, standard library only (src/hangdoctor/po_catalog.py, loaded by its path:
  the build environment has none of hangdoctor's dependencies, nor Babel). An editable
  install has none: hangdoctor.i18n compiles the `.po` in memory there."""

import importlib.util
import os
import sys
from glob import glob
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

PTH = "hangdoctor-watch.pth"
CATALOGS = os.path.join("src", "hangdoctor", "locale", "*", "LC_MESSAGES", "*.po")


def _compile_file(po: str, mo: str) -> None:
    spec = importlib.util.spec_from_file_location(
        "hangdoctor_po_catalog", os.path.join("src", "hangdoctor", "po_catalog.py")
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    module.compile_file(Path(po), Path(mo))


class BuildWithWatchHook(build_py):
    """build_py, plus the .pth file at the root of what is installed (wheels and editable
    installs alike), plus the compiled catalogs (wheels)."""

    def run(self) -> None:
        super().run()
        self.copy_file(os.path.join("src", PTH), os.path.join(self.build_lib, PTH))
        if getattr(self, "editable_mode", False):
            # An editable wheel holds only a link to src/; setuptools writes what it installs
            # as is (data, scripts) straight into the wheel, at `install_lib`: so does this.
            wheel_root = self.get_finalized_command("install").install_lib
            if wheel_root:
                self.copy_file(os.path.join("src", PTH), os.path.join(wheel_root, PTH))
            return
        for po, mo in self._catalogs():
            self.announce(f"compiling {po} -> {mo}", level=2)
            if not self.dry_run:
                _compile_file(po, mo)

    def _catalogs(self) -> list[tuple[str, str]]:
        """Each catalog's .po in src/, and the .mo it compiles to in the build."""
        return [
            (po, os.path.join(self.build_lib, os.path.relpath(po, "src")[: -len(".po")] + ".mo"))
            for po in sorted(glob(CATALOGS))
        ]

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        built = [mo for _po, mo in self._catalogs()]
        return [*super().get_outputs(include_bytecode), os.path.join(self.build_lib, PTH), *built]

    def get_output_mapping(self) -> dict[str, str]:
        # Not the .mo files: an editable install links these outputs to their sources.
        mapping = dict(super().get_output_mapping())
        mapping[os.path.join(self.build_lib, PTH)] = os.path.join("src", PTH)
        return mapping


setup(cmdclass={"build_py": BuildWithWatchHook})
