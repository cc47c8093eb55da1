"""The stack tree (report/stack_tree.py and its renderers): every thread of every rank merged
into one tree, the odd branch and the culprit's marked, library frames folded, readable at
1,024 ranks. Built from recorded evidence (a node of a real 3-node torchrun job, a real H200
job) and from the synthetic ranks of benchmarks/bench_cross_rank.py, diagnosed by the real
pipeline."""

from __future__ import annotations

import io
import re
from functools import cache

import jinja2
import pytest
from rich.console import Console

from benchmarks.bench_cross_rank import synthetic_job
from hangdoctor.analysis.rank_sets import rank_spans
from hangdoctor.evidence.model import Bundle
from hangdoctor.i18n import _, _n
from hangdoctor.pipeline import diagnose
from hangdoctor.report.model import ProcessReport, Report, StackFrame, ThreadReport
from hangdoctor.report.render_json import render_json
from hangdoctor.report.render_markdown import render_markdown
from hangdoctor.report.render_stack_tree import (
    stack_tree_lines,
    stack_tree_renderable,
)
from hangdoctor.report.stack_tree import StackNode, StackTree, build_stack_tree
from tests.conftest import FIXTURES

TEMPLATES = FIXTURES.parents[1] / "src" / "hangdoctor" / "report" / "templates"


@cache
def recorded_node() -> Report:
    """Node 1 of a real 3-node torchrun job (its launcher and ranks 2 and 3, every thread),
    where the ranks called different collectives."""
    path = FIXTURES / "nodes" / "node1_of_3_capture.json"
    return diagnose(Bundle.model_validate_json(path.read_text()))


@cache
def synthetic(ranks: int) -> Report:
    """`ranks` ranks in all_reduce but rank ranks // 3, reading a socket in its data code."""
    return diagnose(synthetic_job(ranks, ranks // 3))


def group(tree: StackTree, kind: str) -> StackNode:
    return next(g for g in tree.groups if g.group == kind)


def terminal(tree: StackTree) -> str:
    out = io.StringIO()
    Console(file=out, width=140, color_system=None).print(stack_tree_renderable(tree))
    return out.getvalue()


def html(tree: StackTree) -> str:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True)
    env.globals.update(_=_, _n=_n)
    page = '{% from "stack_tree.html.j2" import stack_tree %}{{ stack_tree(tree, "#cause") }}'
    return env.from_string(page).render(tree=tree)


def with_processes(report: Report, processes: list[ProcessReport]) -> Report:
    return report.model_copy(update={"processes": processes})


# --- compact rank sets -------------------------------------------------------------------------


def test_rank_sets_are_written_as_runs() -> None:
    assert rank_spans([*range(7), *range(8, 16)]) == "0-6,8-15"
    assert rank_spans([5]) == "5"
    assert rank_spans([3, 1, 2, 9, 9]) == "1-3,9"
    assert rank_spans(range(0, 40, 2), limit=3) == "0,2,4,…"


# --- recorded evidence -------------------------------------------------------------------------


def test_recorded_ranks_merge_into_one_branch_marked_as_the_culprits() -> None:
    report = recorded_node()
    tree = build_stack_tree(report)
    culprit = report.findings[0].culprit
    assert culprit is not None and culprit.location is not None
    assert tree.culprit == culprit and tree.culprit_finding == report.findings[0].id
    ranks = group(tree, "rank_main")
    assert ranks.ranks == (2, 3) and ranks.threads == 2
    # Both ranks stand in the same place: one branch, outermost frame first.
    (module,) = ranks.children
    assert module.kind == "frame" and module.frame and module.frame.function == "<module>"
    assert module.rank_spans == "2-3" and module.culprit
    marked = [n for n in tree.walk() if n.culprit_line]
    assert [(n.frame.file, n.frame.line) for n in marked if n.frame] == [
        (culprit.location.file, culprit.location.line)
    ]
    # hangdoctor's status thread, one a process, is no thread of the job's.
    assert tree.omitted_threads == 3
    assert not any(n.frame and "_hangdoctor_writer" in n.frame.file for n in tree.walk())


def test_library_frames_fold_into_one_node_that_names_them() -> None:
    tree = build_stack_tree(recorded_node())
    launcher = group(tree, "process_main")
    (script,) = launcher.children
    assert script.kind == "frame" and script.frame and script.frame.file.endswith("torchrun")
    (folded,) = script.children
    launcher_process = next(p for p in recorded_node().processes if p.role.value == "launcher")
    main = next(t for t in launcher_process.threads if t.tid == launcher_process.pid)
    torch_frames = [f for f in main.stack if "/site-packages/torch/" in f.file]
    assert folded.kind == "library" and folded.libraries == ("torch",)
    assert len(folded.frames) == len(torch_frames) > 1
    assert folded.frame == main.stack[0]  # it says where the thread is
    # The collective's run passes through hangdoctor's hook and torch: both named.
    rank_run = group(tree, "rank_main").children[0].chain()[-1]
    assert rank_run.kind == "library" and set(rank_run.libraries) == {"torch", "hangdoctor"}
    text = "\n".join(stack_tree_lines(tree))
    assert f"torch: {len(torch_frames)} library frames, down to" in text


def test_helper_threads_come_after_the_main_threads_grouped_by_what_they_do() -> None:
    tree = build_stack_tree(recorded_node())
    assert [g.group for g in tree.groups] == ["rank_main", "process_main", "other"]
    gloo = next(n for n in group(tree, "other").children if n.thread_name == "pt_gloo_runloop")
    assert gloo.kind == "no_stack" and gloo.threads == 4 and gloo.ranks == (2, 3)


def test_the_tree_is_built_again_from_report_json_alone() -> None:
    report = recorded_node()
    again = Report.model_validate_json(render_json(report))
    assert build_stack_tree(again) == build_stack_tree(report)


def test_a_single_process_job_has_no_odd_branch_and_names_its_native_threads() -> None:
    path = FIXTURES / "gpu" / "h200" / "kernel_hang.run.evidence.json"
    report = diagnose(Bundle.model_validate_json(path.read_text()))
    tree = build_stack_tree(report)
    assert tree.ranks == () and not any(n.odd and not n.culprit for n in tree.walk())
    main = group(tree, "process_main")
    assert main.culprit and main.children[0].culprit_line
    native = next(n for n in group(tree, "other").children if n.thread_name == "python3")
    assert native.kind == "no_stack" and native.threads == 15
    text = "\n".join(stack_tree_lines(tree))
    assert text.splitlines()[1].startswith("├── main threads  [1 thread, pid 502]")
    assert "no Python stack: thread python3  [15 threads, pid 502]" in text


# --- many ranks --------------------------------------------------------------------------------


@pytest.mark.parametrize("ranks", [64, 1024])
def test_the_odd_rank_is_a_highlighted_branch_the_rest_one_range(ranks: int) -> None:
    report = synthetic(ranks)
    odd_rank = ranks // 3
    tree = build_stack_tree(report)
    assert report.findings[0].culprit and report.findings[0].culprit.rank == odd_rank
    branches = group(tree, "rank_main").children
    assert [b.ranks for b in branches] == [
        tuple(r for r in range(ranks) if r != odd_rank),
        (odd_rank,),
    ]
    majority, odd = branches
    assert not majority.odd and not majority.culprit
    assert odd.odd and odd.culprit
    assert majority.rank_spans == f"0-{odd_rank - 1},{odd_rank + 1}-{ranks - 1}"
    text = terminal(tree)
    assert f"ranks 0-{odd_rank - 1},{odd_rank + 1}-{ranks - 1}]" in text
    line = next(x for x in text.splitlines() if f"rank {odd_rank}]" in x)
    assert "train.py:44 in train" in line and "◀ odd one out" in line
    culprit_line = next(x for x in text.splitlines() if "◀ culprit" in x)
    assert "data.py:31 in fetch_shard" in culprit_line
    assert f"culprit ({report.findings[0].id})" in culprit_line


def test_at_1024_ranks_every_output_stays_short() -> None:
    tree = build_stack_tree(synthetic(1024))
    assert tree.threads == 1024 + 128
    assert len(terminal(tree).splitlines()) <= 15
    section = render_markdown(synthetic(1024)).split("## Stack tree", 1)[1].split("\n## ", 1)[0]
    assert len(section.splitlines()) <= 20
    assert "```text" in section and "◀ culprit" in section
    page = html(tree)
    assert len(page) < 6000
    odd = re.search(r'<li class="frame odd culprit">(.*?)</li>', page, re.S)
    assert odd is not None and "rank 341]" in odd.group(1)
    assert 'href="#cause"' in odd.group(1)
    assert "fetch_shard" in odd.group(1)


def _spread(report: Report, places: int) -> Report:
    """The synthetic job with its waiting ranks spread over `places` different lines, a
    pin-memory thread in every rank, and the straggler's stack 300 frames deep."""
    processes = []
    for process in report.processes:
        if process.rank is None:
            processes.append(process)
            continue
        main = process.threads[0]
        stack = list(main.stack)
        if process.rank == 1024 // 3:
            recursion = [StackFrame(file=stack[-1].file, line=7, function="walk")] * 300
            stack = stack[:-1] + recursion + stack[-1:]
        else:
            outer = stack[-1].model_copy(update={"line": 100 + process.rank % places})
            stack = [*stack[:-1], outer]
        pin = ThreadReport(
            tid=process.pid + 50_000,
            name="pt_pin_memory",
            stack=[
                StackFrame(file="/usr/lib/python3.11/threading.py", line=331, function="wait"),
                StackFrame(
                    file="/opt/venv/lib/python3.11/site-packages/torch/utils/data/_utils/"
                    "pin_memory.py",
                    line=52,
                    function="_pin_memory_loop",
                ),
                StackFrame(file="/usr/lib/python3.11/threading.py", line=975, function="run"),
            ],
        )
        threads = [main.model_copy(update={"stack": stack}), pin]
        processes.append(process.model_copy(update={"threads": threads}))
    return with_processes(report, processes)


def test_many_branches_and_deep_stacks_are_capped_but_the_culprit_stays() -> None:
    report = _spread(synthetic(1024), places=40)
    tree = build_stack_tree(report)
    ranks = group(tree, "rank_main")
    assert len(ranks.children) == 41
    assert sum(c.odd for c in ranks.children) == 1  # 40 groups of ~25 ranks are no odd ones
    lines = stack_tree_lines(tree)
    text = "\n".join(lines)
    assert len(lines) <= 40
    assert "... 34 more branches  [" in text
    assert "⋯ 298 more frames" in text  # the recursion's middle
    assert "◀ culprit" in text and "rank 341]" in text
    # The pin-memory threads of all ranks are one branch, below the ranks' main threads.
    assert [g.group for g in tree.groups] == ["rank_main", "process_main", "other"]
    (pin,) = group(tree, "other").children
    assert pin.threads == 1024 and pin.rank_spans == "0-1023" and not pin.odd
    assert pin.kind == "library" and pin.libraries == ("threading", "torch")
    # report.html shows every branch, the recursion's middle folded, the culprit linked.
    page = html(tree)
    assert page.count('<li class="frame') == 41  # the launchers' branch is torch's alone
    assert "⋯ 298 more frames</summary>" in page
    assert page.count('href="#cause"') == 1


def test_frames_and_names_are_escaped_in_html() -> None:
    tree = build_stack_tree(synthetic(64))
    page = html(tree)
    assert "sock.recv(1 &lt;&lt; 20)" in page and "1 << 20" not in page


def test_a_report_without_processes_has_no_tree_section() -> None:
    report = with_processes(synthetic(64), [])
    tree = build_stack_tree(report)
    assert tree.groups == () and tree.culprit is None
    assert "## Stack tree" not in render_markdown(report)
    assert "## Stack tree" in render_markdown(synthetic(64))
