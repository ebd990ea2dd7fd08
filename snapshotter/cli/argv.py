"""Arguments read before click runs (the hook's fast path, the crash log)."""

from __future__ import annotations


def data_dir_option(args: list[str]) -> tuple[str | None, list[str]]:
    """A leading ``--data-dir DIR`` (or ``--data-dir=DIR``), and the arguments after it.

    Read without click: by the hook's fast path, and by the error handler,
    which logs a crash to the data directory the user named.
    """
    rest = list(args)
    if rest[:1] == ["--data-dir"] and len(rest) >= 2:
        return rest[1], rest[2:]
    if rest and rest[0].startswith("--data-dir="):
        return rest[0].split("=", 1)[1], rest[1:]
    return None, rest
