"""Cross-rank rules for distributed jobs: group the ranks by where they are, and name the odd
one out and why.

HD310 distributed.straggler, HD311 distributed.collective_mismatch,
HD312 distributed.uneven_inputs, HD313 distributed.rank_exited, HD314 distributed.rendezvous.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from hangdoctor.analysis.advice import PROCESS_GROUP_TIMEOUT, wait_fixes
from hangdoctor.analysis.frames import Origin, origin, short_location
from hangdoctor.analysis.frameworks import dataloader_consumer
from hangdoctor.analysis.job import JobView
from hangdoctor.analysis.ranks import RankState, RankView, rank_list, rank_view
from hangdoctor.analysis.waits import WaitKind, describe_wait
from hangdoctor.evidence import build as b
from hangdoctor.evidence.model import Bundle, JobRecord, ProgressStatus
from hangdoctor.rules.base import Example, Rule
from hangdoctor.rules.finding import Culprit, Finding, Severity
from hangdoctor.rules.helpers import at, culprit

_C10D = f"{b.SITE}/torch/distributed/distributed_c10d.py"


def _collective_frames(call: str, line: int, code: str, loops=(), guards=()):
    return (b.frame(_C10D, 2500, call), b.frame("train.py", line, "train", code=code,
                                                 loops=loops, guards=guards))


def _rank(rank: int, *frames, world: int = 4, **kernel):
    pid = 100 + rank
    return b.process(pid, b.thread(pid, *frames, name="MainThread", **kernel), ppid=99,
                     env={"RANK": str(rank), "WORLD_SIZE": str(world), "LOCAL_RANK": str(rank)})


def _job(*processes, progress: tuple[ProgressStatus, ...] = ()) -> Bundle:
    launcher = b.process(99, b.thread(99, b.frame(f"{b.SITE}/torch/distributed/run.py", 900,
                                                  "main"), syscall="clock_nanosleep"),
                         ppid=1, cmdline=("torchrun", "train.py"))
    bundle = b.bundle(launcher, *processes)
    if progress:
        bundle = bundle.model_copy(update={"job": JobRecord(started_at=0.0, progress=progress)})
    return bundle


def _status(rank: int, steps: int, collectives: int, in_collective: str | None = None):
    return ProgressStatus(pid=100 + rank, rank=rank, updated_at=10.0, steps=steps,
                          collectives=collectives, in_collective=in_collective,
                          in_collective_seq=collectives if in_collective else None)


def _straggler_in_io():
    waiting = [_rank(r, *_collective_frames("all_reduce", 50, "dist.all_reduce(loss)"),
                     syscall="futex") for r in (0, 2, 3)]
    stuck = _rank(1, b.frame(f"{b.STDLIB}/socket.py", 706, "SocketIO.readinto"),
                  b.frame("train.py", 44, "train", code="blob = fetch(url)"),
                  syscall="recvfrom", args=(7,))
    return _job(*waiting, stuck)


def _all_in_the_same_collective():
    return _job(*[_rank(r, *_collective_frames("all_reduce", 50, "dist.all_reduce(loss)"),
                        syscall="futex") for r in range(4)])


def _barrier_only_on_rank_0():
    others = [_rank(r, *_collective_frames("all_reduce", 50, "dist.all_reduce(loss)",
                                           loops=("for batch in loader",)), syscall="futex")
              for r in (1, 2, 3)]
    zero = _rank(0, *_collective_frames("barrier", 47, "dist.barrier()",
                                        loops=("for batch in loader",),
                                        guards=("rank == 0",)), syscall="futex")
    progress = tuple(_status(r, 7, 8, "barrier" if r == 0 else "all_reduce") for r in range(4))
    return _job(zero, *others, progress=progress)


def _rank_ran_out_of_data():
    others = [_rank(r, *_collective_frames("all_reduce", 50, "dist.all_reduce(loss)",
                                           loops=("for batch in loader",)), syscall="futex")
              for r in (0, 1, 2)]
    done = _rank(3, *_collective_frames("barrier", 60, "dist.barrier()"), syscall="futex")
    progress = (*(_status(r, 100, 101, "all_reduce") for r in (0, 1, 2)),
                _status(3, 99, 100, "barrier"))
    return _job(*others, done, progress=progress)


def _helper_all_reduce(rank: int, loop: str, call_code: str, world: int = 2):
    """A rank in the all_reduce of a helper called from the training loop."""
    return _rank(rank, b.frame(_C10D, 2500, "all_reduce"),
                 b.frame("train.py", 12, "average_gradients", code="dist.all_reduce(p.grad)",
                         loops=("for p in model.parameters()",)),
                 b.frame("train.py", 30, "train", code=call_code, loops=(loop,)),
                 syscall="futex", world=world)


def _guarded_barrier_beside_a_helper():
    zero = _rank(0, b.frame(_C10D, 2600, "barrier"),
                 b.frame("train.py", 35, "train", code="dist.barrier()",
                         loops=("for step in range(steps)",), guards=("rank == 0",)),
                 syscall="futex", world=2)
    return _job(zero, _helper_all_reduce(1, "for step in range(steps)",
                                         "average_gradients(model)"))


def _epoch_helper_ran_out_of_data():
    done = _rank(1, b.frame(_C10D, 2600, "barrier"),
                 b.frame("train.py", 31, "train", code="dist.barrier()",
                         loops=("for epoch in range(epochs)",)),
                 syscall="futex", world=2)
    busy = _rank(0, b.frame(_C10D, 2500, "all_reduce"),
                 b.frame("train.py", 12, "train_epoch", code="dist.all_reduce(loss)",
                         loops=("for batch in loader",)),
                 b.frame("train.py", 30, "train", code="train_epoch(model, loader)",
                         loops=("for epoch in range(epochs)",)),
                 syscall="futex", world=2)
    return _job(busy, done)


def _rank_gone():
    waiting = [_rank(r, *_collective_frames("all_reduce", 50, "dist.all_reduce(loss)"),
                     syscall="futex") for r in (0, 1, 3)]
    progress = (*(_status(r, 12, 13, "all_reduce") for r in (0, 1, 3)), _status(2, 12, 12))
    return _job(*waiting, progress=progress)


def _never_joined():
    init = f"{b.SITE}/torch/distributed/distributed_c10d.py"
    waiting = [_rank(r, b.frame(init, 1700, "init_process_group"),
                     b.frame("train.py", 12, "main", code="dist.init_process_group('gloo')"),
                     syscall="futex") for r in (0, 1, 3)]
    return _job(*waiting)


def _majority_waiting(view: RankView) -> tuple[list[RankState], tuple] | None:
    waiting = [s for s in view.alive if s.in_collective]
    if not waiting:
        return None
    counts = Counter((s.call, s.seq) for s in waiting)
    (call, seq), _ = counts.most_common(1)[0]
    return [s for s in waiting if (s.call, s.seq) == (call, seq)], (call, seq)


def _describe_group(states: list[RankState]) -> str:
    first = states[0]
    seq = f" #{first.seq}" if first.seq is not None else ""
    return f"{rank_list(states)} {_wait(states)} in {first.call}{seq} at {at(first.site)}"


def _wait(states: list[RankState]) -> str:
    return "waits" if len(states) == 1 else "wait"


def _rank_culprit(job: JobView, state: RankState) -> Culprit:
    if state.process is not None:
        return culprit(job, state.process, state.thread, state.site)
    return Culprit(pid=state.pid, rank=state.rank, role="rank")


class Straggler(Rule):
    """Peers wait inside a collective; one rank is not in any: it is stuck (or slow) elsewhere."""

    id = "HD310"
    category = "distributed.straggler"
    summary = "one rank is stuck outside any collective while its peers wait in one"
    specificity = 75
    fires_on = (Example("a rank blocked on a network read", _straggler_in_io),)
    quiet_on = (Example("every rank in the same collective", _all_in_the_same_collective),
                Example("ranks still joining", _never_joined))

    def check(self, job: JobView) -> Iterable[Finding]:
        view = rank_view(job)
        majority = _majority_waiting(view)
        if majority is None:
            return
        waiting, _ = majority
        outside = [s for s in view.alive if not s.in_collective and not s.in_start_up]
        if not outside or len(outside) > len(waiting):
            return
        for state in outside:
            if state.process is None or state.thread is None:
                continue
            wait = describe_wait(job, state.process, state.thread)
            where = short_location(state.site) if state.site else "its current line"
            frames = state.thread.python.frames if state.thread.python else ()
            doing = ("waiting for its next batch from the DataLoader"
                     if dataloader_consumer(frames) else wait.summary)
            evidence = [
                _describe_group(waiting),
                f"rank {state.rank} is not in any collective: it is {doing} at {at(state.site)}",
            ]
            if state.last_recorded is not None and waiting[0].seq is not None:
                evidence.append(
                    f"Flight Recorder: rank {state.rank}'s last collective is "
                    f"#{state.last_recorded.seq} ({state.last_recorded.op}); the others are "
                    f"blocked in #{waiting[0].seq}")
            elif state.status is not None and waiting[0].seq is not None:
                evidence.append(
                    f"rank {state.rank} has started {state.status.collectives} collectives; the "
                    f"others are blocked in #{waiting[0].seq}")
            slow = wait.kind is WaitKind.RUNNING
            yield Finding(
                id=self.id, category=self.category, severity=Severity.ERROR,
                confidence=0.7 if slow else 0.85,
                title=f"Rank {state.rank} is {'busy' if slow else 'stuck'} outside any "
                      f"collective at {where} while {rank_list(waiting)} {_wait(waiting)} in "
                      f"{waiting[0].call}",
                explanation=(
                    "Collectives complete only when every rank joins. The other ranks are "
                    f"waiting for rank {state.rank}, which is "
                    f"{'still computing' if slow else 'blocked'} elsewhere: it is the one to "
                    "look at; the waiting ranks are its victims."),
                culprit=_rank_culprit(job, state),
                related=tuple(_rank_culprit(job, s) for s in waiting[:4]),
                evidence=tuple(evidence),
                fixes=(*wait_fixes(wait, where), PROCESS_GROUP_TIMEOUT),
            )


def _odd_group(groups: list[list[RankState]]) -> list[RankState]:
    """The group to blame: the smallest; among equals, the one whose call sits under an `if`."""
    candidates = sorted(groups[1:] + groups[:1], key=len)
    smallest = [g for g in candidates if len(g) == len(candidates[0])]
    guarded = [g for g in smallest if g[0].site is not None and g[0].site.guards]
    return (guarded or smallest)[0]


def _split(view: RankView):
    waiting = [s for s in view.alive if s.in_collective]
    if len(waiting) < 2:
        return None
    groups = view.groups(waiting)
    if len(groups) < 2:
        return None
    odd = _odd_group(groups)
    rest = [s for g in groups if g is not odd for s in g]
    return odd, rest


def _user_frames(thread) -> list:
    return [f for f in thread.python.frames if origin(f) is Origin.USER] if (
        thread is not None and thread.python is not None) else []


def _left_loop(odd: list[RankState], rest: list[RankState]) -> str | None:
    """The header of the loop the others still run their collective in and the odd ranks have
    left, or None when they have not left it.

    Step counts cannot tell: ranks blocked at different points of one iteration differ by a
    step too. The code can: the others' collective sits inside a loop, and the odd rank's stack
    is outside that loop (or out of that function altogether). The loops are compared in the
    innermost function of the user's code that both stacks run in. When both are inside the
    same loops there, the others are deeper, in a function called from that loop: the odd rank
    has returned from it (an epoch helper whose data ran out), unless the odd rank's collective
    runs under an `if` of its own that the others did not take (a barrier only rank 0 calls,
    beside a gradient-averaging helper that all_reduces in a loop over the parameters)."""
    looping = rest[0].site
    thread = odd[0].thread
    if looping is None or not looping.loops or thread is None or thread.python is None:
        return None
    odd_frames = _user_frames(thread)
    rest_frames = _user_frames(rest[0].thread) or [looping]
    for index, frame in enumerate(rest_frames):  # innermost first
        for depth, mine in enumerate(odd_frames):
            if mine.file != frame.file or mine.function != frame.function:
                continue
            if len(mine.loops) != len(frame.loops) or index == 0:
                shorter = len(mine.loops) < len(frame.loops)
                return frame.loops[len(mine.loops)] if shorter else None
            own_guards = {g for f in odd_frames[:depth] for g in f.guards}
            own_guards |= set(mine.guards) - set(frame.guards)
            if own_guards:
                return None
            deeper = [f for f in rest_frames[:index] if f.loops]
            return deeper[-1].loops[0] if deeper else looping.loops[-1]
    return looping.loops[-1]


def _is_uneven(odd: list[RankState], rest: list[RankState]) -> bool:
    """Whether the odd ranks have left the loop the others still run their collective in."""
    return _left_loop(odd, rest) is not None


class CollectiveMismatch(Rule):
    """Ranks wait in different collectives, or in one that only some of them call."""

    id = "HD311"
    category = "distributed.collective_mismatch"
    summary = "ranks are in different collectives"
    specificity = 85
    fires_on = (Example("a barrier only rank 0 calls", _barrier_only_on_rank_0),
                Example("a barrier only rank 0 calls, beside a helper's all_reduce",
                        _guarded_barrier_beside_a_helper))
    quiet_on = (Example("every rank in the same collective", _all_in_the_same_collective),
                Example("a rank that ran out of data", _rank_ran_out_of_data),
                Example("a rank that returned from its epoch helper first",
                        _epoch_helper_ran_out_of_data))

    def check(self, job: JobView) -> Iterable[Finding]:
        split = _split(rank_view(job))
        if split is None or _is_uneven(*split):
            return
        odd, rest = split
        state = odd[0]
        site = state.site
        where = short_location(site) if site else "its call site"
        evidence = [_describe_group(odd), _describe_group(rest)]
        seqs = {s.seq for s in odd + rest if s.seq is not None}
        if len(seqs) == 1:
            source = "Flight Recorder: " if rank_view(job).flight_recorder else ""
            evidence.append(f"{source}all of them are at collective #{seqs.pop()}: the same "
                            "step of the sequence, but not the same operation")
        guard = site.guards[-1] if site is not None and site.guards else None
        if guard:
            evidence.append(f"the call at {where} runs only where `{guard}` holds")
            first_fix = (f"The {state.call} at {where} runs only where `{guard}` holds: move it "
                         "out of that `if` block, so that every rank calls it.")
        else:
            first_fix = (f"Every rank must call the same collectives in the same order: "
                         f"{rank_list(odd)} call {state.call} at {where} while "
                         f"{rank_list(rest)} call {rest[0].call} at "
                         f"{short_location(rest[0].site) if rest[0].site else 'another place'}.")
        yield Finding(
            id=self.id, category=self.category, severity=Severity.ERROR, confidence=0.9,
            title=f"Collective mismatch: {rank_list(odd)} in {state.call} at {where}, "
                  f"{rank_list(rest)} in {rest[0].call}",
            explanation=("Collectives pair up by order: when ranks call different ones (or one "
                         "only some ranks call), each waits for a partner that never comes."),
            culprit=_rank_culprit(job, state),
            related=tuple(_rank_culprit(job, s) for s in rest[:4]),
            evidence=tuple(evidence),
            fixes=(first_fix, "Check with TORCH_DISTRIBUTED_DEBUG=DETAIL on a small run "
                   "(it checks that collectives match; it is slow, so not for production).",
                   PROCESS_GROUP_TIMEOUT),
        )


class UnevenInputs(Rule):
    """A rank ran out of data first: it finished its loop and waits in a later collective while
    the others are still in the loop."""

    id = "HD312"
    category = "distributed.uneven_inputs"
    summary = "ranks ran different numbers of steps"
    specificity = 88
    fires_on = (Example("a rank that ran out of data", _rank_ran_out_of_data),
                Example("a rank that returned from its epoch helper first",
                        _epoch_helper_ran_out_of_data))
    quiet_on = (Example("a barrier only rank 0 calls", _barrier_only_on_rank_0),
                Example("a barrier only rank 0 calls, beside a helper's all_reduce",
                        _guarded_barrier_beside_a_helper))

    def check(self, job: JobView) -> Iterable[Finding]:
        split = _split(rank_view(job))
        if split is None or not _is_uneven(*split):
            return
        odd, rest = split
        state = odd[0]
        where = short_location(state.site) if state.site else "its call site"
        loop = _left_loop(odd, rest)
        evidence = [_describe_group(odd), _describe_group(rest)]
        if loop:
            evidence.append(f"{rank_list(rest)} {'is' if len(rest) == 1 else 'are'} still "
                            f"inside `{loop}`; {rank_list(odd)} already left it")
        if state.steps is not None and rest[0].steps is not None:
            evidence.append(f"{rank_list(odd)} took {state.steps} steps, "
                            f"{rank_list(rest)} {rest[0].steps}")
        yield Finding(
            id=self.id, category=self.category, severity=Severity.ERROR, confidence=0.9,
            title=f"Uneven inputs: {rank_list(odd)} finished early and {_wait(odd)} at "
                  f"{where}; {rank_list(rest)} {'is' if len(rest) == 1 else 'are'} still "
                  "training",
            explanation=("Ranks got different numbers of batches. The ones that finished "
                         "first wait in a collective after the loop, the others in the loop's "
                         "collective: they can never meet."),
            culprit=_rank_culprit(job, state),
            related=tuple(_rank_culprit(job, s) for s in rest[:4]),
            evidence=tuple(evidence),
            fixes=("Give every rank the same number of batches: "
                   "DistributedSampler(..., drop_last=True) or DataLoader(drop_last=True).",
                   "Or wrap the training loop in torch.distributed.algorithms.Join (DDP "
                   "supports it) so ranks that finish early shadow the others' collectives.",
                   "Or all_reduce a 'has more data' flag every step and stop together.",
                   PROCESS_GROUP_TIMEOUT),
        )


class RankExited(Rule):
    """A rank is gone while its peers wait for it."""

    id = "HD313"
    category = "distributed.rank_exited"
    summary = "a rank exited while the others wait for it"
    specificity = 90
    fires_on = (Example("a rank that is gone", _rank_gone),)
    quiet_on = (Example("every rank in the same collective", _all_in_the_same_collective),)

    def check(self, job: JobView) -> Iterable[Finding]:
        view = rank_view(job)
        if not view.missing or not any(s.in_collective for s in view.alive):
            return
        waiting = [s for s in view.alive if s.in_collective]
        gone = [view.ranks[r] for r in view.missing if r in view.ranks]
        first = gone[0] if gone else None
        names = ", ".join(map(str, view.missing[:8]))
        evidence = [f"WORLD_SIZE is {view.world_size}, but rank(s) {names} have no live "
                    "process", _describe_group(waiting)]
        if first is not None and first.status is not None:
            evidence.append(f"rank {first.rank} (pid {first.status.pid}) had taken "
                            f"{first.steps} steps and started {first.status.collectives} "
                            "collectives when it was last seen")
        yield Finding(
            id=self.id, category=self.category, severity=Severity.ERROR, confidence=0.9,
            title=f"Rank {names} exited; {rank_list(waiting)} {_wait(waiting)} for it",
            explanation=("A rank's process ended while the others wait in a collective that "
                         "needs it. A rank that crashed usually ends the whole job; one that "
                         "returned early (a `return` or `break` some ranks take) leaves the "
                         "others waiting."),
            culprit=Culprit(pid=first.pid if first else None, rank=view.missing[0], role="rank"),
            related=tuple(_rank_culprit(job, s) for s in waiting[:4]),
            evidence=tuple(evidence),
            fixes=(f"Read rank {view.missing[0]}'s own output (output.log) for its error or "
                   "its exit path: every rank must run the same collectives to the end.",
                   PROCESS_GROUP_TIMEOUT),
        )


class Rendezvous(Rule):
    """The job waits at start-up for peers that never join."""

    id = "HD314"
    category = "distributed.rendezvous"
    summary = "ranks wait at start-up for peers that never join"
    specificity = 85
    names_culprit = False  # a rank that never started has no process to point at
    fires_on = (Example("rank 2 never joined", _never_joined),)
    quiet_on = (Example("every rank in the same collective", _all_in_the_same_collective),)

    def check(self, job: JobView) -> Iterable[Finding]:
        view = rank_view(job)
        joining = [s for s in view.alive if s.in_start_up]
        if not joining or any((s.steps or 0) > 0 for s in view.ranks.values()):
            return
        late = [s for s in view.alive if not s.in_start_up]
        missing = [r for r in view.missing if r not in {s.rank for s in late}]
        env = joining[0].process.environ if joining[0].process else {}
        address = f"{env.get('MASTER_ADDR', '?')}:{env.get('MASTER_PORT', '?')}"
        evidence = [f"{rank_list(joining)} {_wait(joining)} in {joining[0].call} at "
                    f"{at(joining[0].site)}",
                    f"MASTER_ADDR:MASTER_PORT is {address}, WORLD_SIZE {view.world_size}"]
        if late:
            state = late[0]
            wait = describe_wait(job, state.process, state.thread) if state.thread else None
            evidence.append(f"rank {state.rank} has not reached init_process_group: it is "
                            f"{wait.summary if wait else 'elsewhere'} at {at(state.site)}")
            culprit_ = _rank_culprit(job, state)
            title = f"Rendezvous: rank {state.rank} never reached init_process_group"
        elif missing:
            evidence.append(f"rank(s) {', '.join(map(str, missing[:8]))} have no process here")
            culprit_ = Culprit(rank=missing[0], role="rank")
            title = f"Rendezvous: rank(s) {', '.join(map(str, missing[:8]))} never joined"
        else:
            culprit_ = _rank_culprit(job, joining[0])
            title = f"Rendezvous: every rank waits at start-up for the store at {address}"
        yield Finding(
            id=self.id, category=self.category, severity=Severity.ERROR, confidence=0.85,
            title=title,
            explanation=("init_process_group waits until WORLD_SIZE ranks have joined through "
                         "the store at MASTER_ADDR:MASTER_PORT; some never did."),
            culprit=culprit_,
            evidence=tuple(evidence),
            fixes=("Check that every node runs the same command with the same WORLD_SIZE / "
                   "--nnodes and --nproc_per_node, and that all of them started.",
                   f"Check that {address} is reachable from every node (firewall, the right "
                   "interface: NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME).",
                   "Pass init_process_group(timeout=...) so a missing peer fails fast."),
        )
