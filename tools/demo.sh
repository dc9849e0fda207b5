#!/usr/bin/env bash
# The demo: a real mqd-proxy-server with the test DLL on a private unix socket, and the demo
# debugger printing the queues of a synthetic MPI process through libmqdproxy.so.
# Usage: tools/demo.sh [BUILD_DIR]   (default: build)
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
work=$(mktemp -d)
server_pid=
cleanup() {
  if [ -n "$server_pid" ]; then kill -TERM "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

"$build/proxy-server/mqd-proxy-server" \
  --listen "unix:$work/demo.sock" \
  --dll "$build/testing/testdll/libmqd_testdll_l3.so" \
  --ready-file "$work/ready" --log-file "$work/server.log" &
server_pid=$!
for _ in $(seq 100); do [ -s "$work/ready" ] && break; sleep 0.05; done
[ -s "$work/ready" ] || { echo "demo: the server did not start:"; cat "$work/server.log"; exit 1; }

echo "== mqd-proxy-server listening on $(cat "$work/ready"), serving the test DLL"
MQD_PROXY_SERVER=$(cat "$work/ready") "$build/testing/mqd-demo" --shim "$build/shim/libmqdproxy.so"
