"""A write-order tracer: what a power cut could leave of a store, from an strace of it.

Every ``snapshotter`` process of a scenario runs under ``strace -f``; the
traces are read in order into one model of the page cache (issue 28):

- a file's bytes are at risk from its last write until it is fsynced (or the
  filesystem is, with ``syncfs``);
- a name (a file created, renamed or linked into a directory, a directory
  made) is at risk until that directory is fsynced; a file is durable only
  when its bytes and every name on its path, up to the store's own, are.

The rules checked, at the instant a write could reach the disk:

- a record (state.json, the stat cache's base and log) is renamed into place
  or written only while every object of the store is durable, and every
  worktree file a restore wrote too (its journal is closed by that record);
- a restore writes into the worktree only while state.json, which holds its
  journal, is durable;
- an object (loose file, pack, index) is deleted only while every other
  object and every record is durable (gc deletes what the records on disk no
  longer name; a newer record still in the cache could be lost).

This is stricter than "the objects a record names": any object present must be
durable, so no record's contents need decoding. A power cut keeps any subset
of what is at risk, so a record can reach the disk before the objects it names.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass, field
from pathlib import Path

# The syscalls that write, name, unname or sync (strace -e trace=...).
TRACED = (
    "openat,creat,rename,renameat,renameat2,link,linkat,unlink,unlinkat,rmdir,mkdir,mkdirat,"
    "fsync,fdatasync,syncfs,sync,write,pwrite64,writev,pwritev,pwritev2,ftruncate,"
    "copy_file_range,sendfile"
)


def strace_prefix(out: Path) -> list[str]:
    """The command prefix that traces a process and all it starts into ``out``."""
    return ["strace", "-f", "-qq", "-y", "--seccomp-bpf", "-e", f"trace={TRACED}", "-o", str(out)]


RECORDS = ("state.json", "manifest", "manifest.log")
_RULES = ("record", "worktree", "delete")
_LOOSE = re.compile(r"/objects/[0-9a-f]{2}/[0-9a-f]{38}$")
_PACK = re.compile(r"/objects/pack/pack-[0-9a-f]{40}\.(pack|idx)$")
_LINE = re.compile(r"^(\d+) +(.*)$")
_CALL = re.compile(r"^([a-z0-9_]+)\((.*)\) += (-?\d+)(?:<(.*?)>)?(?: .*)?$")
_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')
_FD_PATH = re.compile(r"^-?\d+<(.*)>$")


@dataclass
class Syscall:
    pid: int
    name: str
    args: str
    result: int
    result_path: str | None  # -y: the path of a returned fd

    def strings(self) -> list[str]:
        return [_unescape(s) for s in _STRING.findall(self.args)]

    def fd_paths(self) -> list[str]:
        """The paths -y printed for the fd arguments (AT_FDCWD too), in order."""
        found = []
        for part in _split_args(self.args):
            m = _FD_PATH.match(part.strip()) or re.match(r"^AT_FDCWD<(.*)>$", part.strip())
            if m:
                found.append(m.group(1))
        return found


def parse(trace: Path) -> list[Syscall]:
    """The successful syscalls of one strace output, unfinished calls joined."""
    pending: dict[int, str] = {}
    calls: list[Syscall] = []
    for raw in trace.read_text(errors="surrogateescape").splitlines():
        m = _LINE.match(raw)
        if not m:
            continue
        pid, rest = int(m.group(1)), m.group(2)
        if rest.endswith("<unfinished ...>"):
            pending[pid] = rest[: -len("<unfinished ...>")].rstrip()
            continue
        resumed = re.match(r"^<\.\.\. [a-z0-9_]+ resumed>(.*)$", rest)
        if resumed:
            rest = pending.pop(pid, "") + resumed.group(1)
        call = _CALL.match(rest)
        if call is None or int(call.group(3)) < 0:
            continue  # a failed call changes nothing; exits and signals are not calls
        name, args, result, result_path = call.groups()
        calls.append(Syscall(pid, name, args, int(result), result_path))
    return calls


@dataclass
class Model:
    """What a power cut could take, after the syscalls seen so far."""

    store: Path
    worktree: Path
    dirty_data: set[str] = field(default_factory=set)  # bytes not yet synced
    dirty_name: set[str] = field(default_factory=set)  # names not yet synced in their dir
    objects: set[str] = field(default_factory=set)  # object files present
    restored: set[str] = field(default_factory=set)  # worktree files a restore wrote
    violations: list[str] = field(default_factory=list)
    step: str = ""
    # How often each rule was checked: a scenario that never reached one proves nothing.
    checked: dict[str, int] = field(default_factory=lambda: dict.fromkeys(_RULES, 0))

    def feed(self, step: str, calls: list[Syscall]) -> None:
        """Apply one process's syscalls (``step`` names it in violations)."""
        self.step = step
        for call in calls:
            self._apply(call)

    # -- the checks --------------------------------------------------------------------------

    def durable(self, path: str) -> bool:
        """Its bytes and every name from it up to the store's (or worktree's) own synced."""
        if path in self.dirty_data:
            return False
        top = str(self.store.parent) if path.startswith(str(self.store)) else str(self.worktree)
        current = path
        while current.startswith(top) and current != top:
            if current in self.dirty_name:
                return False
            current = current.rsplit("/", 1)[0]
        return True

    def _unsynced(self, paths: set[str]) -> list[str]:
        return sorted(p for p in paths if not self.durable(p))

    def _record_written(self, record: str, how: str) -> None:
        self.checked["record"] += 1
        lost = self._unsynced(self.objects | self.restored)
        if lost:
            what = f"{len(lost)} objects or restored files"
            self._violation(f"{how} {record} while {what} are not synced", lost)

    def _worktree_written(self, path: str) -> None:
        self.checked["worktree"] += 1
        state = str(self.store / "state.json")
        if not self.durable(state):
            self._violation(f"a restore wrote {path} before its journal was synced", [state])
        lost = self._unsynced(self.objects)
        if lost:
            what = f"{len(lost)} objects are not synced"
            self._violation(f"a restore wrote {path} while {what}", lost)

    def _object_deleted(self, path: str) -> None:
        self.checked["delete"] += 1
        records = {str(self.store / r) for r in RECORDS}
        lost = self._unsynced((self.objects - {path}) | records)
        if lost:
            self._violation(f"deleted {path} while {len(lost)} files are not synced", lost)

    def _violation(self, what: str, paths: list[str]) -> None:
        shown = ", ".join(Path(p).name for p in paths[:3])
        self.violations.append(f"{self.step}: {what} ({shown}{', ...' if len(paths) > 3 else ''})")

    # -- the model ---------------------------------------------------------------------------

    def _apply(self, call: Syscall) -> None:
        name = call.name
        fds = call.fd_paths()
        strings = call.strings()
        if name in ("openat", "creat") and call.result_path and "O_CREAT" in call.args:
            path = call.result_path
            if path.endswith("(deleted)"):
                return
            self.dirty_name.add(path)
            if "O_TRUNC" in call.args:
                self.dirty_data.add(path)
        elif name in ("write", "pwrite64", "writev", "pwritev", "pwritev2", "ftruncate"):
            if fds:
                self._written(fds[0])
        elif name in ("copy_file_range", "sendfile") and len(fds) >= 2:
            self._written(fds[1] if name == "copy_file_range" else fds[0])
        elif name in ("fsync", "fdatasync") and fds:
            self._synced(fds[0])
        elif name in ("syncfs", "sync"):
            self.dirty_data.clear()
            self.dirty_name.clear()
        elif name in ("rename", "renameat", "renameat2"):
            old, new = _two_paths(call, fds, strings)
            self._moved(old, new)
        elif name in ("link", "linkat"):
            old, new = _two_paths(call, fds, strings)
            self.dirty_name.add(new)
            self.dirty_data.add(new)  # the source's bytes: whoever wrote them may not have synced
            self._appeared(new)
        elif name in ("unlink", "unlinkat", "rmdir"):
            path = _one_path(fds, strings)
            if path in self.objects:
                self._object_deleted(path)
            self._gone(path)
        elif name in ("mkdir", "mkdirat"):
            self.dirty_name.add(_one_path(fds, strings))

    def _written(self, path: str) -> None:
        if Path(path).name in RECORDS and Path(path).parent == self.store:
            self._record_written(path, "wrote into")
        self.dirty_data.add(path)

    def _synced(self, path: str) -> None:
        self.dirty_data.discard(path)
        prefix = path.rstrip("/") + "/"
        self.dirty_name.difference_update(
            {n for n in self.dirty_name if n.startswith(prefix) and "/" not in n[len(prefix) :]}
        )

    def _moved(self, old: str, new: str) -> None:
        if Path(new).parent == self.store and Path(new).name in RECORDS:
            self._record_written(new, "renamed into place")
        elif new.startswith(str(self.worktree) + "/"):
            self._worktree_written(new)
            self.restored.add(new)
        self.dirty_data.discard(new)  # what ``new`` named is gone: it is ``old``'s file now
        for tracked in (self.dirty_data, self.dirty_name, self.objects, self.restored):
            moving = {p for p in tracked if p == old or p.startswith(old + "/")}
            tracked.difference_update(moving)
            tracked.update(new + p[len(old) :] for p in moving)
        self.dirty_name.add(new)
        self._appeared(new)

    def _appeared(self, path: str) -> None:
        if path.startswith(str(self.store)) and (_LOOSE.search(path) or _PACK.search(path)):
            self.objects.add(path)

    def _gone(self, path: str) -> None:
        for tracked in (self.dirty_data, self.dirty_name, self.objects, self.restored):
            tracked.discard(path)


def _two_paths(call: Syscall, fds: list[str], strings: list[str]) -> tuple[str, str]:
    """(old, new) of a rename or link, relative names joined to their directory fd."""
    if call.name in ("rename", "link"):
        return strings[0], strings[1]
    return _join(fds[0], strings[0]), _join(fds[1], strings[1])


def _one_path(fds: list[str], strings: list[str]) -> str:
    return _join(fds[0], strings[0]) if fds else strings[0]


def _join(directory: str, name: str) -> str:
    return name if name.startswith("/") else f"{directory.rstrip('/')}/{name}"


def _split_args(args: str) -> list[str]:
    """Top-level comma-separated arguments (commas inside strings ignored)."""
    parts, depth, current, quoted, escaped = [], 0, "", False, False
    for ch in args:
        if quoted:
            current += ch
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                quoted = False
            continue
        if ch == '"':
            quoted = True
        elif ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(current)
            current = ""
            continue
        current += ch
    parts.append(current)
    return parts


def _unescape(text: str) -> str:
    return codecs.escape_decode(text.encode("utf-8", "surrogateescape"))[0].decode(
        "utf-8", "surrogateescape"
    )
