"""report.html in a real browser: Debian's headless Chromium, driven by Playwright, opens the
pages of recorded reports and checks what a person would: the culprit shown and highlighted,
the charts drawn, the column where the ranks disagree marked, no console error, and nothing
fetched from anywhere but the file itself.

The reports are real: tests/fixtures/reports/ holds report directories that `hangdoctor run`
wrote for a two-rank collective mismatch under torchrun with gloo
(tests/scenarios/programs/ddp_rank0_checkpoint.py) and a DataLoader stall
(tests/scenarios/programs/worker_remote_read.py), from before report.html existed: `hangdoctor
report DIR --html` writes their pages. The 64-rank job is benchmarks/bench_cross_rank.py's
synthetic ranks, with a full timeline, through the real pipeline.

Screenshots of every page are kept as test artefacts in build/test-artifacts/html-report/
(git-ignored). Skipped where chromium (`apt-get install chromium fonts-noto-cjk`) or the
playwright package is missing."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXTURES, REPO, run_cli

playwright_api = pytest.importorskip("playwright.sync_api")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed")

ARTIFACTS = REPO / "build" / "test-artifacts" / "html-report"
RECORDED = FIXTURES / "reports"
MAX_BYTES = 5 * 2**20


@dataclass
class Opened:
    """A page as the browser showed it, and what it said and asked for on the way."""

    page: Any
    errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)

    def text(self, selector: str) -> str:
        return str(self.page.locator(selector).first.inner_text())

    def count(self, selector: str) -> int:
        return int(self.page.locator(selector).count())


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with playwright_api.sync_playwright() as driver:
        launched = driver.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield launched
        launched.close()


@pytest.fixture
def open_page(browser: Any) -> Iterator[Any]:
    contexts = []

    def open_(path: Path, screenshot: str) -> Opened:
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        contexts.append(context)
        page = context.new_page()
        opened = Opened(page)
        page.on(
            "console",
            lambda message: opened.errors.append(message.text) if message.type == "error" else None,
        )
        page.on("pageerror", lambda error: opened.errors.append(str(error)))
        page.on("requestfailed", lambda request: opened.errors.append(f"failed: {request.url}"))

        def route(request_route: Any) -> None:
            opened.requests.append(request_route.request.url)
            if request_route.request.url.startswith(("file:", "data:")):
                request_route.continue_()
            else:
                request_route.abort()

        page.route("**/*", route)
        page.goto(path.as_uri())
        page.wait_for_load_state("load")
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / screenshot), full_page=True)
        return opened

    yield open_
    for context in contexts:
        context.close()


def _rerendered(name: str, tmp_path: Path, *extra: str) -> Path:
    """A recorded report directory, copied, its report.html written by `hangdoctor report`."""
    directory = tmp_path / name
    shutil.copytree(RECORDED / name, directory)
    assert not (directory / "report.html").exists()
    done = run_cli("report", str(directory), "--html", *extra)
    assert done.returncode == 0, done.stderr
    page = directory / "report.html"
    assert done.stdout.strip() == str(page)
    return page


def _drawn_charts(opened: Opened) -> dict[str, tuple[int, int]]:
    """Each chart's id, how many of its canvas pixels are painted in a line's colour (opaque,
    not grey: axes and grid are grey, the hang's shading is faint), and how many of those are
    the culprit's red."""
    counted = opened.page.evaluate(
        """() => Object.fromEntries([...document.querySelectorAll("figure.chart")].map(f => {
            const canvas = f.querySelector("canvas");
            if (!canvas || !canvas.width || !canvas.height) return [f.id, [0, 0]];
            const pixels = canvas.getContext("2d")
                .getImageData(0, 0, canvas.width, canvas.height).data;
            let coloured = 0, red = 0;
            for (let i = 0; i < pixels.length; i += 4) {
                const [r, g, b, a] = [pixels[i], pixels[i + 1], pixels[i + 2], pixels[i + 3]];
                if (a < 200 || Math.max(r, g, b) - Math.min(r, g, b) < 60) continue;
                coloured++;
                if (r > 150 && g < 90 && b < 90) red++;
            }
            return [f.id, [coloured, red]];
        }))"""
    )
    return {str(key): (int(value[0]), int(value[1])) for key, value in counted.items()}


def _assert_clean(opened: Opened, page: Path) -> None:
    """No console error, and nothing asked for but the page itself."""
    assert opened.errors == []
    assert opened.requests == [page.as_uri()]


def _assert_charts_drawn(opened: Opened, expected: set[str], culprit_in: set[str]) -> None:
    """The `expected` charts have lines; those of `culprit_in` draw the culprit's in red."""
    drawn = _drawn_charts(opened)
    assert expected <= set(drawn), drawn
    assert all(coloured > 50 for coloured, _red in drawn.values()), drawn
    assert all(drawn[chart][1] > 20 for chart in culprit_in), drawn


def test_collective_mismatch_page(open_page, tmp_path):
    page = _rerendered("collective_mismatch", tmp_path)
    opened = open_page(page, "collective_mismatch.png")
    _assert_clean(opened, page)
    root = opened.page.locator("article.root-cause")
    assert "Collective mismatch" in root.locator("h2").inner_text()
    culprit = root.locator(".culprit-card.culprit")
    assert culprit.count() == 1 and culprit.get_attribute("data-rank") == "0"
    assert culprit.locator(".rank-tag").inner_text() == "rank 0"
    assert "dist.barrier()" in culprit.locator("pre.code").inner_text()
    # The Flight Recorder: the column where rank 0's barrier meets rank 1's all_reduce.
    assert "disagree at collective #41" in opened.text("#flight-recorder")
    assert opened.page.locator("table.flight thead th.disagree").all_inner_texts() == ["#41"]
    culprit_row = opened.page.locator("table.flight tr.culprit")
    assert culprit_row.get_attribute("data-rank") == "0"
    assert culprit_row.locator("td.disagree").inner_text() == "barrier"
    other = opened.page.locator('table.flight tr[data-rank="1"] td.disagree').inner_text()
    assert other == "all_reduce"
    _assert_charts_drawn(
        opened, {"chart-progress", "chart-cpu", "chart-rss"}, culprit_in={"chart-cpu"}
    )
    # The processes: the culprit's first, highlighted.
    first = opened.page.locator("table.processes tbody tr").first
    assert first.get_attribute("class") == "culprit" and first.get_attribute("data-rank") == "0"


def test_dataloader_stall_page(open_page, tmp_path):
    page = _rerendered("dataloader_stall", tmp_path)
    opened = open_page(page, "dataloader_stall.png")
    _assert_clean(opened, page)
    root = opened.page.locator("article.root-cause")
    assert "Data pipeline stall" in root.locator("h2").inner_text()
    culprit = root.locator(".culprit-card.culprit")
    pid = culprit.get_attribute("data-pid")
    assert pid and "dataloader_worker" in culprit.inner_text()
    assert "urlopen" in culprit.locator("pre.code").inner_text()
    first = opened.page.locator("table.processes tbody tr").first
    assert first.get_attribute("data-pid") == pid and first.get_attribute("class") == "culprit"
    _assert_charts_drawn(
        opened,
        {"chart-progress", "chart-data_wait", "chart-cpu", "chart-rss"},
        culprit_in={"chart-rss"},
    )
    # A job of one process (and its workers) has no Flight Recorder: no empty section for it,
    # and no link to one (issue 29, item 10).
    assert opened.page.locator("#flight-recorder").count() == 0
    assert opened.page.locator('a[href="#flight-recorder"]').count() == 0
    # The charts' legends name their series, with no "--" where a value would follow a cursor.
    legends = opened.page.locator(".u-legend").all_inner_texts()
    assert legends and not any("--" in text for text in legends)


def test_64_rank_page_stays_small_and_names_the_straggler(open_page, tmp_path):
    from benchmarks.bench_cross_rank import synthetic_job, with_history
    from hangdoctor.pipeline import Context, Mode, diagnose

    ranks, straggler = 64, 21
    bundle = with_history(synthetic_job(ranks, straggler), straggler)
    report = diagnose(bundle, Context(mode=Mode.LIVE, report_dir=tmp_path / "r64"))
    page = tmp_path / "r64" / "report.html"
    assert report.artifacts["html"] == "report.html"
    assert page.stat().st_size < MAX_BYTES
    opened = open_page(page, "synthetic_64_ranks.png")
    _assert_clean(opened, page)
    culprit = opened.page.locator("article.root-cause .culprit-card.culprit")
    assert culprit.locator(".rank-tag").inner_text() == f"rank {straggler}"
    rows = opened.page.locator("table.flight tbody tr")
    assert rows.count() == ranks
    assert opened.page.locator("table.flight tr.culprit").get_attribute("data-rank") == "21"
    assert opened.page.locator("table.flight thead th.disagree").all_inner_texts() == ["#41"]
    _assert_charts_drawn(
        opened,
        {
            "chart-progress",
            "chart-gap",
            "chart-data_wait",
            "chart-cpu",
            "chart-rss",
            "chart-gpu_util",
            "chart-gpu_memory",
        },
        culprit_in={"chart-progress", "chart-data_wait"},
    )


def test_chinese_page(open_page, tmp_path):
    """`--lang zh` on an English report with its evidence: diagnosed again, the page in
    Chinese (needs the compiled Chinese catalog)."""
    page = _rerendered("collective_mismatch", tmp_path, "--lang", "zh")
    opened = open_page(page, "collective_mismatch_zh.png")
    _assert_clean(opened, page)
    assert opened.page.locator("html").get_attribute("lang") == "zh-CN"
    headings = " ".join(opened.page.locator("section > h2").all_inner_texts())
    assert re.search(r"[\u4e00-\u9fff]", headings), headings
    assert opened.page.locator("article.root-cause .culprit-card.culprit").count() == 1
    _assert_charts_drawn(opened, {"chart-progress", "chart-cpu", "chart-rss"}, set())
