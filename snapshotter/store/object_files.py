"""A store's object files as gc and loose packing see them: its own or shared with
the source repository, what they cost, scratch directories for packs being
written, and the leftovers of killed writers.

Files with more than one link are shared with the source repository (a
seeded capture hard-links its packs and loose objects): they cost the store
nothing while the source keeps its name, so they are never counted, copied or
deleted as the store's own. Once the source deletes its name the file is the
store's alone.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path

from snapshotter import durable
from snapshotter.fileio import remove_leftovers
from snapshotter.git.loose import FAN_OUT, GIT_TEMP_PREFIX, loose_files, loose_id
from snapshotter.git.pack_index import read_pack_index
from snapshotter.git.packs import PACK_FILE, clean_pack_dir

# The store's records, which name objects: state.json (history/state_file.py) and
# the stat cache (stat_cache.py). Durable before any object goes (``settle_records``).
RECORDS = ("state.json", "manifest", "manifest.log")
SCRATCH = "gc-scratch"  # in objects/pack: only where older versions left it
WORK = "gc-work"  # in the store root: packs being written without the store lock


@dataclass(frozen=True)
class Shared:
    """A pack (its .idx and .pack) or loose object the source repository links too."""

    files: tuple[Path, ...]
    ids: frozenset[bytes]


def shared_files(objects: Path) -> list[Shared]:
    """Shared packs (with a readable v2 index) and loose objects.

    A shared pack whose index cannot be read is neither shared nor own to gc:
    it stays as it is, with whatever it holds.
    """
    found: list[Shared] = []
    for idx in (objects / "pack").glob("pack-*.idx"):
        pack = idx.with_suffix(".pack")
        index = read_pack_index(idx) if is_shared(pack) else None
        if index is not None:
            found.append(Shared((idx, pack), frozenset(index.names())))
    for path in loose_files(objects):
        if is_shared(path):
            found.append(Shared((path,), frozenset({loose_id(path)})))
    return found


def is_shared(path: Path) -> bool:
    """More than one name for the file: the source repository still holds it too."""
    try:
        return os.lstat(path).st_nlink > 1
    except OSError:
        return False


def glance(objects: Path) -> tuple[list[Path], bool]:
    """The loose object files below ``objects``, and whether a killed write left a temp
    file there (what ``remove_orphans`` clears): from the directory listings alone."""
    loose: list[Path] = []
    try:
        subs = os.listdir(objects)
    except OSError:
        return loose, False
    for sub in subs:
        if _git_temp(sub):
            return loose, True
        if not FAN_OUT.match(sub):
            continue
        with contextlib.suppress(OSError):
            for name in os.listdir(objects / sub):
                if _git_temp(name):
                    return loose, True
                if len(name) == 38:
                    loose.append(objects / sub / name)
    return loose, False


def own_loose_objects(objects: Path) -> list[Path]:
    """The loose objects the store alone holds; shared ones stay as they are."""
    return [p for p in loose_files(objects) if not is_shared(p)]


def own_pack_indexes(pack_dir: Path) -> list[tuple[Path, list[Path]]]:
    """(``.idx``, every file of its pack, ``.idx`` first) of each pack the store alone
    holds, by name."""
    names = sorted(os.listdir(pack_dir)) if pack_dir.is_dir() else []
    found = []
    for name in names:
        stem, _, ext = name.rpartition(".")
        if ext != "idx" or not PACK_FILE.match(name) or is_shared(pack_dir / f"{stem}.pack"):
            continue
        files = [pack_dir / name] + [
            pack_dir / n
            for n in names
            if n != name and n.rpartition(".")[0] == stem and PACK_FILE.match(n)
        ]
        found.append((pack_dir / name, files))
    return found


def size(path: Path) -> int:
    """Bytes only the store holds: files with one link.

    A file shared with the source repository costs no disk while the source
    keeps its name, so neither gc's report nor the size budget counts it.
    """
    total = 0
    for dirpath, _dirs, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                st = os.lstat(os.path.join(dirpath, name))
                total += st.st_size if st.st_nlink == 1 else 0
    return total


def work_dir(store_root: Path) -> Path:
    """A fresh scratch directory of this writer's own: a capture packing its loose
    objects (under the store lock) and a gc writing (without it) never share one."""
    import tempfile  # (shutil and random with it: only where a work directory is made)

    return Path(tempfile.mkdtemp(prefix=f"{WORK}-", dir=store_root))


def remove_stale_work(store_root: Path) -> int:
    """Scratch directories of killed writers; only under both the gc and the store
    lock, when no other writer can be using one."""
    return remove_leftovers(store_root, lambda name: name.startswith(f"{WORK}-"))


def move_in(work: Path, pack_dir: Path) -> set[str]:
    """The written pack into ``objects/pack``, ``.pack`` before ``.idx`` (which makes it
    visible); a pack identical to an old one is recognised by name, never deleted."""
    names = {p.name for p in work.iterdir() if PACK_FILE.match(p.name)}
    for name in sorted(names, key=lambda n: n.endswith(".idx")):
        os.replace(work / name, pack_dir / name)
        durable.wrote(pack_dir / name)
    return names


def settle_records(store_root: Path) -> None:
    """Before objects are deleted: what replaces them (a pack just moved in) and the
    records that no longer name them are durable, so a power cut can bring back
    no record naming what is gone (durable.py)."""
    durable.settle(*(store_root / name for name in RECORDS))


def drop_loose(loose: list[Path]) -> None:
    """Delete loose objects (already packed) and the fan-out dirs left empty."""
    for path in loose:
        path.unlink(missing_ok=True)
    for sub in {p.parent for p in loose}:
        with contextlib.suppress(OSError):
            sub.rmdir()


def remove_orphans(objects: Path) -> int:
    """Temp files of killed writes and packs without an index: never valid, never needed."""
    removed = clean_pack_dir(objects / "pack")
    if not objects.is_dir():
        return removed
    for sub in objects.iterdir():
        if FAN_OUT.match(sub.name):
            removed += remove_leftovers(sub, _git_temp)
    return removed + remove_leftovers(
        objects, lambda name: _git_temp(name) and (objects / name).is_file()
    )


def _git_temp(name: str) -> bool:
    return name.startswith(GIT_TEMP_PREFIX)
