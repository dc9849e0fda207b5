"""tests-hermetic: every test of this build runs without the tester's own mqd-proxy settings.

Reads the tests ctest knows (ctest --show-only=json-v1) and checks that each one's
ENVIRONMENT_MODIFICATION sets MQD_PROXY_CONFIG to empty (no configuration file) and
MQD_PROXY_STATE_DIR to off (no learned look-ups of the tester's), and unsets every other
MQD_PROXY_* variable the debugger side reads (found in the sources of the shim and the
client, so that a new setting without its reset fails here). tests/CMakeLists.txt explains
how the resets are applied.

usage: check-hermetic.py --build BUILD --source SOURCE
"""
import argparse
import glob
import json
import os
import re
import subprocess
import sys


# Variables reset to a value rather than unset: no configuration file; no learned look-ups
# shared through the default state directory in $HOME; the cost rule's read cost pinned, so
# that no verdict depends on the machine's speed.
SET_TO = {"MQD_PROXY_CONFIG": "", "MQD_PROXY_STATE_DIR": "off", "MQD_PROXY_READ_COST": "0"}


def client_variables(source):
    names = set()
    for pattern in ("proxy-client/**/*.cc", "proxy-client/**/*.h", "cli/*.cc", "replay/*.cc",
                    "shim/**/*.cc", "common/*.cc"):
        for path in glob.glob(os.path.join(source, pattern), recursive=True):
            names.update(re.findall(r'"(MQD_PROXY_[A-Z0-9_]+)"', open(path).read()))
    # Proxy error codes' names and the placeholder in a comment are no variables.
    return {n for n in names if not n.startswith("MQD_PROXY_ERR_") and n != "MQD_PROXY_X"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--source", required=True)
    args = ap.parse_args()
    shown = subprocess.run(["ctest", "--show-only=json-v1"], cwd=args.build,
                           stdout=subprocess.PIPE, check=True, text=True).stdout
    tests = json.loads(shown)["tests"]
    variables = client_variables(args.source)
    wanted = {"MQD_PROXY_CONFIG=set:"} | {"%s=unset:" % v for v in variables
                                          if v not in SET_TO}
    wanted |= {"%s=set:%s" % (v, value) for v, value in SET_TO.items() if v != "MQD_PROXY_CONFIG"}
    bad = []
    for test in tests:
        props = {p["name"]: p["value"] for p in test.get("properties", [])}
        have = set(props.get("ENVIRONMENT_MODIFICATION", []))
        missing = sorted(wanted - have)
        if missing:
            bad.append("%s: lacks %s" % (test["name"], ", ".join(missing)))
    print("%d tests, %d client variables (%s)" % (len(tests), len(variables),
                                                    ", ".join(sorted(variables))))
    if len(tests) < 2 or len(variables) < 5:
        print("FAIL: too few tests or variables found: the check itself is broken")
        return 1
    for line in bad:
        print("FAIL " + line)
    if bad:
        print("Call mqd_hermetic_tests() for them, or add the variable to MQD_TEST_ENV_RESET "
              "(tests/CMakeLists.txt).")
        return 1
    print("ok: every test resets them")
    return 0


if __name__ == "__main__":
    sys.exit(main())
