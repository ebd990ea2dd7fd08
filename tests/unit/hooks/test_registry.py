"""snapshotter/hooks/registry.py: configured hooks found per event, their verdicts merged.

Command hooks (processes) are tests/functional/test_registry.py's; here builtins stand
in for them, and a command's stdout is read by ``_parse_output`` directly.
"""

from __future__ import annotations

import pytest

from snapshotter.hooks import registry
from snapshotter.hooks.registry import Executor, HooksConfig, MatcherConfig, Registry
from snapshotter.hooks.wire import HookInput, HookOutput

Expected = dict[str, object] | None


def answer(output: HookOutput | None) -> registry.BuiltinFunc:
    """A builtin that answers ``output`` whatever it is asked."""
    return lambda _input, _args: output


def answering(*outputs: HookOutput | None) -> tuple[HooksConfig, Registry]:
    """A turn_start configured with one builtin per answer, in order."""
    found = Registry()
    hooks = []
    for n, output in enumerate(outputs):
        found.register_builtin(f"h{n}", answer(output))
        hooks.append({"type": "builtin", "command": f"h{n}"})
    return HooksConfig.parse({"turn_start": hooks}), found


def test_parse_reads_tool_events_as_matcher_groups() -> None:
    config = HooksConfig.parse(
        {
            "pre_tool_use": [{"matcher": "Edit|Write", "hooks": [{"command": "a"}]}],
            "turn_end": [{"command": "b", "timeout": 5}],
            "session_end": None,
        }
    )
    assert [h.command for h in config.hooks_for("pre_tool_use", "Edit")] == ["a"]
    assert config.hooks_for("pre_tool_use", "Editor") == [], "the whole name must match"
    (end,) = config.hooks_for("turn_end")
    assert (end.type, end.timeout) == ("command", 5)
    assert config.has("turn_end") and not config.has("session_end") and not config.has("x")
    assert HooksConfig.parse(None).events == {}


@pytest.mark.parametrize(
    ("matcher", "tool", "matches"),
    [
        ("", "x", True),
        ("*", "x", True),
        ("sh.*", "shell", True),
        ("sh", "shell", False),
        ("(", "(", False),
    ],
)
def test_a_matcher_is_a_regex_over_the_whole_tool_name(
    matcher: str, tool: str, matches: bool
) -> None:
    assert MatcherConfig(matcher=matcher).matches(tool) is matches


def test_messages_and_context_of_every_hook_are_joined() -> None:
    config, found = answering(
        HookOutput(system_message="one"),
        None,
        HookOutput.model_validate(
            {"system_message": "two", "hook_specific_output": {"additional_context": "ctx"}}
        ),
    )
    result = Executor(config, found).dispatch("turn_start", HookInput())
    assert result.allowed and result.exit_code == 0
    assert result.system_message == "one\ntwo" and result.additional_context == "ctx"
    assert len(result.outputs) == 2


def test_a_block_or_a_stop_disallows_with_the_first_reason() -> None:
    config, found = answering(
        HookOutput(decision="block", reason="first"),
        HookOutput.model_validate({"continue": False, "stop_reason": "second"}),
    )
    result = Executor(config, found).dispatch("turn_start", HookInput())
    assert not result.allowed and result.message == "first"
    config, found = answering(HookOutput.model_validate({"continue": False, "stop_reason": "s"}))
    assert Executor(config, found).dispatch("turn_start", HookInput()).message == "s"


def test_a_block_exit_beats_any_other_failure() -> None:
    result = registry.Result()
    registry._merge(result, 1, None, "bug\n")
    registry._merge(result, 2, None, "denied\n")
    registry._merge(result, 3, None, "later\n")
    assert (result.allowed, result.exit_code, result.message) == (False, 2, "denied")
    assert result.stderr == "bug\ndenied\nlater\n"
    clean = registry.Result()
    registry._merge(clean, 0, None, "chatter on success")
    assert clean.stderr == "" and clean.exit_code == 0


@pytest.mark.parametrize(
    ("stdout", "expected"),
    [
        ("", None),
        ("  \n", None),
        ("plain words\n", {"hook_specific_output": {"additional_context": "plain words"}}),
        ('{"decision": "block", "reason": "no"}', {"decision": "block", "reason": "no"}),
        ("[1, 2]", None),
        ('{"continue": "perhaps"}', None),
    ],
)
def test_a_commands_stdout_is_json_or_context(
    stdout: str, expected: dict[str, object] | None
) -> None:
    found = registry._parse_output(stdout)
    if expected is None:
        assert found is None
    else:
        assert found is not None
        assert found.model_dump(exclude_defaults=True, exclude_none=True) == expected
