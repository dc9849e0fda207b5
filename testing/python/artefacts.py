"""Where a build put what the tests and benchmarks run: BUILD/artefacts.json, written by
CMake (tests/CMakeLists.txt) from the targets themselves, so no script knows the build's
layout.

    from artefacts import Artefacts
    a = Artefacts("build")
    a.server, a.shim, a.cli, a.relay, a.testdll_l3, a.pending, a.frontend, ...

An artefact the build does not make (no MPI, a cross build) is None; asking for one that
a test needs raises a sentence that says which.
"""
import json
import os


class Artefacts:
    def __init__(self, build):
        path = os.path.join(build, "artefacts.json")
        try:
            with open(path) as f:
                self._paths = json.load(f)
        except OSError as e:
            raise SystemExit("%s: %s (configure the build with MQD_TESTS=ON)" % (path, e.strerror))
        self.build = build

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            value = self._paths[name]
        except KeyError:
            raise AttributeError("no artefact named %r in artefacts.json" % name) from None
        return value or None

    def require(self, name):
        """The path of artefact `name`, which this build must have made."""
        value = getattr(self, name)
        if not value:
            raise SystemExit("this build has no %s (%s/artefacts.json)" % (name, self.build))
        return value
