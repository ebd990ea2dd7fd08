"""Output for a person at a terminal: colour, width and a pager, decided as git decides them.

Only the CLI uses this. Each decision looks at the real stdout and the
environment, so scripts (stdout a pipe or a file) always get plain bytes:
no colour codes, no pager, the default 80-column layout.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator, Mapping
from typing import IO, Any, Literal

ColorChoice = Literal["auto", "always", "never"]
DEFAULT_PAGER = "less -FRX"
# git runs a command through the shell when it holds any of these (run-command.c).
_SHELL_CHARS = frozenset("|&;<>()$`\\\"' \t\n*?[#~=%")
_NOT_STARTED = (126, 127)  # the shell's "cannot execute" / "not found"


def use_color(
    choice: ColorChoice, stream: IO[Any] | None = None, env: Mapping[str, str] | None = None
) -> bool:
    """Colour for ``always``; for ``auto`` only on a terminal, unless NO_COLOR is set.

    NO_COLOR (no-color.org) turns off colour a tool adds *by default*; an
    explicit ``--color=always`` still wins. ``TERM=dumb`` has no colours (git).
    """
    if choice != "auto":
        return choice == "always"
    env = os.environ if env is None else env
    if env.get("NO_COLOR") or env.get("TERM") == "dumb":
        return False
    return _isatty(stream or sys.stdout)


def columns(stream: IO[Any] | None = None) -> int:
    """The width git lays ``--stat`` out for: ``COLUMNS``, else the terminal's, else 80."""
    env = os.environ.get("COLUMNS", "")
    if env.isdigit() and int(env) > 0:
        return int(env)
    stream = stream or sys.stdout
    if _isatty(stream):
        with contextlib.suppress(OSError, ValueError):
            width = os.get_terminal_size(stream.fileno()).columns
            if width > 0:
                return width
    return 80


def pager_command(env: Mapping[str, str] | None = None) -> str | None:
    """``SNAPSHOTTER_PAGER``, else ``PAGER``, else ``less -FRX``; None for "" or ``cat``."""
    env = os.environ if env is None else env
    command = env.get("SNAPSHOTTER_PAGER")
    if command is None:
        command = env.get("PAGER")
    if command is None:
        command = DEFAULT_PAGER
    command = command.strip()
    return None if command in ("", "cat") else command


def emit(data: bytes, *, page: bool = True, stream: IO[bytes] | None = None) -> None:
    """Write ``data`` to stdout, through the pager when stdout is a terminal.

    A pager that cannot start (not installed, not executable) leaves the
    output to be written as it is, so a bad ``PAGER`` never hides a diff.
    """
    if stream is None:
        sys.stdout.flush()  # anything printed as text goes first
        stream = getattr(sys.stdout, "buffer", None)
        if stream is None:  # a text-only stdout (embedded): no pager either
            sys.stdout.write(data.decode(errors="replace"))
            return
    out = stream
    command = pager_command() if page and _isatty(out) else None
    if command is None or not _through_pager(command, data, out):
        _write(out, data)


def _through_pager(command: str, data: bytes, out: IO[bytes]) -> bool:
    """Run the pager on ``data``; False when it never started (nothing was shown)."""
    argv = ["sh", "-c", command] if _SHELL_CHARS & set(command) else [command]
    env = {**os.environ}
    env.setdefault("LESS", "FRX")  # as git sets them: colours pass, short output just prints
    env.setdefault("LV", "-c")
    out.flush()
    import subprocess  # (only where a pager runs: ~5 ms of every command's start-up)

    with _ignoring_interrupts():  # Ctrl-C belongs to the pager while it runs (git does this)
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=out.fileno(), env=env)
        except OSError:
            return False
        assert proc.stdin is not None
        with contextlib.suppress(BrokenPipeError):  # the reader quit early: that is fine
            proc.stdin.write(data)
        with contextlib.suppress(BrokenPipeError):
            proc.stdin.close()
        return proc.wait() not in _NOT_STARTED


@contextlib.contextmanager
def _ignoring_interrupts() -> Iterator[None]:
    import signal

    try:
        old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)


def _write(out: IO[bytes], data: bytes) -> None:
    """``data`` out; a reader gone (`| head`) raises BrokenPipeError, which cli.main
    turns into git's quiet exit 141."""
    out.write(data)
    out.flush()


def _isatty(stream: IO[Any]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
