"""The unit tier: pure logic, in process, no process started.

Every test under tests/unit runs in the pytest process itself: starting a
process (subprocess, fork, exec, spawn, os.system) fails the test at once, so
a slow end-to-end test cannot hide here. Those live in the functional tier
(the other files under tests/), which drives real ``snapshotter`` processes.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from types import FrameType
from typing import NoReturn

import pytest

_STARTERS = (
    (subprocess, "Popen"),
    (os, "fork"),
    (os, "forkpty"),
    (os, "system"),
    (os, "popen"),
    (os, "posix_spawn"),
    (os, "posix_spawnp"),
    (os, "execv"),
    (os, "execve"),
    (os, "execvp"),
    (os, "execvpe"),
)


def _refuse(*_args: object, **_kwargs: object) -> NoReturn:
    raise AssertionError("a unit test started a process: move it to the functional tier")


@pytest.fixture(autouse=True)
def no_processes(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for module, name in _STARTERS:
        if hasattr(module, name):
            monkeypatch.setattr(module, name, _refuse)
    yield


@pytest.fixture
def no_hang() -> Iterator[None]:
    """A call that blocks (on a FIFO, say) fails the test after 5 s instead of hanging the run."""

    def hung(_signum: int, _frame: FrameType | None) -> NoReturn:
        raise AssertionError("blocked: waited on what should never block")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(5)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)
