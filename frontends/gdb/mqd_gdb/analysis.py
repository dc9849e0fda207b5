"""The deadlock analysis, the package mqd_analysis, as `mqd snapshot` and `mqd graph` use it in
gdb's own Python: load() imports it, on first use only (the front end's other commands work
without it).

It is looked for in analysis/ next to the front end's directory (the one holding mqd.py): an
installation and a build (BUILD/share/mqd-proxy) put it in share/mqd-proxy/analysis beside
share/mqd-proxy/gdb, and the source tree has frontends/analysis beside frontends/gdb. One
already imported from elsewhere (another copy of the front end sourced before) is replaced.
Python writes no bytecode next to it (an installed copy is package data, removed whole).
"""
import importlib
import os
import sys
import types

from .errors import MqdError

# The directory of mqd.py, which holds this package.
FRONTEND_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ANALYSIS_DIR = os.path.normpath(os.path.join(FRONTEND_DIR, "..", "analysis"))

PACKAGE = "mqd_analysis"


def _loaded_from(init_file: str) -> str:
    """The directory that holds the package whose __init__.py is `init_file`."""
    return os.path.dirname(os.path.dirname(os.path.abspath(init_file)))


def load() -> types.ModuleType:
    """The mqd_analysis package; MqdError with a sentence when it is not installed."""
    module = sys.modules.get(PACKAGE)
    init_file = getattr(module, "__file__", None)
    if module is not None and init_file and _loaded_from(init_file) == ANALYSIS_DIR:
        return module
    if not os.path.isfile(os.path.join(ANALYSIS_DIR, PACKAGE, "__init__.py")):
        raise MqdError("the deadlock analysis (the Python package %s) is not installed: it is "
                       "not in %s" % (PACKAGE, ANALYSIS_DIR))
    for name in [n for n in sys.modules if n == PACKAGE or n.startswith(PACKAGE + ".")]:
        del sys.modules[name]
    if ANALYSIS_DIR in sys.path:
        sys.path.remove(ANALYSIS_DIR)
    sys.path.insert(0, ANALYSIS_DIR)
    writes_bytecode = sys.dont_write_bytecode
    sys.dont_write_bytecode = True
    try:
        module = importlib.import_module(PACKAGE)
        # Every module the commands use, now, while no bytecode is written.
        for sub in ("snapshot", "outputs"):
            importlib.import_module(PACKAGE + "." + sub)
        return module
    except ImportError as e:
        raise MqdError("the deadlock analysis in %s cannot be loaded: %s" % (ANALYSIS_DIR, e))
    finally:
        sys.dont_write_bytecode = writes_bytecode
