"""The unit tier's own rule: a test here that starts a process fails."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest


def test_starting_a_process_fails_a_unit_test() -> None:
    with pytest.raises(AssertionError, match="functional tier"):
        subprocess.run([sys.executable, "-c", "pass"], check=False)
    with pytest.raises(AssertionError, match="functional tier"):
        os.system("true")
