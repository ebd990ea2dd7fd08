"""Start a process that outlives the hook starting it: the hook server, session_end's gc.

It has no stdio, a session of its own (a runtime that kills the hook's process
group does not reach it), and ``/`` as its working directory: ``-m`` puts the
working directory first on the module path, and a worktree holding a
``snapshotter/`` of its own (this very project's source, or a hostile clone)
must not be what it imports (its command line also has ``-P``).
"""

from __future__ import annotations

import subprocess


def detach(argv: list[str], pass_fds: tuple[int, ...] = ()) -> None:
    """Start ``argv`` with ``pass_fds`` its only inherited descriptors; do not wait."""
    subprocess.Popen(
        argv,
        pass_fds=pass_fds,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        close_fds=True,
        cwd="/",
    )
