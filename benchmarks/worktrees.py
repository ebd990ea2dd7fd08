"""Deterministic benchmark worktrees, committed with the git CLI.

A synthetic worktree of ``n`` tracked files is laid out as nested directories
of 20 files each (``src/pkgNNN/modN/partN/``), every file 1-20 KB of text cut
from one seeded pool. Around it sit a ``.gitignore`` with files it ignores
(``build/``, ``node_modules/``, ``*.log``, ``*.tmp``), a few small untracked
notes and three untracked 3 MiB binary files (more than the 2 MiB limit for
new files). The same ``n`` and seed always give the same bytes.

The tracked files go to git in one ``git fast-import`` stream (one pack, as
in a clone, and no loose object written on the way), and ``git reset --hard``
writes the worktree and its index: 500,000 files take minutes, not hours.
Given a cache directory (``--cache``), a generated tree is kept there and
reused: the next run only puts it back as generated (``refresh``).

The ``stdlib`` worktree is a copy of the running Python's standard library
(``site-packages`` and ``__pycache__`` left out): real code, real names.
``copy_existing`` measures any worktree: a clone (or a plain copy) of it, so
the benchmark's edits never reach the user's own files.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sysconfig
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from benchmarks.procs import run

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
    "def",
    "class",
    "return",
    "import",
    "from",
    "self",
    "value",
    "items",
    "index",
    "store",
    "tree",
    "blob",
    "path",
    "worktree",
    "capture",
    "restore",
    "change",
    "state",
    "lock",
    "scan",
    "ignore",
    "commit",
    "undo",
    "redo",
    "session",
    "turn",
    "tool",
    "hook",
    "event",
    "config",
    "size",
    "limit",
    "error",
    "result",
    "entry",
    "mode",
    "data",
    "list",
    "dict",
    "str",
    "int",
    "bytes",
    "none",
    "true",
    "false",
    "for",
    "while",
    "if",
    "else",
    "with",
    "as",
    "try",
    "except",
    "raise",
    "yield",
    "lambda",
    "async",
    "await",
    "print",
    "open",
    "read",
    "write",
    "close",
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
    meter: list[int] | None = None,
    timeout_s: float | None = None,
) -> bytes:
    """Run the git CLI; returns stdout, raises with stderr on an unexpected exit code.

    ``meter`` gets the process's peak RSS (kB) appended. Past ``timeout_s`` the
    process is killed and TimedOut raised.
    """
    done = run(["git", *args], env, cwd=cwd, stdin=stdin, timeout_s=timeout_s)
    if meter is not None:
        meter.append(done.rss_kb)
    if done.timed_out:
        raise TimedOut(f"git {args[0] if args else ''} killed after {timeout_s:g} s")
    if done.code not in ok_codes:
        raise RuntimeError(
            f"git {' '.join(args)} exited {done.code}: {done.stderr.decode(errors='replace')}"
        )
    return done.stdout


class TimedOut(RuntimeError):
    """A git process reached its time limit and was killed."""


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
    return [os.fsdecode(p) for p in out.split(b"\0") if p]


def _disk_bytes(root: Path) -> int:
    total = 0
    for dirpath, dirs, files in os.walk(root):
        if ".git" in dirs and Path(dirpath) == root:
            dirs.remove(".git")
        for name in files:
            total += os.lstat(os.path.join(dirpath, name)).st_size
    return total


GEN_VERSION = 3  # bump when the generated bytes change: cached trees are then rebuilt
IO_CHUNK = 1 << 22


def _names(n_files: int) -> list[str]:
    names = []
    for i in range(n_files):
        k, j = divmod(i, FILES_PER_DIR)
        names.append(f"{_leaf_dir(k)}/file{j:02d}.{_EXTENSIONS[i % len(_EXTENSIONS)]}")
    return names


def _editable(names: list[str], seed: int) -> tuple[str, ...]:
    editable = sorted(names)
    random.Random(seed + 1).shuffle(editable)
    return tuple(editable)


def _fast_import(
    root: Path, env: Mapping[str, str], names: list[str], rng: random.Random, pool: bytes, seed: int
) -> None:
    """Every tracked file as one ``git fast-import`` stream: a commit on ``main``, one pack."""
    # Compression level 1: a third faster than the default, the same objects.
    proc = subprocess.Popen(
        ["git", "-c", "pack.compression=1", "fast-import", "--quiet"],
        cwd=root,
        env=dict(env),
        stdin=subprocess.PIPE,
    )
    assert proc.stdin is not None
    buf = bytearray()

    def blob(mark: int, data: bytes) -> None:
        buf.extend(b"blob\nmark :%d\ndata %d\n" % (mark, len(data)))
        buf.extend(data)
        buf.extend(b"\n")
        if len(buf) >= IO_CHUNK:
            proc.stdin.write(buf)  # type: ignore[union-attr]
            buf.clear()

    blob(1, GITIGNORE.encode())
    for i, rel in enumerate(names):
        size = rng.randint(MIN_FILE_BYTES, MAX_FILE_BYTES)
        start = rng.randrange(len(pool) - size)
        header = f"# {rel} ({seed})\n".encode()
        blob(i + 2, header + pool[start : start + size - len(header)])
    when = "1767225600 +0000"  # GIT_IDENTITY's dates
    message = b"benchmark worktree\n"
    buf.extend(
        f"commit refs/heads/main\nauthor Benchmark <bench@example.com> {when}\n"
        f"committer Benchmark <bench@example.com> {when}\n".encode()
    )
    buf.extend(b"data %d\n%s" % (len(message), message))
    buf.extend(b"M 100644 :1 .gitignore\n")
    for i, rel in enumerate(names):
        buf.extend(b"M 100644 :%d %s\n" % (i + 2, rel.encode()))
    buf.extend(b"\n")
    proc.stdin.write(buf)
    proc.stdin.close()
    if proc.wait() != 0:
        raise RuntimeError(f"git fast-import exited {proc.returncode}")


def _untracked(root: Path, n_files: int, pool: bytes, seed: int, ignored: bool) -> None:
    """Files outside the commit: ignored ones, small notes (captured) and big ones (skipped)."""
    if ignored:  # present on disk, never in a snapshot
        leaf_dirs = (n_files + FILES_PER_DIR - 1) // FILES_PER_DIR
        for k in range(0, leaf_dirs, 25):
            _write(root / _leaf_dir(k) / "debug.log", pool[k : k + 2048])
            _write(root / _leaf_dir(k) / "cache.tmp", pool[k + 1 : k + 513])
        for i in range(max(5, n_files // 100)):
            _write(root / f"build/obj{i // 20:02d}/unit{i:04d}.o", pool[i : i + 4096])
        for i in range(max(5, n_files // 200)):
            _write(root / f"node_modules/dep{i // 10:02d}/index{i:03d}.js", pool[i : i + 1024])
    for i in range(UNTRACKED_NOTES):
        _write(root / f"notes/todo{i}.md", pool[i * 97 : i * 97 + 700])
    big = random.Random(seed + 2)
    for i in range(BIG_FILES):
        _write(root / f"assets/blob{i}.bin", big.randbytes(BIG_FILE_BYTES))


def generate(
    root: Path, n_files: int, env: Mapping[str, str], *, seed: int = SEED, pack: bool = True
) -> GeneratedWorktree:
    """The synthetic worktree of ``n_files`` tracked files at ``root`` (must not exist).

    ``pack=False`` commits with ``git add -A`` instead, leaving the objects loose.
    """
    rng = random.Random(seed)
    pool = _pool(rng)
    names = _names(n_files)
    root.mkdir(parents=True)
    git(root, env, "init", "-q", "-b", "main")
    if pack:
        _fast_import(root, env, names, rng, pool, seed)
        git(root, env, "reset", "-q", "--hard")  # git writes the files and the index
    else:
        _write(root / ".gitignore", GITIGNORE.encode())
        for rel in names:
            size = rng.randint(MIN_FILE_BYTES, MAX_FILE_BYTES)
            start = rng.randrange(len(pool) - size)
            header = f"# {rel} ({seed})\n".encode()
            _write(root / rel, header + pool[start : start + size - len(header)])
        # Loose they stay: the commit's detached ``gc --auto`` would pack them
        # within seconds (more than gc.auto's 6700), before any first capture.
        git(root, env, "config", "gc.auto", "0")
        git(root, env, "add", "-A")
        git(root, env, "commit", "-q", "-m", "benchmark worktree")
    _untracked(root, n_files, pool, seed, ignored=True)
    _settle_index(root, env)
    return GeneratedWorktree(
        label_for(n_files), root, n_files, _editable(names, seed), _disk_bytes(root)
    )


def refresh(wt: GeneratedWorktree, env: Mapping[str, str], *, seed: int = SEED) -> None:
    """Put a generated worktree back as generated, whatever a run did to it."""
    git(wt.root, env, "reset", "-q", "--hard")
    git(wt.root, env, "clean", "-fdq")  # untracked, not ignored: the run's and the notes
    _untracked(wt.root, wt.tracked, _pool(random.Random(seed)), seed, ignored=False)
    _settle_index(wt.root, env)


def _settle_index(root: Path, env: Mapping[str, str]) -> None:
    """Let the index be newer than every file, so no entry is racily clean (and re-read)."""
    time.sleep(1.1)
    git(root, env, "update-index", "-q", "--refresh", ok_codes=(0, 1))


def cached(
    cache: Path, n_files: int, env: Mapping[str, str], *, seed: int = SEED, pack: bool = True
) -> GeneratedWorktree:
    """``generate`` under ``cache``, once; later calls put the kept tree back as generated.

    A run edits the tree (appends, undo, redo): ``git reset --hard`` and
    ``git clean`` undo that, and the untracked files are written again. The
    tree counts as generated only once ``ready.json`` exists beside it.
    """
    key = f"synthetic-{n_files}-s{seed}-{'packed' if pack else 'loose'}-v{GEN_VERSION}"
    base = cache / key
    root, ready = base / "worktree", base / "ready.json"
    if ready.is_file():
        meta = json.loads(ready.read_text())
        wt = GeneratedWorktree(
            label_for(n_files),
            root,
            n_files,
            _editable(_names(n_files), seed),
            int(meta["disk_bytes"]),
        )
        refresh(wt, env, seed=seed)
        return wt
    if base.exists():
        shutil.rmtree(base)  # a generation that did not finish
    base.mkdir(parents=True)
    wt = generate(root, n_files, env, seed=seed, pack=pack)
    ready.write_text(json.dumps({"tracked": wt.tracked, "disk_bytes": wt.disk_bytes}) + "\n")
    return wt


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
        p
        for p in tracked
        if p.endswith(".py") and not os.path.islink(root / p) and (root / p).stat().st_size
    )
    random.Random(SEED + 1).shuffle(editable)
    return GeneratedWorktree("stdlib", root, len(tracked), tuple(editable), _disk_bytes(root))


EDITABLE_MAX_BYTES = 1 << 20
EDITABLE_WANTED = 5000


def copy_existing(
    source: Path, root: Path, env: Mapping[str, str], *, how: str = "clone"
) -> GeneratedWorktree:
    """A throwaway copy of the worktree containing ``source``, at ``root`` (must not exist).

    ``how="clone"``: ``git clone --no-hardlinks`` (the committed files, the
    repository's own object layout, nothing shared with it); ``"cp"``: a copy
    of the whole directory, ``.git`` and untracked and ignored files included
    (a worktree whose ``.git`` is a file, a linked worktree or a submodule,
    cannot be copied so). Either way the source is only read.
    """
    top = Path(os.fsdecode(git(source, env, "rev-parse", "--show-toplevel").strip()))
    if how == "clone":
        git(top.parent, env, "clone", "-q", "--no-hardlinks", str(top), str(root))
    elif how == "cp":
        if not (top / ".git").is_dir():
            raise RuntimeError(f"{top}/.git is not a directory: use the clone copy")
        shutil.copytree(top, root, symlinks=True)
    else:
        raise ValueError(f"unknown copy mode {how!r}")
    _settle_index(root, env)
    tracked = _tracked(root, env)
    return GeneratedWorktree(
        top.name, root, len(tracked), _text_files(root, tracked), _disk_bytes(root)
    )


def _text_files(root: Path, tracked: list[str]) -> tuple[str, ...]:
    """Tracked regular text files (no NUL in their first 8 KB) to edit, in a fixed shuffle."""
    order = sorted(tracked)
    random.Random(SEED + 1).shuffle(order)
    found: list[str] = []
    for rel in order:
        path = root / rel
        try:
            st = os.lstat(path)
            if not (
                path.is_file()
                and not path.is_symlink()
                and 0 < st.st_size <= EDITABLE_MAX_BYTES
                and os.access(path, os.W_OK)
            ):
                continue
            with open(path, "rb") as f:
                if b"\0" in f.read(8192):
                    continue
        except OSError:
            continue
        found.append(rel)
        if len(found) >= EDITABLE_WANTED:
            break
    if not found:
        raise RuntimeError(f"{root}: no tracked text file to edit")
    return tuple(found)


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
