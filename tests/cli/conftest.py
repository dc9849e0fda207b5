"""The fixtures the mqd-proxy command tests share: the build's artefacts (--build BUILD), a
scratch directory per module and notes printed at the end (testing/python/pytest_fixtures.py),
and running a command as a user would (run_command.py)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "testing",
                                "python"))
from pytest_fixtures import (artefacts, note, pytest_addoption,  # noqa: E402,F401
                             pytest_configure, pytest_terminal_summary, scratch)
