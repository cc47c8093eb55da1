"""`hangdoctor lint` as a user runs it: formats, exit codes, suppression, configuration, and
files that cannot be parsed."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from hangdoctor.lint.rules import RULES_BY_ID
from tests.conftest import run_cli

BAD = """import torch.distributed as dist
if dist.get_rank() == 0:
    dist.barrier()
"""
BAD_TWO = (
    BAD
    + """import pdb
pdb.set_trace()
"""
)
GOOD = "import torch\nx = torch.zeros(3)\n"
KERNEL = """__global__ void k(float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = 0.0f;
}
"""
LINE = re.compile(r"^(?P<path>.+):(?P<line>\d+):(?P<col>\d+) (?P<id>HL\d{3}) (?P<message>.+)$")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A directory with its own (empty) pyproject.toml, so the repository's is not read."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    return tmp_path


def lint(*args: str | Path) -> tuple[int, str, str]:
    done = run_cli("lint", *map(str, args), timeout=60)
    return done.returncode, done.stdout, done.stderr


def test_clean_code_exits_0_quietly(project: Path) -> None:
    (project / "ok.py").write_text(GOOD)
    code, out, _ = lint(project / "ok.py")
    assert code == 0 and out == ""


def test_text_format_and_exit_1(project: Path) -> None:
    path = project / "train.py"
    path.write_text(BAD)
    code, out, err = lint(path)
    assert code == 1
    match = LINE.match(out.splitlines()[0])
    assert match, out
    assert (match["path"], match["line"], match["col"], match["id"]) == (
        str(path),
        "3",
        "5",
        "HL101",
    )
    assert "fix:" in match["message"]
    assert "1 finding" in err


def test_json_format(project: Path) -> None:
    (project / "train.py").write_text(BAD_TWO)
    code, out, _ = lint(project, "--format", "json")
    assert code == 1
    data = json.loads(out)
    assert data["files_checked"] == 2 - 1  # pyproject.toml is not code
    assert [(f["id"], f["line"]) for f in data["findings"]] == [("HL101", 3), ("HL402", 5)]
    first = data["findings"][0]
    assert first["category"] == "distributed.collective_mismatch"
    assert first["severity"] == "error" and first["fix"] and first["column"] == 5


def test_sarif_structure(project: Path) -> None:
    (project / "train.py").write_text(BAD)
    (project / "k.cu").write_text(KERNEL)
    code, out, _ = lint(project, "--format", "sarif")
    assert code == 1
    log = json.loads(out)
    assert log["version"] == "2.1.0" and "sarif-2.1.0" in log["$schema"]
    (run,) = log["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "hangdoctor"
    rules = driver["rules"]
    assert {r["id"] for r in rules} == set(RULES_BY_ID)
    for rule in rules:
        assert rule["shortDescription"]["text"] and rule["help"]["text"]
        assert rule["defaultConfiguration"]["level"] in ("error", "warning", "note")
    assert {r["ruleId"] for r in run["results"]} == {"HL101", "HL601"}
    for result in run["results"]:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
        assert result["level"] in ("error", "warning") and result["message"]["text"]
        (location,) = result["locations"]
        physical = location["physicalLocation"]
        assert physical["artifactLocation"]["uri"].startswith("file://")
        region = physical["region"]
        assert region["startLine"] >= 1 and region["startColumn"] >= 1


def test_suppression_comments(project: Path) -> None:
    (project / "a.py").write_text(
        BAD.replace("dist.barrier()", "dist.barrier()  # hangdoctor: ignore[HL101]")
    )
    (project / "b.py").write_text(
        BAD.replace("dist.barrier()", "dist.barrier()  # hangdoctor: ignore")
    )
    (project / "c.py").write_text(
        BAD.replace("dist.barrier()", "dist.barrier()  # hangdoctor: ignore[HL402]")
    )
    (project / "k.cu").write_text(
        KERNEL.replace("out[i] = 0.0f;", "out[i] = 0.0f;  // hangdoctor: ignore[HL601]")
    )
    code, out, _ = lint(project)
    assert code == 1
    assert [Path(line.split(":")[0]).name for line in out.splitlines()] == ["c.py"]


def test_pyproject_select_ignore_exclude(project: Path) -> None:
    (project / "pyproject.toml").write_text(
        "[tool.hangdoctor.lint]\nignore = ['HL402']\nexclude = ['legacy']\n"
        "per-file-ignores = { 'scripts/*' = ['HL1'] }\n"
    )
    (project / "train.py").write_text(BAD_TWO)
    (project / "legacy").mkdir()
    (project / "legacy" / "old.py").write_text(BAD)
    (project / "scripts").mkdir()
    (project / "scripts" / "s.py").write_text(BAD)
    code, out, _ = lint(project)
    assert code == 1
    assert [(Path(line.split(":")[0]).name, line.split()[1]) for line in out.splitlines()] == [
        ("train.py", "HL101")
    ]
    # The command line replaces the configured select/ignore.
    _, out, _ = lint(project / "train.py", "--ignore", "HL1")
    assert [line.split()[1] for line in out.splitlines()] == ["HL402"]
    _, out, _ = lint(project / "train.py", "--select", "HL402", "--ignore", "")
    assert [line.split()[1] for line in out.splitlines()] == ["HL402"]


def test_usage_errors_exit_2(project: Path) -> None:
    code, _, err = lint(project / "missing.py")
    assert code == 2 and "does not exist" in err and "Traceback" not in err
    (project / "ok.py").write_text(GOOD)
    code, _, err = lint(project / "ok.py", "--select", "HL999")
    assert code == 2 and "unknown rule id" in err and len(err.strip().splitlines()) <= 2
    (project / "pyproject.toml").write_text("[tool.hangdoctor.lint]\nselct = ['HL1']\n")
    code, _, err = lint(project / "ok.py")
    assert code == 2 and "unknown key" in err
    (project / "pyproject.toml").write_text("[tool.hangdoctor.lint\n")
    code, _, err = lint(project / "ok.py")
    assert code == 2 and "cannot read" in err


def test_syntax_error_and_bad_encoding_are_reported_not_fatal(project: Path) -> None:
    (project / "broken.py").write_text("def f(:\n    pass\n")
    (project / "latin.py").write_bytes(b"x = '\xe9\xff'\n")
    (project / "train.py").write_text(BAD)
    code, out, err = lint(project)
    assert code == 1 and "Traceback" not in err
    found = {(Path(line.split(":")[0]).name, line.split()[1]) for line in out.splitlines()}
    assert found == {("broken.py", "HL000"), ("latin.py", "HL000"), ("train.py", "HL101")}


def test_byte_order_mark_is_not_a_parse_error(project: Path) -> None:
    # Python skips a UTF-8 BOM (stylegan2-ada-pytorch ships every file with one).
    (project / "bom.py").write_bytes(b"\xef\xbb\xbf" + BAD.encode())
    code, out, _ = lint(project / "bom.py")
    assert code == 1
    assert [line.split()[1] for line in out.splitlines()] == ["HL101"]
    assert ":3:5 " in out  # positions as without the mark


def test_directory_walk_skips_virtualenvs(project: Path) -> None:
    for skipped in (".venv/lib", "node_modules/x", "env/lib/site-packages/pkg", ".git"):
        (project / skipped).mkdir(parents=True)
        (project / skipped / "bad.py").write_text(BAD)
    custom_env = project / "myenv"
    custom_env.mkdir()
    (custom_env / "pyvenv.cfg").write_text("home = /usr\n")
    (custom_env / "bad.py").write_text(BAD)
    (project / "src").mkdir()
    (project / "src" / "train.py").write_text(BAD)
    code, out, _ = lint(project)
    assert code == 1
    assert [
        Path(line.split(":")[0]).relative_to(project).as_posix() for line in out.splitlines()
    ] == ["src/train.py"]


def test_parallel_output_is_identical_to_one_process(project: Path) -> None:
    # Enough files for the process pool (PARALLEL_MIN_FILES), spread over directories, some
    # clean and some not: the findings must not depend on which worker linted what.
    for n in range(80):
        folder = project / f"pkg{n % 7}"
        folder.mkdir(exist_ok=True)
        (folder / f"m{n}.py").write_text(BAD_TWO if n % 3 == 0 else GOOD)
    (project / "k.cu").write_text(KERNEL)
    code_one, out_one, _ = lint(project, "--jobs", "1", "--format", "json")
    code_all, out_all, _ = lint(project, "--jobs", "2", "--format", "json")
    assert code_one == code_all == 1
    assert out_one == out_all
    found = json.loads(out_all)["findings"]
    assert len(found) == 27 * 2 + 1
    assert found == sorted(found, key=lambda f: (f["path"], f["line"], f["column"], f["id"]))


def test_helper_module_of_a_training_project_is_training_code(project: Path) -> None:
    # The tracker imports no framework; the training script next to it does.
    (project / "tracker.py").write_text(
        "import requests\n\ndef log(m):\n    requests.post('http://x', json=m)\n"
    )
    code, out, _ = lint(project / "tracker.py", "--select", "HL501")
    assert code == 0 and out == ""
    (project / "train.py").write_text("import torch\nfrom tracker import log\n")
    code, out, _ = lint(project / "tracker.py", "--select", "HL501")
    assert code == 1
    assert [line.split()[1] for line in out.splitlines()] == ["HL501"]
