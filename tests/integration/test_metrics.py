"""`run --metrics-port` on a real training job: /metrics scraped while it trains, by urllib and
by a real Prometheus server (Debian's `prometheus`, run by the test itself), and the alert rules
that docs/metrics.md gives, loaded into that server and checked by promtool."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TypeVar

import psutil
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import FIXTURES, REPO, kill_tree

T = TypeVar("T")
DOCS = REPO / "docs" / "metrics.md"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_for(what: str, condition: Callable[[], T | None], timeout_s: float = 60) -> T:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        result = condition()
        if result:
            return result
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def get(url: str) -> bytes | None:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return bytes(response.read())
    except OSError:
        return None


def steps(port: int) -> float | None:
    """hangdoctor_steps_total of the job's only process, None before it has a value."""
    text = get(f"http://127.0.0.1:{port}/metrics")
    if text is None:
        return None
    for family in text_string_to_metric_families(text.decode()):
        for sample in family.samples:
            if sample.name == "hangdoctor_steps_total" and sample.value > 0:
                return float(sample.value)
    return None


class Job:
    """`hangdoctor run ARGS -- python run_metrics_training.py`, training until told to stop."""

    def __init__(self, tmp_path: Path, args: tuple[str, ...], env: dict[str, str] | None) -> None:
        self.stop = tmp_path / "stop"
        self.stderr = tmp_path / "stderr.txt"
        fixture = FIXTURES / "run_metrics_training.py"
        command = [sys.executable, "-m", "hangdoctor", "run", "--report-dir", str(tmp_path / "r")]
        command += [*args, "--", sys.executable, str(fixture), str(self.stop), "0.05", "120"]
        with self.stderr.open("wb") as err:
            self.proc = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=err,
                env={**os.environ, **(env or {})},
            )

    def finish(self) -> int:
        self.stop.touch()
        return self.proc.wait(timeout=60)


@contextmanager
def training(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> Iterator[Job]:
    """A training job under `hangdoctor run ARGS`, ended and reaped on the way out however the
    test went."""
    job = Job(tmp_path, args, env)
    try:
        yield job
    finally:
        job.stop.touch()
        with suppress(subprocess.TimeoutExpired):
            job.proc.wait(timeout=60)
        kill_tree(job.proc)


@pytest.mark.torch
def test_the_step_counter_rises_on_loopback_only(tmp_path):
    pytest.importorskip("torch")
    port = free_port()
    with training(tmp_path, "--metrics-port", str(port)) as job:
        first = wait_for("a first step on /metrics", lambda: steps(port))
        later = wait_for("more steps", lambda: (s := steps(port)) is not None and s > first)
        assert later
        listening = [
            c.laddr
            for c in psutil.Process(job.proc.pid).net_connections(kind="inet")
            if c.status == psutil.CONN_LISTEN
        ]
        assert [(a.ip, a.port) for a in listening] == [("127.0.0.1", port)]
        for addresses in psutil.net_if_addrs().values():
            for address in addresses:
                if address.family == socket.AF_INET and not address.address.startswith("127."):
                    with pytest.raises(OSError):
                        socket.create_connection((address.address, port), timeout=5).close()
        assert job.finish() == 0, job.stderr.read_text()
    assert b"warning" not in job.stderr.read_bytes()
    assert get(f"http://127.0.0.1:{port}/metrics") is None  # gone with hangdoctor


def test_a_taken_port_costs_the_job_nothing(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        hd = [sys.executable, "-m", "hangdoctor", "run", "--report-dir", str(tmp_path)]
        done = subprocess.run(
            [
                *hd,
                "--metrics-port",
                str(port),
                "--",
                sys.executable,
                str(FIXTURES / "run_prints_and_exits.py"),
            ],
            capture_output=True,
            timeout=120,
            check=False,
        )
    assert done.returncode == 0
    assert done.stdout == b"step 0\nstep 1\nstep 2\n"
    warnings = [line for line in done.stderr.decode().splitlines() if "metrics" in line]
    assert warnings == [
        f"hangdoctor: warning: cannot serve metrics on 127.0.0.1:{port} (Address already in "
        "use); the job runs without them"
    ]


def alert_rules() -> str:
    """The rule file docs/metrics.md gives (its YAML block with `groups:`)."""
    blocks = re.findall(r"```yaml\n(.*?)```", DOCS.read_text(), re.S)
    [rules] = [block for block in blocks if block.startswith("groups:")]
    return rules


def test_the_documented_alert_rules_are_valid(tmp_path):
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool is not installed (Debian: apt-get install prometheus)")
    rules = tmp_path / "rules.yml"
    rules.write_text(alert_rules())
    checked = subprocess.run(
        [promtool, "check", "rules", str(rules)], capture_output=True, text=True, timeout=60
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


def query(server: str, expression: str) -> list[dict]:
    body = get(f"{server}/api/v1/query?" + urllib.parse.urlencode({"query": expression}))
    if body is None:
        return []
    answer = json.loads(body)
    assert answer["status"] == "success", answer
    return list(answer["data"]["result"])


def rules_ok(server: str) -> bool:
    """Whether Prometheus has evaluated every loaded rule without an error."""
    body = get(f"{server}/api/v1/rules")
    if body is None:
        return False
    groups = json.loads(body)["data"]["groups"]
    rules = [rule for group in groups for rule in group["rules"]]
    return bool(rules) and all(rule["health"] == "ok" for rule in rules)


def firing(server: str) -> set[str]:
    """The names of the alerts Prometheus has firing."""
    body = get(f"{server}/api/v1/alerts")
    alerts = json.loads(body)["data"]["alerts"] if body else []
    return {a["labels"]["alertname"] for a in alerts if a["state"] == "firing"}


@contextmanager
def prometheus(tmp_path: Path, target: int, rules: str) -> Iterator[str]:
    """A Prometheus server of our own (not the system's service) scraping 127.0.0.1:`target`
    every second with `rules`; yields its address. On a failed assertion its log is added."""
    binary = shutil.which("prometheus")
    if binary is None:
        pytest.skip("the prometheus binary is not installed (Debian: apt-get install prometheus)")
    (tmp_path / "rules.yml").write_text(rules)
    config = tmp_path / "prometheus.yml"
    config.write_text(
        "global: {scrape_interval: 1s, scrape_timeout: 1s, evaluation_interval: 1s}\n"
        "rule_files: [rules.yml]\n"
        "scrape_configs:\n"
        f"  - {{job_name: train, static_configs: [{{targets: ['127.0.0.1:{target}']}}]}}\n"
    )
    web = free_port()
    log = tmp_path / "prometheus.log"
    with log.open("wb") as out:
        server = subprocess.Popen(
            [
                binary,
                f"--config.file={config}",
                f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                f"--web.listen-address=127.0.0.1:{web}",
            ],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        yield f"http://127.0.0.1:{web}"
    except AssertionError as error:
        raise AssertionError(f"{error}\nprometheus's log:\n{log.read_text()[-3000:]}") from error
    finally:
        kill_tree(server)


@pytest.mark.torch
def test_a_real_prometheus_scrapes_the_job_and_alerts(tmp_path):
    pytest.importorskip("torch")
    port = free_port()
    # The documented rules with their windows in seconds: a step every 0.05 s, 1 s scrapes.
    rules = alert_rules()
    assert "[15m]" in rules and "for: 1m" in rules
    rules = rules.replace("[15m]", "[3s]").replace("for: 1m", "for: 0s")
    args = ("--metrics-port", str(port), "--hang-timeout", "4")
    with (
        training(tmp_path, *args, env={"RANK": "0"}) as job,
        prometheus(tmp_path, port, rules) as server,
    ):
        [series] = wait_for(
            "the steps in Prometheus", lambda: query(server, "hangdoctor_steps_total > 0")
        )
        assert series["metric"]["rank"] == "0"
        assert series["metric"]["node"] == socket.gethostname()
        assert series["metric"]["job"] == "train"
        wait_for("an increase", lambda: query(server, "increase(hangdoctor_steps_total[3s]) > 0"))
        hung = query(server, "hangdoctor_hung")
        assert sorted(r["metric"]["kind"] for r in hung) == ["busy", "idle"]
        assert {r["value"][1] for r in hung} == {"0"}
        wait_for("the rules evaluated", lambda: rules_ok(server))
        # (rules are evaluated each second, apart from the queries: a start-up moment with no
        # step yet may have fired one just now)
        wait_for("no alert while it trains", lambda: firing(server) == set())

        job.stop.with_name("stop.hold").touch()  # the job stops stepping and waits
        wait_for("TrainingStalled", lambda: "TrainingStalled" in firing(server))
        wait_for("TrainingHung", lambda: "TrainingHung" in firing(server), timeout_s=150)
        [hung_now] = query(server, "hangdoctor_hung == 1")
        assert hung_now["metric"]["kind"] == "idle"
