"""No secret reaches a report: a stuck job with tokens in its environment, command line,
locals and log lines is captured; only output.log (the job's own bytes, private) has them."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.conftest import FIXTURES
from tests.unit.test_redact import NAMED, TOKENS


def test_a_run_with_secrets_everywhere_reports_none(tmp_path):
    argv = [
        "--token",
        TOKENS["hugging face"],
        "--openai",
        TOKENS["openai project"],
        "--aws-secret-access-key",
        NAMED["AWS_SECRET_ACCESS_KEY"],
        "--wandb-api-key",
        NAMED["WANDB_API_KEY"],
    ]
    env = {
        **os.environ,
        "HF_TOKEN": TOKENS["hugging face"],
        "GITHUB_TOKEN": TOKENS["github fine-grained"],
        "AWS_ACCESS_KEY_ID": TOKENS["aws access key id"],
        "WANDB_API_KEY": NAMED["WANDB_API_KEY"],
        "NCCL_DEBUG": TOKENS["github classic"],
    }  # a kept variable holding a token
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "hangdoctor",
            "run",
            "--report-dir",
            str(tmp_path),
            "--hang-timeout",
            "1.5",
            "--on-hang",
            "kill",
            "--kill-grace",
            "0.5",
            "--",
            sys.executable,
            str(FIXTURES / "run_with_secrets.py"),
            *argv,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert done.returncode == 124, done.stderr
    secrets = [*TOKENS.values(), *NAMED.values()]
    evidence = (tmp_path / "hang-1" / "evidence.json").read_text()
    # The capture did see what it had to redact: locals, environment, command line, log.
    assert '"hub_token"' in evidence and '"HF_TOKEN"' in evidence and "--token" in evidence
    assert "logging in to the hub with" in evidence
    reports = [p for p in tmp_path.rglob("*") if p.is_file() and p.name != "output.log"]
    assert len(reports) >= 6
    for path in reports:
        text = path.read_text(errors="replace")
        leaked = [secret for secret in secrets if secret in text]
        assert not leaked, f"{path.relative_to(tmp_path)} holds {leaked}"
    assert not [secret for secret in secrets if secret in done.stderr]  # the summary printed
    # report.html shows the command line, with the redactions report.json has.
    page = (tmp_path / "hang-1" / "report.html").read_text()
    assert "--token &lt;redacted&gt;" in page
    assert TOKENS["hugging face"] in (tmp_path / "output.log").read_text()  # the job's own bytes
