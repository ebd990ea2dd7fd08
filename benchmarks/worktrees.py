"""Deterministic benchmark worktrees, committed with the git CLI.

A synthetic worktree of ``n`` tracked files is laid out as nested directories
of 20 files each (``src/pkgNNN/modN/partN/``), every file 1-20 KB of text cut
from one seeded pool. Around it sit a ``.gitignore`` with files it ignores
(``build/``, ``node_modules/``, ``*.log``, ``*.tmp``), a few small untracked
notes and three untracked 3 MiB binary files (more than the 2 MiB limit for
new files). The same ``n`` and seed always give the same bytes.

The ``stdlib`` worktree is a copy of the running Python's standard library
(``site-packages`` and ``__pycache__`` left out): real code, real names.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sysconfig
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

SEED = 20260101
FILES_PER_DIR = 20
MIN_FILE_BYTES = 1024
MAX_FILE_BYTES = 20 * 1024
BIG_FILE_BYTES = 3 * 1024 * 1024
BIG_FILES = 3
UNTRACKED_NOTES = 5
POOL_BYTES = 1 << 20
GITIGNORE = "# benchmark worktree\n*.log\n*.tmp\n/build/\nnode_modules/\n"
_EXTENSIONS = ("py", "txt", "md", "js")
_WORDS = (
    "def", "class", "return", "import", "from", "self", "value", "items", "index", "store",
    "tree", "blob", "path", "worktree", "capture", "restore", "change", "state", "lock",
    "scan", "ignore", "commit", "undo", "redo", "session", "turn", "tool", "hook", "event",
    "config", "size", "limit", "error", "result", "entry", "mode", "data", "list", "dict",
    "str", "int", "bytes", "none", "true", "false", "for", "while", "if", "else", "with", "as",
    "try", "except", "raise", "yield", "lambda", "async", "await", "print", "open", "read",
    "write", "close",
)

GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "Benchmark",
    "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "Benchmark",
    "GIT_COMMITTER_EMAIL": "bench@example.com",
    "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
}


@dataclass(frozen=True)
class GeneratedWorktree:
    label: str  # "1k", "10k", "stdlib", ...
    root: Path
    tracked: int  # files in the commit
    editable: tuple[str, ...]  # tracked text files in a fixed shuffled order, to edit
    disk_bytes: int  # bytes of every file outside .git (tracked, untracked, ignored)


def label_for(n_files: int) -> str:
    if n_files >= 1000 and n_files % 1000 == 0:
        return f"{n_files // 1000}k"
    return str(n_files)


def git_env(home: Path) -> dict[str, str]:
    """A hermetic environment for git: private HOME, no system config, fixed identity."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_IDENTITY)
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        GIT_CONFIG_NOSYSTEM="1",
        GIT_TERMINAL_PROMPT="0",
    )
    return env


def git(
    cwd: Path,
    env: Mapping[str, str],
    *args: str,
    stdin: bytes | None = None,
    ok_codes: Sequence[int] = (0,),
) -> bytes:
    """Run the git CLI; returns stdout, raises with stderr on an unexpected exit code."""
    done = subprocess.run(
        ["git", *args], cwd=cwd, env=dict(env), input=stdin, capture_output=True, check=False
    )
    if done.returncode not in ok_codes:
        raise RuntimeError(
            f"git {' '.join(args)} exited {done.returncode}: {done.stderr.decode(errors='replace')}"
        )
    return done.stdout


def _pool(rng: random.Random) -> bytes:
    lines = []
    total = 0
    while total < POOL_BYTES:
        indent = "    " * rng.randrange(4)
        words = " ".join(rng.choice(_WORDS) for _ in range(rng.randrange(3, 12)))
        line = f"{indent}{words}\n"
        lines.append(line)
        total += len(line)
    return "".join(lines).encode()


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def _leaf_dir(k: int) -> str:
    return f"src/pkg{k // 100:03d}/mod{k // 10 % 10}/part{k % 10}"


def _commit(root: Path, env: Mapping[str, str], pack: bool) -> None:
    git(root, env, "init", "-q", "-b", "main")
    git(root, env, "add", "-A")
    git(root, env, "commit", "-q", "-m", "benchmark worktree")
    if pack:  # like a clone: objects in one pack, none loose
        git(root, env, "repack", "-adq")


def _tracked(root: Path, env: Mapping[str, str]) -> list[str]:
    out = git(root, env, "ls-files", "-z")
    return [p for p in out.decode().split("\0") if p]


def _disk_bytes(root: Path) -> int:
    total = 0
    for dirpath, dirs, files in os.walk(root):
        if ".git" in dirs and Path(dirpath) == root:
            dirs.remove(".git")
        for name in files:
            total += os.lstat(os.path.join(dirpath, name)).st_size
    return total


def generate(root: Path, n_files: int, env: Mapping[str, str], *, seed: int = SEED,
             pack: bool = True) -> GeneratedWorktree:
    """The synthetic worktree of ``n_files`` tracked files at ``root`` (must not exist)."""
    rng = random.Random(seed)
    pool = _pool(rng)
    root.mkdir(parents=True)
    _write(root / ".gitignore", GITIGNORE.encode())
    names: list[str] = []
    for i in range(n_files):
        k, j = divmod(i, FILES_PER_DIR)
        rel = f"{_leaf_dir(k)}/file{j:02d}.{_EXTENSIONS[i % len(_EXTENSIONS)]}"
        size = rng.randint(MIN_FILE_BYTES, MAX_FILE_BYTES)
        start = rng.randrange(len(pool) - size)
        header = f"# {rel} ({seed})\n".encode()
        _write(root / rel, header + pool[start : start + size - len(header)])
        names.append(rel)
    # Ignored files: present on disk, never in a snapshot.
    leaf_dirs = (n_files + FILES_PER_DIR - 1) // FILES_PER_DIR
    for k in range(0, leaf_dirs, 25):
        _write(root / _leaf_dir(k) / "debug.log", pool[k : k + 2048])
        _write(root / _leaf_dir(k) / "cache.tmp", pool[k + 1 : k + 513])
    for i in range(max(5, n_files // 100)):
        _write(root / f"build/obj{i // 20:02d}/unit{i:04d}.o", pool[i : i + 4096])
    for i in range(max(5, n_files // 200)):
        _write(root / f"node_modules/dep{i // 10:02d}/index{i:03d}.js", pool[i : i + 1024])
    _commit(root, env, pack)
    # Untracked after the commit: small notes (captured) and big files (skipped).
    for i in range(UNTRACKED_NOTES):
        _write(root / f"notes/todo{i}.md", pool[i * 97 : i * 97 + 700])
    for i in range(BIG_FILES):
        _write(root / f"assets/blob{i}.bin", rng.randbytes(BIG_FILE_BYTES))
    editable = sorted(names)
    random.Random(seed + 1).shuffle(editable)
    return GeneratedWorktree(label_for(n_files), root, n_files, tuple(editable),
                             _disk_bytes(root))


def stdlib_path() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


def copy_stdlib(root: Path, env: Mapping[str, str], *, pack: bool = True) -> GeneratedWorktree:
    """A committed copy of the Python standard library at ``root`` (must not exist)."""
    shutil.copytree(
        stdlib_path(),
        root,
        symlinks=True,
        ignore=shutil.ignore_patterns("site-packages", "__pycache__"),
        copy_function=shutil.copyfile,  # modes not copied: every file stays writable
    )
    _commit(root, env, pack)
    tracked = _tracked(root, env)
    editable = sorted(
        p for p in tracked
        if p.endswith(".py") and not os.path.islink(root / p) and (root / p).stat().st_size
    )
    random.Random(SEED + 1).shuffle(editable)
    return GeneratedWorktree("stdlib", root, len(tracked), tuple(editable), _disk_bytes(root))


def append_edit(root: Path, rel: str, tag: str) -> int:
    """Append one line to a file; returns the bytes written."""
    line = f"\n# edited by the benchmark: {tag}\n".encode()
    with open(root / rel, "ab") as f:
        f.write(line)
    return len(line)


def pick(worktree: GeneratedWorktree, start: int, count: int) -> list[str]:
    """``count`` editable files from position ``start`` (wrapping round)."""
    files = worktree.editable
    return [files[(start + i) % len(files)] for i in range(count)]
