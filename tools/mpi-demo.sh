#!/usr/bin/env bash
# The main job: message queues of a live Open MPI job, through the proxy.
#
#   1. start mqd-proxy-server with the installed Open MPI MQD DLL on a private unix socket;
#   2. launch a 4-rank job (tests/e2e/pending) that leaves pending sends and receives on
#      MPI_COMM_WORLD, a dup, a split and a named communicator, and parks;
#   3. attach gdb to every rank, load the mqd front end and libmqdproxy.so, and print every
#      rank's queues;
#   4. stop the job and the server, leaving no process behind.
#
# Usage: tools/mpi-demo.sh [BUILD_DIR] [OPERATIONS_PER_RANK]   (defaults: build 8)
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
ops=${2:-8}
ranks=4
dll=$(ls /usr/lib/"$(gcc -print-multiarch)"/openmpi/lib/openmpi3/libompi_dbg_msgq.so)
work=$(mktemp -d)
server_pid= job_pid=

cleanup() {
  local status=$?
  touch "$work/stop"                                    # the ranks finalize and exit
  if [ -n "$job_pid" ]; then
    for _ in $(seq 100); do kill -0 "$job_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL -- "-$job_pid" 2>/dev/null || true        # only if they did not
    wait "$job_pid" 2>/dev/null || true
  fi
  if [ -n "$server_pid" ]; then kill -TERM "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
  exit $status
}
trap cleanup EXIT INT TERM

"$build/proxy-server/mqd-proxy-server" --listen "unix:$work/mqd.sock" --dll "$dll" \
  --ready-file "$work/server.ready" --log-file "$work/server.log" &
server_pid=$!

setsid mpirun --allow-run-as-root --oversubscribe -np $ranks --mca pml ob1 --mca btl self,vader \
  "$build/tests/e2e/pending" "$ops" "$work" > "$work/mpirun.log" 2>&1 &
job_pid=$!

for _ in $(seq 600); do
  [ -s "$work/server.ready" ] && [ "$(ls "$work"/rank-*.ready 2>/dev/null | wc -l)" = $ranks ] && break
  kill -0 "$job_pid" 2>/dev/null || { echo "mpi-demo: the MPI job ended early:"; cat "$work/mpirun.log"; exit 1; }
  sleep 0.1
done
[ -s "$work/server.ready" ] || { echo "mpi-demo: the server did not start"; cat "$work/server.log"; exit 1; }

echo "== mqd-proxy-server on $(cat "$work/server.ready"), serving $dll"
echo "== Open MPI job: $ranks ranks, $ops pending operations each; gdb attaches to every rank"
gdb_args=(-q -nx -batch -iex "set debuginfod enabled off")
for r in $(seq 0 $((ranks - 1))); do
  pid=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['pid'])" "$work/rank-$r.json")
  [ "$r" -gt 0 ] && gdb_args+=(-ex "add-inferior" -ex "inferior $((r + 1))")
  gdb_args+=(-ex "attach $pid")
done
gdb "${gdb_args[@]}" -ex "inferior 1" \
  -ex "source $build/share/mqd-proxy/gdb/mqd.py" \
  -ex "mqd load --server $(cat "$work/server.ready") --vendor-dll $dll $build/shim/libmqdproxy.so" \
  -ex "mqd dump --all" 2>&1 |
  grep -v -E '^\[|^(Reading|Downloading|warning: |Using host libthread_db|Added inferior)|^#?[0-9]*\s*0x[0-9a-f]+ in |^[0-9]+\s'
echo "== every queue above came from Open MPI's own DLL, run by mqd-proxy-server, through libmqdproxy.so"
