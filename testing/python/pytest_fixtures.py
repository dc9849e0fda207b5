"""What every pytest test of this project's programs shares (tests/cli, tests/packaging): the
build under test, a scratch directory, and notes (timings, counts) printed at the end of the
run. A conftest.py takes them by importing them:

    from pytest_fixtures import (artefacts, note, pytest_addoption,  # noqa: F401
                                 pytest_configure, pytest_terminal_summary, scratch)

  --build BUILD   the build tree whose programs the tests run (BUILD/artefacts.json,
                  artefacts.py); ctest passes it. Without it, $MQD_BUILD.
  artefacts       that build's Artefacts (session): artefacts.require("cli"), ...
  scratch         a fresh directory per test module, named after the module's SCRATCH_PREFIX
                  ("mqd-test-" without one): removed when the module's tests passed, kept
                  (and named at the end) when one failed, or when MQD_KEEP is set
  note(text)      a line printed after the results ("notes" section), where a passing test's
                  measurements stay visible in ctest's output

Each test directory's conftest.py imports these hooks, so pytest calls them once per directory
when one run takes several (pytest-3 tests/cli tests/packaging): they do their work once.
"""
import os
import shutil
import tempfile

import pytest

from artefacts import Artefacts

_notes = pytest.StashKey()
_summarized = pytest.StashKey()


def pytest_addoption(parser):
    try:
        parser.addoption("--build", default=os.environ.get("MQD_BUILD"),
                         help="the build tree whose programs the tests run (default: $MQD_BUILD)")
    except ValueError:  # added by another directory's conftest.py in this run
        pass


def pytest_configure(config):
    if _notes not in config.stash:
        config.stash[_notes] = []


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if _summarized in config.stash:
        return
    config.stash[_summarized] = True
    notes = config.stash.get(_notes, [])
    if notes:
        terminalreporter.section("notes")
        for line in notes:
            terminalreporter.write_line(line)


@pytest.fixture(scope="session")
def artefacts(pytestconfig):
    build = pytestconfig.getoption("--build")
    if not build:
        pytest.fail("name the build tree: --build BUILD (or MQD_BUILD=BUILD)", pytrace=False)
    return Artefacts(os.path.abspath(build))


@pytest.fixture(scope="session")
def note(pytestconfig):
    return pytestconfig.stash[_notes].append


@pytest.fixture(scope="module")
def scratch(request, note):
    prefix = getattr(request.module, "SCRATCH_PREFIX", "mqd-test-")
    work = tempfile.mkdtemp(prefix=prefix)
    failed_before = request.session.testsfailed
    yield work
    if request.session.testsfailed > failed_before or os.environ.get("MQD_KEEP"):
        note("files of %s kept in %s" % (request.module.__name__, work))
    else:
        shutil.rmtree(work, ignore_errors=True)
