"""The code injected into the job runs on the job's Python, whatever it is (3.8 up), with the
standard library alone: each Python found under pyenv compiles and imports the bootstrap's
modules, and runs an instrumented script whose probe arms and writes its status file."""

from __future__ import annotations

import glob
import json
import os
import subprocess
from pathlib import Path

import pytest

from hangdoctor.instrument import bootstrap_dir, instrumented_environment
from hangdoctor.instrument.bootstrap import _hangdoctor_protocol as protocol

VERSIONS = ("3.8", "3.9", "3.10", "3.11", "3.12", "3.13")
MODULES = sorted(path.stem for path in bootstrap_dir().glob("*.py"))


def _python(version: str) -> str:
    found = sorted(glob.glob(f"/root/.pyenv/versions/{version}.*/bin/python{version}"))
    if not found:
        pytest.skip(f"no Python {version} here")
    return found[-1]


def _isolated_env() -> dict[str, str]:
    """The environment without this interpreter's site-packages: the job's Python has none of
    hangdoctor's dependencies."""
    return {
        key: value
        for key, value in os.environ.items()
        if key not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")
    }


@pytest.mark.parametrize("version", VERSIONS)
def test_the_bootstrap_compiles_and_imports_on_the_jobs_python(version: str) -> None:
    python = _python(version)
    code = (
        "import importlib, sys\n"
        f"for name in {MODULES!r}:\n"
        "    if name != 'sitecustomize':\n"
        "        importlib.import_module(name)\n"
        "print(sorted(m for m in sys.modules if m.startswith('_hangdoctor')))\n"
    )
    env = {**_isolated_env(), "PYTHONPATH": str(bootstrap_dir())}
    result = subprocess.run(
        [
            python,
            "-I",
            "-c",
            f"import sys; sys.path.insert(0, {str(bootstrap_dir())!r}); exec({code!r})",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str([m for m in MODULES if m.startswith("_hangdoctor")])
    for module in MODULES:
        source = str(bootstrap_dir() / f"{module}.py")
        compiled = subprocess.run(
            [python, "-m", "py_compile", source],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
        )
        assert compiled.returncode == 0, compiled.stderr


@pytest.mark.parametrize("version", VERSIONS)
def test_an_instrumented_script_runs_and_reports_on_the_jobs_python(
    version: str, tmp_path: Path
) -> None:
    python = _python(version)
    fake_torch = tmp_path / "site" / "torch"
    fake_torch.mkdir(parents=True)  # the probe arms once `import torch` completes
    (fake_torch / "__init__.py").write_text("")
    script = tmp_path / "train.py"
    script.write_text(
        "import os, sys, torch\n"
        "print('probe loaded:', '_hangdoctor_probe' in sys.modules)\n"
        "print('pid', os.getpid())\n"
    )
    status_dir = tmp_path / "status"
    status_dir.mkdir()
    env = instrumented_environment(
        {**_isolated_env(), "PYTHONPATH": str(tmp_path / "site")}, status_dir
    )
    result = subprocess.run(
        [python, str(script)], capture_output=True, text=True, timeout=60, env=env, cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    lines = result.stdout.splitlines()
    assert lines[0] == "probe loaded: True"
    pid = int(lines[1].split()[1])
    status = json.loads((status_dir / protocol.status_file(pid)).read_text())
    assert status["pid"] == pid


@pytest.mark.parametrize("version", VERSIONS)
def test_the_probe_loads_its_parts_from_beside_it_on_the_jobs_python(
    version: str, tmp_path: Path
) -> None:
    """As `sitecustomize` loads it, by its file, once the job may have changed sys.path: the
    bootstrap folder is not on sys.path, and the probe still finds every part beside it."""
    python = _python(version)
    probe = bootstrap_dir() / f"{protocol.PROBE_MODULE}.py"
    code = (
        "import importlib.util, sys\n"
        f"assert not any('bootstrap' in entry for entry in sys.path), sys.path\n"
        f"spec = importlib.util.spec_from_file_location({protocol.PROBE_MODULE!r}, "
        f"{str(probe)!r})\n"
        "module = importlib.util.module_from_spec(spec)\n"
        "sys.modules[spec.name] = module\n"
        "spec.loader.exec_module(module)\n"
        "print(sorted(m for m in sys.modules if m.startswith('_hangdoctor')))\n"
    )
    result = subprocess.run(
        [python, "-I", "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env=_isolated_env(),
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    expected = sorted([protocol.PROBE_MODULE, *protocol.PROBE_PARTS, "_hangdoctor_protocol"])
    assert result.stdout.strip() == str(expected)
