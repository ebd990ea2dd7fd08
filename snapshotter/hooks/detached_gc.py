"""session_end's gc, in a process of its own that outlives the hook (issue 11.4, 13.13).

session_end must return within the runtime's budget (Claude Code kills a
SessionEnd hook after 1.5 s), so it never runs gc itself: it starts
``snapshotter gc --detached`` (engine/maintenance.py ``run_detached`` is that
process's body) and does not wait for it. The child has no stdio and a
session of its own; its failures go to the data directory's hook.log.
"""

from __future__ import annotations

import sys
from pathlib import Path

from snapshotter.hooks.detach import detach

TYPE_CHECKING = False
if TYPE_CHECKING:
    from snapshotter.engine.maintenance import Policy


def start(data_dir: Path, worktree: Path, *, budget_s: float, policy: Policy) -> None:
    """Start a gc of ``worktree``'s store bounded by ``budget_s``, applying ``policy``."""
    detach(command(data_dir, worktree, budget_s=budget_s, policy=policy))


def command(data_dir: Path, worktree: Path, *, budget_s: float, policy: Policy) -> list[str]:
    """The ``snapshotter gc --detached`` command line, run by this very interpreter."""
    return [
        sys.executable,
        "-P",  # never a ``snapshotter/`` of the directory it starts in
        "-m",
        "snapshotter",
        "--data-dir",
        str(data_dir),
        "gc",
        "-C",
        str(worktree),
        "--detached",
        "--budget-s",
        repr(budget_s),
        *_policy_args(policy),
    ]


def _policy_args(policy: Policy) -> list[str]:
    """The policy as ``snapshotter gc`` options (retention args always set all three)."""
    args = []
    if policy.max_age_days is not None:
        args += ["--max-age-days", repr(policy.max_age_days)]
    if policy.max_checkpoints is not None:
        args += ["--max-checkpoints", str(policy.max_checkpoints)]
    if policy.max_store_bytes is not None:
        args += ["--max-size", str(policy.max_store_bytes)]
    return args
