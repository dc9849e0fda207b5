#!/usr/bin/env bash
# packaging-install: `cmake --install` into a scratch prefix (no DESTDIR) puts every part where
# it belongs, the installed programs, unit and deadlock analysis (mqd-proxy graph, and gdb's
# front end loading it) are usable from there, and a tool built only
# against the installation (find_package(MqdProxy), tests/packaging/consumer) links the shim
# and talks through it to the installed server.
#
# Usage: install-consumer.sh BUILD_DIR SOURCE_DIR TEST_DLL --expect PATH [--expect PATH ...]
#   TEST_DLL  a vendor DLL for the installed server (the build's test DLL, level 3)
#   PATH      a file the installation must contain, relative to the prefix
# Leaves nothing behind; the scratch files stay in place (and are named) when it fails, with
# MQD_KEEP=1 also when it passes.
set -euo pipefail
build=$1 source=$2 testdll=$3
shift 3
expected=()
while [ $# -gt 0 ]; do
  [ "$1" = --expect ] || { echo "usage: install-consumer.sh BUILD SOURCE TEST_DLL --expect PATH..."; exit 2; }
  expected+=("$2")
  shift 2
done

work=$(mktemp -d /tmp/mqd-packaging-install.XXXXXX)
prefix=$work/prefix
server_pid=
passed=
cleanup() {
  if [ -n "$server_pid" ]; then kill -TERM "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  if [ -n "$passed" ] && [ -z "${MQD_KEEP:-}" ]; then rm -rf "$work"; else echo "(files kept in $work)"; fi
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

echo "== cmake --install $build --prefix $prefix"
cmake --install "$build" --prefix "$prefix" > "$work/install.log" 2>&1 ||
  { cat "$work/install.log"; fail "cmake --install failed"; }
for f in "${expected[@]}"; do
  [ -e "$prefix/$f" ] || fail "the installation lacks $f"
done
echo "ok: all ${#expected[@]} expected files installed"
# Nothing of the installation may point back into the build or source tree: no text file
# names them, no program or library has a run path there (debug information may name them).
# A path into a tree is looked for ("$build/"): a short tree name (the Debian 13 root's /build)
# is also part of other words ("build-ompi-types.sh").
if grep -rlIF -e "$build/" -e "$source/" "$prefix" > "$work/leaks" 2>/dev/null; then
  fail "installed files name the build or source tree: $(tr '\n' ' ' < "$work/leaks")"
fi
for elf in "$prefix"/bin/* "$prefix"/lib/*/libmqdproxy.so; do
  if readelf -d "$elf" | grep -E 'R(UN)?PATH' | grep -F -e "$build" -e "$source" >/dev/null; then
    fail "$elf has a run path into the build or source tree"
  fi
done
echo "ok: no installed text file or run path names the build or source tree"

"$prefix/bin/mqd-proxy-server" --version | grep '^mqd-proxy-server [0-9]' >/dev/null ||
  fail "the installed server does not print its version"
"$prefix/bin/mqd-proxy" --help | grep '^Usage: mqd-proxy' >/dev/null || fail "the installed mqd-proxy has no --help"
unit=$prefix/lib/systemd/system/mqd-proxy-server.service
grep -qx "ExecStart=$prefix/bin/mqd-proxy-server .*" "$unit" || fail "the unit does not run $prefix/bin/mqd-proxy-server"
grep -qx "EnvironmentFile=$prefix/etc/default/mqd-proxy-server" "$unit" || fail "the unit does not read $prefix/etc/default"
if command -v systemd-analyze > /dev/null; then
  # The unit's Documentation= names the man page, which verify looks up.
  MANPATH=$prefix/share/man: systemd-analyze verify "$unit" || fail "systemd-analyze verify $unit"
  echo "ok: systemd-analyze verify $unit"
  MANPATH=$prefix/share/man: systemd-analyze verify "${unit%.service}.socket" ||
    fail "systemd-analyze verify ${unit%.service}.socket"
  echo "ok: systemd-analyze verify ${unit%.service}.socket"
else
  echo "(systemd-analyze not installed: the unit is not verified)"
fi

echo "== the deadlock analysis from the installation"
# mqd-proxy graph runs the analysis installed beside it (share/mqd-proxy/analysis), and gdb's
# front end imports the same; neither writes bytecode into the installation.
status=0
"$prefix/bin/mqd-proxy" graph "$source/tests/unit/data/replay-dump.json" > "$work/graph.txt" 2>&1 || status=$?
[ "$status" = 0 ] || { cat "$work/graph.txt"; fail "the installed mqd-proxy graph exited with $status"; }
grep -q '^NO DEADLOCK FOUND' "$work/graph.txt" || { cat "$work/graph.txt"; fail "the installed mqd-proxy graph printed no verdict"; }
echo "ok: the installed mqd-proxy graph runs the installed analysis"
if command -v gdb > /dev/null; then
  loaded=$(gdb -q -nx -batch -ex "source $prefix/share/mqd-proxy/gdb/mqd.py" \
    -ex "python from mqd_gdb import analysis; print(analysis.load().__file__)" 2>&1)
  [ "$loaded" = "$prefix/share/mqd-proxy/analysis/mqd_analysis/__init__.py" ] ||
    fail "the installed gdb front end does not load the installed analysis: $loaded"
  echo "ok: the installed gdb front end loads the installed analysis"
fi
pycache=$(find "$prefix/share/mqd-proxy" -name __pycache__)
[ -z "$pycache" ] || fail "bytecode written into the installation: $pycache"

echo "== a consumer built with find_package(MqdProxy) against $prefix only"
cmake -S "$source/tests/packaging/consumer" -B "$work/consumer" -DCMAKE_PREFIX_PATH="$prefix" \
  > "$work/consumer.log" 2>&1 || { cat "$work/consumer.log"; fail "configuring the consumer"; }
cmake --build "$work/consumer" >> "$work/consumer.log" 2>&1 ||
  { cat "$work/consumer.log"; fail "building the consumer"; }
consumer=$work/consumer/consumer
readelf -d "$consumer" | grep 'NEEDED.*\[libmqdproxy\.so\]' >/dev/null || fail "the consumer does not link libmqdproxy.so"
# The shim it runs with must be the installed one.
ldd "$consumer" | grep -F "$prefix/lib/" >/dev/null || fail "the consumer does not load the installed shim: $(ldd "$consumer")"

echo "-- without a server: the shim's own answer"
MQD_PROXY_SERVER=unix:$work/nobody.sock MQD_PROXY_TIMEOUT=5 "$consumer" "mqd-proxy " ||
  fail "the consumer without a server"

echo "-- through the installed server, serving the test DLL"
"$prefix/bin/mqd-proxy-server" --listen "unix:$work/server.sock" --dll "$testdll" --state-dir none \
  --ready-file "$work/server.ready" --log-file "$work/server.log" &
server_pid=$!
# Ready within the slack of a loaded machine (60 s); the ready file, or the end, stops the wait.
deadline=$((SECONDS + 60))
while [ $SECONDS -lt $deadline ]; do
  [ -s "$work/server.ready" ] && break
  kill -0 "$server_pid" 2>/dev/null || break
  sleep 0.05
done
[ -s "$work/server.ready" ] || { cat "$work/server.log"; fail "the installed server did not start"; }
MQD_PROXY_SERVER=$(cat "$work/server.ready") "$consumer" "mqd-proxy test DLL 1.0 (level 3)" ||
  fail "the consumer through the server"
kill -TERM "$server_pid"
status=0
wait "$server_pid" || status=$?
server_pid=
[ "$status" = 0 ] || fail "the installed server exited with $status on SIGTERM"
echo "ok: the consumer links the installed shim and reaches the installed server through it"
passed=1
