"""Undo and redo with no hook server running (issue 24.2): ``undo10_cold``, ``redo10_cold``.

A user who runs ``snapshotter undo`` after the agent exited (its server idled
out) gets a process of its own, with no watcher that knows what changed. Such
an undo must cost the paths it touches plus start-up, never a walk of the
tree: these figures are that undo and redo of the round's 10-file turn, beside
the reference revert and redo (run.py's ``ref_revert10``, ``ref_redo10``; its
FIGURES and SUMMARY name them), and ``list_cold``, a ``snapshotter list`` in a
process of its own: the start-up and state read every command pays, so what
the undo adds to it is its own work.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from benchmarks import procs

if TYPE_CHECKING:
    from benchmarks.run import Bench


def measure(
    bench: Bench,
    data: Path,
    session: str,
    states: dict[str, dict[str, bytes]],
    back: Callable[[dict[str, bytes], str], None],
) -> None:
    """Undo and redo the session's turn again, each in a process of its own.

    Call it once the turn is redone (its files as ``states["after"]``); it
    leaves them so. ``back`` checks the files against one of ``states``.
    """
    stuck = procs.stop_servers(bench.runtime)
    bench.result.check(not stuck, f"hook servers {stuck} did not stop on SIGTERM")
    listed = bench.cli(data, "list", "--session", session)  # start-up and state, no walk
    bench.result.add("list_cold", listed.ms, listed.rss_kb)
    undo = bench.cli(data, "undo", "--session", session, "--json")
    bench.result.add("undo10_cold", undo.ms, undo.rss_kb)
    back(states["original"], "undo, no server")
    redo = bench.cli(data, "redo", "--session", session, "--json")
    bench.result.add("redo10_cold", redo.ms, redo.rss_kb)
    back(states["after"], "redo, no server")
