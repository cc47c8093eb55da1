"""Lock context from source: which locks a line holds and which it acquires."""

from __future__ import annotations

import ast
import textwrap

from hangdoctor.probes.sources import control_context, lock_context

CODE = textwrap.dedent("""
    def transfer(a, b):
        with a:
            log("got a")
            with b:
                move()

    def manual(lock, other):
        lock.acquire()
        try:
            other.acquire()
            work()
        finally:
            lock.release()
        after()

    def two_at_once(x, y):
        with x, y:
            pass

    class Box:
        def put(self):
            with self.lock:
                self.evict()
""")
TREE = ast.parse(CODE)


def line_of(text: str) -> int:
    return next(i for i, line in enumerate(CODE.splitlines(), 1) if text in line)


def expressions(held) -> list[str]:
    return [h.expression for h in held]


def test_nested_with_blocks():
    held, acquiring = lock_context(TREE, line_of("with b:"))
    assert expressions(held) == ["a"]
    assert acquiring == ("b",)
    held, acquiring = lock_context(TREE, line_of("move()"))
    assert sorted(expressions(held)) == ["a", "b"]
    assert acquiring == ()


def test_explicit_acquire_and_release():
    held, acquiring = lock_context(TREE, line_of("other.acquire()"))
    assert expressions(held) == ["lock"] and held[0].how == "acquire"
    assert acquiring == ("other",)
    held, _ = lock_context(TREE, line_of("work()"))
    assert sorted(expressions(held)) == ["lock", "other"]
    held, _ = lock_context(TREE, line_of("after()"))
    assert expressions(held) == ["other"]


def test_scope_is_the_innermost_function():
    held, _ = lock_context(TREE, line_of("self.evict()"))
    assert expressions(held) == ["self.lock"]
    held, acquiring = lock_context(TREE, line_of('log("got a")'))
    assert expressions(held) == ["a"] and acquiring == ()


def test_several_items_in_one_with():
    _, acquiring = lock_context(TREE, line_of("with x, y:"))
    assert acquiring == ("x", "y")


RANKED = textwrap.dedent("""
    def train(rank, loader):
        for step, batch in enumerate(loader):
            loss = model(batch)
            if rank == 0:
                dist.barrier()
            else:
                dist.all_reduce(loss)
        dist.barrier()
""")


def test_guards_and_loops_around_a_collective():
    tree = ast.parse(RANKED)
    line = next(i for i, text in enumerate(RANKED.splitlines(), 1) if "dist.barrier()" in text)
    guards, loops = control_context(tree, line)
    assert guards == ("rank == 0",)
    assert loops == ("for (step, batch) in enumerate(loader)",)
    line = next(i for i, text in enumerate(RANKED.splitlines(), 1) if "all_reduce" in text)
    assert control_context(tree, line)[0] == ("not (rank == 0)",)
    last = len(RANKED.splitlines())
    assert control_context(tree, last) == ((), ())


QUALIFIED = """
class Event:
    def wait(self, timeout=None):
        return True  # line 4


def main():
    def worker():
        return 1  # line 9

    return worker
"""


def test_a_bare_function_name_gets_its_qualified_name(tmp_path):
    """faulthandler names frames `wait`; py-spy, and the rules, `Event.wait`."""
    from hangdoctor.probes.sources import qualified_name

    path = tmp_path / "prims.py"
    path.write_text(QUALIFIED)
    assert qualified_name(str(path), 4, "wait") == "Event.wait"
    assert qualified_name(str(path), 9, "worker") == "main.<locals>.worker"
    assert qualified_name(str(path), 4, "Event.wait") == "Event.wait"  # py-spy's, as it is
    assert qualified_name(str(path), 4, "other") == "other"  # not that line's function
    assert qualified_name(str(tmp_path / "gone.py"), 4, "wait") == "wait"


FIT_CALL = """\
history = model.fit(train_ds, epochs=3,
                    validation_data=val_ds,
                    validation_steps=val_steps)
other(validation_steps=1)
"""


def test_the_line_that_passes_an_argument_of_a_call_over_several_lines(tmp_path):
    from hangdoctor.probes.sources import argument_line

    path = tmp_path / "train.py"
    path.write_text(FIT_CALL)
    assert argument_line(str(path), 1, "validation_steps") == 3
    assert argument_line(str(path), 1, "steps") is None  # not passed
    assert argument_line(str(path), 2, "validation_steps") is None  # no call starts there
    assert argument_line(str(path), 4, "validation_steps") == 4
    assert argument_line(str(tmp_path / "gone.py"), 1, "validation_steps") is None
