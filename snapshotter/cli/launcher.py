"""Console-script entry: ``snapshotter hook`` skips click and everything else.

The hook runs once per agent event, so its start-up is paid thousands of
times a session; every other command goes through the click CLI.
"""

from __future__ import annotations

import os
import sys

from snapshotter.cli.argv import data_dir_option
from snapshotter.hooks import client


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    parsed = _hook_args(args)
    if parsed is None:
        from snapshotter.cli import served

        code = served.run(args)
        if code is not None:
            if argv is None:  # the console script: this process is ours to end
                client.leave(code)
            sys.exit(code)
        from snapshotter.cli.main import main as cli_main

        cli_main(args)
        return
    data_dir_opt, builtin_args, unknown = parsed
    from snapshotter.hooks.command import handed_over, run

    if unknown:
        # Exit 2 would make docker-agent block the tool call: a typo in the
        # hook's options must never stop the agent, so it is reported and ignored.
        print(f"snapshotter hook: ignoring unknown options {unknown}", file=sys.stderr)
    # Whatever the store gets is private (SPEC §2; libgit2 makes objects 0444 and
    # directories 0755 under the usual umask). A hook process never writes to the worktree.
    os.umask(0o077)
    # With stdin closed (``hook <&-``) Python sets sys.stdin to None: no event, still exit 0.
    code = run(getattr(sys.stdin, "buffer", None), data_dir_opt, builtin_args)
    if argv is None and handed_over():  # the server handled it: nothing here to shut down
        client.leave(code)
    sys.exit(code)


def _hook_args(args: list[str]) -> tuple[str | None, list[str], list[str]] | None:
    """``[--data-dir DIR] hook [--arg K=V ...]`` → (dir, args, unknown options).

    None for any other command, and for ``hook --help``: click handles those.
    """
    data_dir_opt, rest = data_dir_option(args)
    if rest[:1] != ["hook"]:
        return None
    builtin_args: list[str] = []
    unknown: list[str] = []
    tail = rest[1:]
    if "--help" in tail or "-h" in tail:
        return None
    while tail:
        if tail[0] == "--arg" and len(tail) >= 2:
            builtin_args.append(tail[1])
            tail = tail[2:]
        elif tail[0].startswith("--arg="):
            builtin_args.append(tail[0].split("=", 1)[1])
            tail = tail[1:]
        else:
            unknown.append(tail[0])
            tail = tail[1:]
    return data_dir_opt, builtin_args, unknown
