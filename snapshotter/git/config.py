"""The config git reads: the repository's own files, and the whole chain with
the environment on top, found and parsed as git finds and parses them.

libgit2 parses each file (its parser reads any object format, and includes);
which files count is decided here, as git decides it (issue 12 §3).
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
from pathlib import Path
from typing import TYPE_CHECKING

from snapshotter.errors import SnapshotterError
from snapshotter.names import display

if TYPE_CHECKING:
    import pygit2


def repository_config(git_dir: Path, common_dir: Path) -> dict[str, str]:
    """The repository's own config (lower-cased keys), as git reads it to set itself up.

    Only the repository's files, never the global ones: git takes ``core.bare``,
    ``core.worktree`` and ``extensions.*`` from there alone. Read by libgit2's
    config parser, which, unlike its repository code, reads any object format.
    """
    values = config_file(common_dir / "config")
    if truthy(values.get("extensions.worktreeconfig")):
        values.update(config_file(git_dir / "config.worktree"))
    return values


def config_file(path: Path) -> dict[str, str]:
    """One config file's values (lower-cased keys); empty when there is none.

    Raises SnapshotterError with one clear line for a file libgit2 cannot parse.
    """
    values: dict[str, str] = {}
    if not path.is_file():
        return values
    simple = _plain_file(path)
    if simple is not None:
        return simple
    import pygit2

    try:
        for entry in pygit2.Config(str(path)):
            name = os.fsdecode(entry.raw_name).lower()
            raw = entry.raw_value
            values[name] = "true" if raw is None else os.fsdecode(raw)
    except (pygit2.GitError, OSError, ValueError) as exc:
        raise SnapshotterError(f"cannot read {display(str(path))}: {exc}") from exc
    return values


def truthy(value: str | None) -> bool:
    """A config value set and true as git reads booleans."""
    return value is not None and git_bool(value) is True


def config_value(common_dir: Path | None, key: str) -> str | None:
    """One value of the config git reads in this repository (None: unset)."""
    return config_values(common_dir, key)[key]


def config_values(common_dir: Path | None, *keys: str) -> dict[str, str | None]:
    """Values of the config git reads in this repository (None: unset), its files
    read once for them all (a capture reads several: #26.3)."""
    found = {key: _env_config(key) for key in keys}
    if all(value is not None for value in found.values()):
        return found
    plain = _plain_chain(common_dir, keys)
    if plain is not None:
        return {
            key: found[key] if found[key] is not None else plain.get(key.lower()) for key in keys
        }
    config = _config_chain(common_dir)
    for key in keys:
        if found[key] is None and config is not None:
            with contextlib.suppress(KeyError, ValueError, TypeError, LookupError):
                found[key] = str(config[key])  # (unset: KeyError)
    return found


def config_bool(common_dir: Path | None, key: str) -> bool | None:
    """A boolean config value as git parses it (None: unset or not a boolean)."""
    value = config_value(common_dir, key)
    if value is None:
        return None
    return git_bool(value)


def config_files(common_dir: Path | None) -> list[tuple[int, Path]]:
    """(libgit2 level, path) of each config file git reads, lowest priority first.

    Found as git finds them, not as libgit2 does (issue 12 §3): libgit2 ignores
    ``GIT_CONFIG_GLOBAL``, ``GIT_CONFIG_SYSTEM`` and ``GIT_CONFIG_NOSYSTEM`` and
    takes ``$HOME`` once per process. ``GIT_CONFIG_GLOBAL`` replaces both
    ``~/.gitconfig`` and ``$XDG_CONFIG_HOME/git/config``, as in git.
    """
    system, xdg, global_, local = 2, 3, 4, 5  # pygit2.enums.ConfigLevel, without importing it
    found: list[tuple[int, Path]] = []
    if not git_bool(os.environ.get("GIT_CONFIG_NOSYSTEM") or "false"):
        found.append((system, Path(os.environ.get("GIT_CONFIG_SYSTEM") or "/etc/gitconfig")))
    configured = os.environ.get("GIT_CONFIG_GLOBAL")
    home = os.environ.get("HOME")
    if configured is not None:
        found.append((global_, Path(os.path.expanduser(configured))))
    else:
        xdg_home = os.environ.get("XDG_CONFIG_HOME") or (home and os.path.join(home, ".config"))
        if xdg_home:
            found.append((xdg, Path(xdg_home) / "git" / "config"))
        if home:
            found.append((global_, Path(home) / ".gitconfig"))
    if common_dir is not None:
        found.append((local, common_dir / "config"))
    return found


# A config file read here without libgit2 has only these lines (else libgit2 reads it):
# blank or comment; ``[section]`` or ``[section "subsection"]`` alone; ``name``
# or ``name = value`` (indented or not), the value without quotes, escapes,
# comments, tabs or runs of spaces; no includes (libgit2 follows them), no CR.
# What git itself writes looks so.
_SECTION = re.compile(rb'\[([A-Za-z0-9-]+)(?: "([^"\\]*)")?\]')
_VARIABLE = re.compile(rb"([A-Za-z][A-Za-z0-9-]*)[ ]*(?:=[ ]*(.*))?")
_NOT_PLAIN = re.compile(rb'["\\#;\t\r]|  ')
_INCLUDES = (b"include", b"includeif")


def _plain_file(path: Path, *, bare: bool = True) -> dict[str, str] | None:
    """``config_file``'s answer for a plain config file (see above), without
    libgit2; None for any other, or one that cannot be read (libgit2 says why).
    ``bare``: a ``name`` without ``=`` reads "true" (as libgit2 lists it); else
    None, libgit2's to answer (its lookup gives no value for one)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    values: dict[str, str] = {}
    section: bytes | None = None
    for raw in data.split(b"\n"):
        line = raw.strip(b" \t")  # (git indents with a tab)
        if not line or line[:1] in (b"#", b";"):
            if b"\r" in line or b"\\" in line:  # (a comment ending in ``\`` goes on)
                return None
            continue
        found = _SECTION.fullmatch(line)
        if found is not None:
            if found[1].lower() in _INCLUDES:
                return None
            section = found[1] if found[2] is None else found[1] + b"." + found[2]
            continue
        found = _VARIABLE.fullmatch(line)
        if found is None or section is None or _NOT_PLAIN.search(line):
            return None
        if found[2] is None and not bare:
            return None
        name = os.fsdecode(section + b"." + found[1]).lower()
        values[name] = "true" if found[2] is None else os.fsdecode(found[2].rstrip(b" "))
    return values


def _plain_chain(common_dir: Path | None, keys: tuple[str, ...]) -> dict[str, str] | None:
    """``keys`` (``section.name``) as the chain of ``config_files`` sets them, when
    every file in it is plain: the last file to set one wins. None otherwise."""
    if any(key.count(".") != 1 for key in keys):
        return None  # a subsection's name is case-sensitive: libgit2 compares those
    merged: dict[str, str] = {}
    for _level, path in config_files(common_dir):
        if not _is_regular(path):
            continue
        values = _plain_file(path, bare=False)
        if values is None:
            return None
        merged.update(values)
    return merged


def _config_chain(common_dir: Path | None) -> pygit2.Config | None:
    """The files of ``config_files`` as one libgit2 config (parser and includes).

    Only regular files are handed to libgit2, so a FIFO cannot block it.
    """
    import pygit2

    config = pygit2.Config()
    try:
        for level, path in config_files(common_dir):
            if _is_regular(path):
                config.add_file(str(path), level, force=True)
    except (pygit2.GitError, OSError, ValueError):
        return None
    return config


def _is_regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def _env_config(key: str) -> str | None:
    """``GIT_CONFIG_COUNT``/``KEY_n``/``VALUE_n``: git's command-line config, on top."""
    try:
        count = int(os.environ.get("GIT_CONFIG_COUNT") or 0)
    except ValueError:
        return None
    wanted = key.lower()
    found = None
    for n in range(count):
        if (os.environ.get(f"GIT_CONFIG_KEY_{n}") or "").lower() == wanted:
            found = os.environ.get(f"GIT_CONFIG_VALUE_{n}")
    return found


def git_bool(value: str) -> bool | None:
    """git's ``git_parse_maybe_bool``: yes/on/true/1 (any non-zero number), no/off/false/0/""."""
    text = value.strip().lower()
    if text in ("true", "yes", "on"):
        return True
    if text in ("false", "no", "off", ""):
        return False
    try:
        return int(text) != 0
    except ValueError:
        return None
