"""Syscall names, as the kernel state probes read them."""

from __future__ import annotations

from hangdoctor.probes.syscalls import named_syscall


def test_a_resumed_syscall_is_named_for_the_call_it_resumes():
    assert named_syscall(219, "poll_schedule_timeout.constprop.0", "x86_64") == "poll"
    assert named_syscall(219, "futex_wait_queue", "x86_64") == "futex"
    assert named_syscall(219, "hrtimer_nanosleep", "x86_64") == "clock_nanosleep"
    assert named_syscall(219, "some_other_wait", "x86_64") == "restart_syscall"
    assert named_syscall(0, "pipe_read", "x86_64") == "read"
