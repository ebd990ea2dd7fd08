"""docker-agent's hooks: the YAML block for an agent, printed to paste or added to one
agent of an agent file (``agents: NAME: hooks:``) without a YAML library."""

from __future__ import annotations

from pathlib import Path

from snapshotter.cli.agent_setup.config_files import Setup, read_text, write
from snapshotter.cli.agent_setup.hook_entry import HOOK_COMMAND, is_ours, timeout_s
from snapshotter.errors import SnapshotterError
from snapshotter.hooks.dialects import docker_agent


def block(indent: str = "", command: str = HOOK_COMMAND) -> str:
    """The ``hooks:`` mapping for an agent, as YAML, indented by ``indent``."""
    lines = ["hooks:"]
    dialect = docker_agent.DIALECT
    for event in dialect.events:
        tool = event in dialect.matchers
        hook = ["type: command", f"command: {command}", f"timeout: {timeout_s(dialect, event)}"]
        lines.append(f"  {event}:")
        if tool:
            lines += ['    - matcher: "*"', "      hooks:", f"        - {hook[0]}"]
            lines += [f"          {item}" for item in hook[1:]]
        else:
            lines += [f"    - {hook[0]}", *(f"      {item}" for item in hook[1:])]
    return "".join(f"{indent}{line}\n" for line in lines)


def setup(
    path: Path, agent: str | None, *, dry_run: bool = False, command: str = HOOK_COMMAND
) -> Setup:
    """Add the hooks to one agent of an agent YAML file (``agents: NAME: hooks:``)."""
    old_text = read_text(path)
    if not old_text:
        raise SnapshotterError(f"{path} is empty or missing; run without a file to print the block")
    lines = old_text.splitlines(keepends=True)
    start, end, indent, name = _agent_block(lines, agent, path)
    body = lines[start:end]
    if any(is_ours(line.partition("command:")[2].strip().strip("'\"")) for line in body):
        return Setup(path, old_text, changed=False)
    if any(line.startswith(f"{indent}hooks:") for line in body):
        raise SnapshotterError(
            f"agent {name!r} in {path} already has hooks of its own; add these "
            f"entries to them by hand (`snapshotter init docker-agent` prints them)"
        )
    while end > start and not lines[end - 1].strip():
        end -= 1  # keep blank lines after the agent where they were
    if lines[end - 1] and not lines[end - 1].endswith("\n"):
        lines[end - 1] += "\n"
    new_lines = [*lines[:end], block(indent, command), *lines[end:]]
    return write(path, old_text, "".join(new_lines), dry_run)


def _agent_block(lines: list[str], agent: str | None, path: Path) -> tuple[int, int, str, str]:
    """(first body line, end, the body's indent, name) of the agent to wire."""
    try:
        top = next(i for i, line in enumerate(lines) if line.rstrip() == "agents:")
    except StopIteration:
        raise SnapshotterError(f"{path} has no top-level `agents:` mapping") from None
    agents: list[tuple[str, int, int]] = []  # name, line, indent
    child_indent: int | None = None
    for i in range(top + 1, len(lines)):
        text = lines[i]
        if not text.strip() or text.lstrip().startswith("#"):
            continue
        indent = len(text) - len(text.lstrip(" "))
        if indent == 0:
            break
        if child_indent is None:
            child_indent = indent
        if indent == child_indent and text.rstrip().endswith(":"):
            agents.append((text.strip()[:-1].strip("'\""), i, indent))
    if not agents:
        raise SnapshotterError(f"{path} defines no agents under `agents:`")
    names = [a[0] for a in agents]
    wanted = agent or ("root" if "root" in names else names[0])
    if wanted not in names:
        raise SnapshotterError(f"no agent {wanted!r} in {path} (it has: {', '.join(names)})")
    k = names.index(wanted)
    _, line, indent = agents[k]
    end = agents[k + 1][1] if k + 1 < len(agents) else _block_end(lines, line, indent)
    body_indent = _body_indent(lines[line + 1 : end]) or indent + 2
    return line + 1, end, " " * body_indent, wanted


def _block_end(lines: list[str], line: int, indent: int) -> int:
    for i in range(line + 1, len(lines)):
        text = lines[i]
        if (
            text.strip()
            and not text.lstrip().startswith("#")
            and len(text) - len(text.lstrip(" ")) <= indent
        ):
            return i
    return len(lines)


def _body_indent(body: list[str]) -> int | None:
    for text in body:
        if text.strip() and not text.lstrip().startswith("#"):
            return len(text) - len(text.lstrip(" "))
    return None
