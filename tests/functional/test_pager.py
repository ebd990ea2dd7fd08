"""``snapshotter diff`` on a real terminal: pager, colour and width as git decides them (#15).

Each test runs the command as its own process with stdout on a pseudo-terminal
(``pty``), and a fake pager script on PATH that records how it was started and
what it was given, then shows it. Nothing in the process under test is patched.
"""

from __future__ import annotations

import fcntl
import os
import pty
import select
import struct
import subprocess
import termios
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from builders import argv, edit_files, event, payload, run_cli_in_process, write

SESSION = "sess-pager"
FAKE_PAGER = """#!/bin/sh
# Records how it was started and what it read, then shows it (as less -F would).
log="$PAGER_LOG/$(basename "$0")"
printf '%s\\n' "$@" > "$log.args"
printf '%s' "${LESS-unset}" > "$log.less"
cat > "$log.in"
cat "$log.in"
"""


@dataclass
class Screen:
    code: int
    out: bytes  # what the terminal received, newlines as "\n"
    err: str


@pytest.fixture
def pagers(tmp_path: Path) -> Path:
    """A directory of fake pagers (``less``, ``mypager``, ``otherpager``) and their logs."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("less", "mypager", "otherpager"):
        write(bin_dir, name, FAKE_PAGER, mode=0o755)
    (tmp_path / "log").mkdir()
    return bin_dir


def base_env(pagers: Path, **extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PAGER", "SNAPSHOTTER_PAGER", "LESS", "NO_COLOR", "COLUMNS", "TERM")
    }
    env.update(
        {
            "PATH": f"{pagers}{os.pathsep}{os.environ.get('PATH', '')}",
            "PAGER_LOG": str(pagers.parent / "log"),
            "TERM": "xterm",
            **extra,
        }
    )
    return env


def on_terminal(args: list[str], env: dict[str, str], columns: int = 80) -> Screen:
    """Run ``args`` with stdout on a pseudo-terminal ``columns`` wide; what it showed."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    proc = subprocess.Popen(
        args, stdin=subprocess.DEVNULL, stdout=slave, stderr=subprocess.PIPE, env=env
    )
    os.close(slave)
    chunks = []
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 1.0)
            if not ready:
                if proc.poll() is not None:
                    break
                continue
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: every process holding the terminal is gone
                break
            if not data:
                break
            chunks.append(data)
    finally:
        os.close(master)
    assert proc.stderr is not None
    err = proc.stderr.read().decode()
    code = proc.wait(timeout=60)
    return Screen(code, b"".join(chunks).replace(b"\r\n", b"\n"), err)


def on_pipe(args: list[str], env: dict[str, str]) -> Screen:
    done = subprocess.run(
        args, stdin=subprocess.DEVNULL, capture_output=True, env=env, check=False, timeout=60
    )
    return Screen(done.returncode, done.stdout, done.stderr.decode())


def record_turn(repo: Path, edits: dict[str, str]) -> None:
    """One agent turn, recorded by ``snapshotter hook`` (in-process, to keep tests quick)."""
    for name in ("turn_start", "turn_end"):
        if name == "turn_end":
            edit_files(repo, edits)
        sent = payload(event(name, repo, SESSION))
        assert run_cli_in_process("hook", stdin=sent).code == 0, f"hook {name} exits 0"


def pager_log(pagers: Path, name: str) -> dict[str, bytes] | None:
    """What the fake pager ``name`` recorded; None if it never ran."""
    log = pagers.parent / "log"
    if not (log / f"{name}.args").exists():
        return None
    return {part: (log / f"{name}.{part}").read_bytes() for part in ("args", "less", "in")}


@pytest.fixture
def changed(repo: Path) -> Path:
    record_turn(repo, {"src/app.py": "print('paged')\n"})
    return repo


def test_default_pager_is_less_FRX_on_a_terminal(changed: Path, pagers: Path) -> None:
    screen = on_terminal(argv(None, "diff", "-C", changed), base_env(pagers))

    assert screen.code == 0, screen.err
    log = pager_log(pagers, "less")
    assert log is not None, f"on a terminal the diff goes through `less`: {screen.out!r}"
    assert log["args"] == b"-FRX\n", f"less is started as `less -FRX`: {log['args']!r}"
    assert log["less"] == b"FRX", f"LESS=FRX is set when unset, as git does: {log['less']!r}"
    assert b"\x1b[32m+print('paged')\x1b[m" in log["in"], (
        f"the pager gets the coloured diff (a terminal is behind it): {log['in']!r}"
    )
    assert b"+print('paged')" in screen.out, f"the pager showed it: {screen.out!r}"


def test_pager_environment_order(changed: Path, pagers: Path) -> None:
    on_terminal(argv(None, "diff", "-C", changed), base_env(pagers, PAGER="mypager"))
    assert pager_log(pagers, "mypager") is not None, "PAGER names the pager"
    assert pager_log(pagers, "less") is None, "PAGER replaces the default"

    on_terminal(
        argv(None, "diff", "-C", changed),
        base_env(pagers, PAGER="mypager", SNAPSHOTTER_PAGER="otherpager --x", LESS="-i"),
    )
    log = pager_log(pagers, "otherpager")
    assert log is not None and log["args"] == b"--x\n", "SNAPSHOTTER_PAGER comes first"
    assert log["less"] == b"-i", f"a LESS the user set is kept: {log['less']!r}"


@pytest.mark.parametrize(
    "setting", [{"PAGER": "cat"}, {"PAGER": ""}, {"SNAPSHOTTER_PAGER": "", "PAGER": "mypager"}]
)
def test_cat_or_empty_means_no_pager(changed: Path, pagers: Path, setting: dict[str, str]) -> None:
    screen = on_terminal(argv(None, "diff", "-C", changed), base_env(pagers, **setting))
    assert screen.code == 0 and b"\x1b[32m+print('paged')" in screen.out, (
        f"{setting}: shown on the terminal, coloured: {screen}"
    )
    assert pager_log(pagers, "less") is None and pager_log(pagers, "mypager") is None, (
        f"{setting}: no pager"
    )


def test_no_pager_option(changed: Path, pagers: Path) -> None:
    screen = on_terminal(argv(None, "diff", "--no-pager", "-C", changed), base_env(pagers))
    assert b"+print('paged')" in screen.out and pager_log(pagers, "less") is None, screen


def test_never_a_pager_or_colour_when_stdout_is_not_a_terminal(changed: Path, pagers: Path) -> None:
    for args in (["diff"], ["diff", "--stat"], ["diff", "1.."]):
        piped = on_pipe(argv(None, *args, "-C", changed), base_env(pagers))
        assert piped.code == 0, piped.err
        assert b"src/app.py" in piped.out and b"\x1b[" not in piped.out, (
            f"{args} into a pipe: plain text, no colour: {piped.out!r}"
        )
        assert pager_log(pagers, "less") is None, f"{args} into a pipe: no pager"


@pytest.mark.parametrize(
    "pager", ["/nonexistent/pager", "no-such-pager-here --flag", "/etc/passwd"]
)
def test_pager_that_fails_to_start_falls_back_to_plain_output(
    changed: Path, pagers: Path, pager: str
) -> None:
    screen = on_terminal(argv(None, "diff", "-C", changed), base_env(pagers, PAGER=pager))
    assert screen.code == 0, f"a broken PAGER is no error: {screen.err}"
    assert screen.out.count(b"\x1b[32m+print('paged')") == 1, (
        f"the diff is shown once, coloured, without the pager: {screen.out!r}"
    )


def test_colour_on_a_terminal_respects_no_color(changed: Path, pagers: Path) -> None:
    coloured = on_terminal(argv(None, "diff", "--no-pager", "-C", changed), base_env(pagers))
    assert b"\x1b[31m-print('hi')\x1b[m" in coloured.out, f"red on a terminal: {coloured.out!r}"

    plain = on_terminal(
        argv(None, "diff", "--no-pager", "-C", changed), base_env(pagers, NO_COLOR="1")
    )
    assert b"-print('hi')" in plain.out and b"\x1b[" not in plain.out, (
        f"NO_COLOR turns colour off: {plain.out!r}"
    )
    never = on_terminal(
        argv(None, "diff", "--no-pager", "--color=never", "-C", changed), base_env(pagers)
    )
    assert b"\x1b[" not in never.out, f"--color=never: {never.out!r}"
    dumb = on_terminal(
        argv(None, "diff", "--no-pager", "-C", changed), base_env(pagers, TERM="dumb")
    )
    assert b"\x1b[" not in dumb.out, f"TERM=dumb has no colours (git): {dumb.out!r}"


def test_stat_is_laid_out_for_the_terminals_width(repo: Path, pagers: Path) -> None:
    record_turn(
        repo,
        {
            "src/app.py": "".join(f"line {i}\n" for i in range(200)),
            "a/rather/long/path/to/some/file.txt": "x\n",
        },
    )
    args = argv(None, "diff", "--stat", "--no-pager", "--color=never", "-C", repo)

    narrow = on_terminal(args, base_env(pagers), columns=50).out.decode()
    piped = on_pipe(args, base_env(pagers, COLUMNS="50")).out.decode()
    default = on_pipe(args, base_env(pagers)).out.decode()

    assert narrow == piped, f"a 50-column terminal lays out as COLUMNS=50:\n{narrow}\n{piped}"
    assert max(len(line) for line in narrow.splitlines()) <= 50, narrow
    assert max(len(line) for line in default.splitlines()) > 50, (
        f"not a terminal and no COLUMNS: 80 columns, as git:\n{default}"
    )
