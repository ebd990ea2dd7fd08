"""Which paths ``git add`` stores with other bytes than the file's: content conversion.

``git add`` stores other bytes than the file's in two ways. End-of-line
conversion (``text``, ``eol``, ``crlf``, ``core.autocrlf``) only ever deletes
a CR before an LF, so a blob as long as the file is the file: seeding checks
every seeded blob's size (store/seeded_blobs.py), and needs no attributes for
it. Content
conversion (``filter``, ``ident``, ``working-tree-encoding``) can give any
bytes of any length: paths it applies to are hashed, never seeded.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping
from pathlib import Path

from snapshotter.git import attributes
from snapshotter.git.config import config_bool, config_value
from snapshotter.git.kinds import BLOB
from snapshotter.git.objects import ObjectDB, ObjectError
from snapshotter.git.packs import object_id
from snapshotter.git.rule_files import read_rule_file
from snapshotter.git.worktree import Worktree

SYSTEM_ATTRIBUTES = Path("/etc/gitattributes")  # $(sysconfdir)/gitattributes of a /usr git

CONTENT_ATTRIBUTES = ("filter", "ident", "working-tree-encoding")


def content_converted(
    worktree: Worktree, tracked: Mapping[str, bytes], paths: Collection[str]
) -> set[str]:
    """The ``paths`` a content-converting attribute applies to.

    Read as ``git add`` reads them (each directory's ``.gitattributes`` in
    the worktree, else the index's: ``tracked``, path -> blob id, stage 0),
    and again with the index's version of each one the worktree changed: the
    blobs were made under those, and a filter removed since would leave its
    output in the index.
    """
    here: dict[str, bytes] = {}
    then: dict[str, bytes] = {}
    for d in _ancestors(paths):
        rel = f"{d}/.gitattributes" if d else ".gitattributes"
        data, opened = _read_attributes(worktree.root, rel)
        oid = tracked.get(rel)
        blob = None  # the index's version, where it is not the file's
        if oid is not None and (data is None or object_id(BLOB, data) != oid):
            blob = _source_blob(worktree, oid)
        now = data if opened else blob  # git's fallback when the file cannot be opened
        before = now if blob is None else blob
        if now is not None:
            here[d] = now
        if before is not None:
            then[d] = before
    info, global_, system, icase = _common_rules(worktree)
    variants = [
        attributes.AttributeRules(
            wanted=CONTENT_ATTRIBUTES,
            per_dir=per_dir,
            info=info,
            global_=global_,
            system=system,
            icase=icase,
        )
        for per_dir in ((here, then) if here != then else (here,))
    ]
    variants = [rules for rules in variants if rules.says_anything()]
    if not variants:
        return set()
    return {rel for rel in paths if any(_converts(rules.lookup(rel)) for rules in variants)}


def _converts(found: Mapping[str, attributes.State]) -> bool:
    encoding = found.get("working-tree-encoding")
    return (
        isinstance(found.get("filter"), str)
        or found.get("ident") is True
        or encoding is True
        or (isinstance(encoding, str) and encoding.lower() not in ("", "utf-8"))
    )


def _read_attributes(root: Path, rel: str) -> tuple[bytes | None, bool]:
    """``rule_files.read_rule_file`` (never through a link, as git >= 2.32), after a
    cheap ``lstat``: most directories have no ``.gitattributes``."""
    path = f"{os.fspath(root)}/{rel}"
    try:
        os.lstat(path)
    except FileNotFoundError:
        return None, False
    except OSError:
        pass
    return read_rule_file(path, nofollow=True)


def _ancestors(paths: Collection[str]) -> set[str]:
    """Every directory holding one of ``paths``, and their parents (``""``: the top)."""
    found = {""}
    for parent in {rel.rpartition("/")[0] for rel in paths}:
        while parent and parent not in found:
            found.add(parent)
            parent = parent.rpartition("/")[0]
    return found


def _common_rules(worktree: Worktree) -> tuple[bytes | None, bytes | None, bytes | None, bool]:
    """info/attributes, core.attributesFile (or its default), the system file, core.ignorecase.

    The system file is read even under GIT_ATTR_NOSYSTEM: whoever ran
    ``git add`` may not have had it set, and reading too much only hashes more.
    """
    configured = config_value(worktree.common_dir, "core.attributesFile")
    if configured:
        global_file = worktree.root / os.path.expanduser(configured)
    else:
        xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
        global_file = Path(xdg) / "git" / "attributes"
    return (
        read_rule_file(worktree.common_dir / "info" / "attributes")[0],
        read_rule_file(global_file)[0],
        read_rule_file(SYSTEM_ATTRIBUTES)[0],
        bool(config_bool(worktree.common_dir, "core.ignorecase")),
    )


def _source_blob(worktree: Worktree, oid: bytes) -> bytes | None:
    try:
        return ObjectDB(worktree.common_dir).blob(oid)
    except ObjectError:
        return None


def is_attributes(rel: str) -> bool:
    """Whether ``rel`` names a ``.gitattributes`` file."""
    return rel == ".gitattributes" or rel.endswith("/.gitattributes")
