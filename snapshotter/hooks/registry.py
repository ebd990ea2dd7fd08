"""A hook registry and executor a Python runtime can adopt (docker-agent's shape).

Configuration is docker-agent's ``hooks:`` block: per event a list of hooks;
for tool events a list of ``{matcher, hooks}`` where ``matcher`` is a regex
over the tool name (``*`` for all). Hooks are ``type: builtin`` (a function
registered by name) or ``type: command`` (JSON on stdin, exit 2 blocks, other
non-zero exits are logged and ignored).
"""

from __future__ import annotations

import json
import logging
import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, Field

from snapshotter.hooks.events import TOOL_EVENTS
from snapshotter.hooks.wire import HookInput, HookOutput

log = logging.getLogger("snapshotter.hooks")

BuiltinFunc = Callable[[HookInput, list[str]], HookOutput | None]
DEFAULT_TIMEOUT_S = 60


class HookDefinition(BaseModel):
    type: Literal["builtin", "command"] = "command"
    command: str
    args: list[str] = Field(default_factory=list)
    timeout: int = DEFAULT_TIMEOUT_S
    name: str = ""
    working_dir: str = ""
    env: dict[str, str] = Field(default_factory=dict)


class MatcherConfig(BaseModel):
    matcher: str = "*"
    hooks: list[HookDefinition] = Field(default_factory=list)

    def matches(self, tool_name: str) -> bool:
        if self.matcher in ("", "*"):
            return True
        try:
            return re.fullmatch(self.matcher, tool_name) is not None
        except re.error:
            return False


class HooksConfig(BaseModel):
    """``event name → hooks``; tool events hold matcher groups instead."""

    events: dict[str, list[HookDefinition | MatcherConfig]] = Field(default_factory=dict)

    @classmethod
    def parse(cls, raw: dict[str, Any] | None) -> HooksConfig:
        """From the ``hooks:`` mapping of an agent configuration."""
        events: dict[str, list[HookDefinition | MatcherConfig]] = {}
        for event, items in (raw or {}).items():
            model = MatcherConfig if event in TOOL_EVENTS else HookDefinition
            events[event] = [model.model_validate(item) for item in items or []]
        return cls(events=events)

    def hooks_for(self, event: str, tool_name: str = "") -> list[HookDefinition]:
        found: list[HookDefinition] = []
        for item in self.events.get(event, []):
            if isinstance(item, MatcherConfig):
                if item.matches(tool_name):
                    found.extend(item.hooks)
            else:
                found.append(item)
        return found

    def has(self, event: str) -> bool:
        return bool(self.events.get(event))


@dataclass
class Result:
    """Aggregated verdict of every hook run for one event."""

    allowed: bool = True
    message: str = ""
    additional_context: str = ""
    system_message: str = ""
    exit_code: int = 0
    stderr: str = ""
    outputs: list[HookOutput] = field(default_factory=list)


class Registry:
    """Builtin hooks by name (the ``snapshot`` builtin registers here)."""

    def __init__(self) -> None:
        self._builtins: dict[str, BuiltinFunc] = {}

    def register_builtin(self, name: str, fn: BuiltinFunc) -> None:
        self._builtins[name] = fn

    def builtin(self, name: str) -> BuiltinFunc | None:
        return self._builtins.get(name)

    def names(self) -> list[str]:
        return sorted(self._builtins)


class Executor:
    def __init__(self, config: HooksConfig, registry: Registry, working_dir: str = "") -> None:
        self.config = config
        self.registry = registry
        self.working_dir = working_dir

    def dispatch(self, event: str, hook_input: HookInput) -> Result:
        """Run the hooks configured for ``event`` in order and aggregate them."""
        hook_input = hook_input.model_copy(
            update={"hook_event_name": event, "cwd": hook_input.cwd or self.working_dir}
        )
        result = Result()
        for hook in self.config.hooks_for(event, hook_input.tool_name):
            code, output, stderr = self._run(hook, hook_input)
            _merge(result, code, output, stderr)
        return result

    def _run(
        self, hook: HookDefinition, hook_input: HookInput
    ) -> tuple[int, HookOutput | None, str]:
        if hook.type == "builtin":
            fn = self.registry.builtin(hook.command)
            if fn is None:
                return 1, None, f"unknown builtin hook {hook.command!r}"
            try:
                return 0, fn(hook_input, hook.args), ""
            except Exception as exc:  # a builtin's bug must not stop the agent
                log.exception("builtin hook %s failed", hook.command)
                return 1, None, str(exc)
        return _run_command(hook, hook_input, self.working_dir)


def _run_command(
    hook: HookDefinition, hook_input: HookInput, working_dir: str
) -> tuple[int, HookOutput | None, str]:
    import os

    env = {**os.environ, **hook.env}
    try:
        done = subprocess.run(
            hook.command,
            shell=True,
            input=hook_input.model_dump_json(exclude_defaults=True),
            capture_output=True,
            text=True,
            timeout=hook.timeout,
            cwd=hook.working_dir or working_dir or hook_input.cwd or None,
            env=env,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return -1, None, f"hook timed out after {hook.timeout}s: {hook.command}"
    except OSError as exc:
        return -1, None, str(exc)
    output = _parse_output(done.stdout) if done.returncode == 0 else None
    return done.returncode, output, done.stderr


def _parse_output(stdout: str) -> HookOutput | None:
    text = stdout.strip()
    if not text:
        return None
    try:
        data = json.loads(text)
    except ValueError:
        # Plain stdout is additional context, as in docker-agent.
        return HookOutput.model_validate({"hook_specific_output": {"additional_context": text}})
    if not isinstance(data, dict):
        return None
    try:
        return HookOutput.model_validate(data)
    except ValueError:
        return None


def _merge(result: Result, code: int, output: HookOutput | None, stderr: str) -> None:
    if code == 2:
        result.allowed = False
        result.message = result.message or stderr.strip()
    elif code != 0:
        log.warning("hook exited %s: %s", code, stderr.strip())
    if code == 2 or (code != 0 and result.exit_code == 0):
        result.exit_code = code  # the worst seen: a block beats any other failure
    if stderr and code != 0:
        result.stderr += stderr
    if output is None:
        return
    result.outputs.append(output)
    if output.is_blocked():
        result.allowed = False
        result.message = result.message or output.reason or output.stop_reason
    if output.system_message:
        result.system_message = _join(result.system_message, output.system_message)
    specific = output.hook_specific_output
    if specific is not None and specific.additional_context:
        result.additional_context = _join(result.additional_context, specific.additional_context)


def _join(a: str, b: str) -> str:
    return f"{a}\n{b}" if a else b
