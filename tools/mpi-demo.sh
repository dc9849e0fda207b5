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
# Usage: tools/mpi-demo.sh [--installed PREFIX] [--check] [BUILD_DIR] [OPERATIONS_PER_RANK]
#                                                              (defaults: build 8)
#   --installed PREFIX  use the server, the shim and the front end (with its debug types) of an
#                       installation instead of BUILD_DIR's: PREFIX/bin/mqd-proxy-server,
#                       PREFIX/lib/<multiarch>/libmqdproxy.so, PREFIX/share/mqd-proxy/gdb/mqd.py
#                       (the .deb: --installed /usr). The MPI program, a test program that is
#                       never installed, still comes from BUILD_DIR.
#   --check             also dump every rank as JSON and check that it shows what each rank
#                       posted (the e2e tests' check, testing/python/mpi_job.py); exit 1 if it
#                       does not.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
prefix= check=
while [ $# -gt 0 ]; do
  case "$1" in
    --installed) prefix=$(cd "${2:?--installed needs a prefix}" && pwd); shift 2 ;;
    --check) check=1; shift ;;
    -*) echo "usage: tools/mpi-demo.sh [--installed PREFIX] [--check] [BUILD_DIR] [OPERATIONS_PER_RANK]" >&2; exit 2 ;;
    *) break ;;
  esac
done
build=$(cd "${1:-build}" && pwd)
ops=${2:-8}
ranks=4
multiarch=$(gcc -print-multiarch)
# Debian 12's Open MPI 4.1 (libopenmpi3) or Debian 13's Open MPI 5.0 (libopenmpi40)
dll=
for candidate in /usr/lib/"$multiarch"/openmpi/lib/openmpi{3,40}/libompi_dbg_msgq.so; do
  if [ -f "$candidate" ]; then dll=$candidate; break; fi
done
if [ -z "$dll" ]; then
  echo "mpi-demo: no Open MPI message-queue DLL under /usr/lib/$multiarch/openmpi/lib:" \
       "install libopenmpi3 (Debian 12) or libopenmpi40 (Debian 13)" >&2
  exit 1
fi
if [ -n "$prefix" ]; then
  server=$prefix/bin/mqd-proxy-server
  shim=$prefix/lib/$multiarch/libmqdproxy.so
  frontend=$prefix/share/mqd-proxy/gdb/mqd.py
else
  server=$build/proxy-server/mqd-proxy-server
  shim=$build/shim/libmqdproxy.so
  frontend=$build/share/mqd-proxy/gdb/mqd.py
fi
for f in "$server" "$shim" "$frontend" "$build/tests/e2e/pending"; do
  [ -e "$f" ] || { echo "mpi-demo: $f is missing"; exit 1; }
done
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

"$server" --listen "unix:$work/mqd.sock" --dll "$dll" \
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

echo "== $server on $(cat "$work/server.ready"), serving $dll"
echo "== Open MPI job: $ranks ranks, $ops pending operations each; gdb attaches to every rank"
gdb_args=(-q -nx -batch -iex "set debuginfod enabled off")
for r in $(seq 0 $((ranks - 1))); do
  pid=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['pid'])" "$work/rank-$r.json")
  [ "$r" -gt 0 ] && gdb_args+=(-ex "add-inferior" -ex "inferior $((r + 1))")
  gdb_args+=(-ex "attach $pid")
done
dump_json=()
[ -n "$check" ] && dump_json=(-ex "mqd dump --all --json --output $work/dump.json")
echo "== gdb: $frontend, loading $shim"
gdb "${gdb_args[@]}" -ex "inferior 1" \
  -ex "source $frontend" \
  -ex "mqd load --server $(cat "$work/server.ready") --vendor-dll $dll $shim" \
  -ex "mqd dump --all" "${dump_json[@]}" 2>&1 |
  grep -v -E '^\[|^(Reading|Downloading|warning: |Using host libthread_db|Added inferior)|^#?[0-9]*\s*0x[0-9a-f]+ in |^[0-9]+\s'
echo "== every queue above came from Open MPI's own DLL, run by mqd-proxy-server, through libmqdproxy.so"

if [ -n "$check" ]; then
  [ -s "$work/dump.json" ] || { echo "mpi-demo: FAIL: gdb wrote no JSON dump"; exit 1; }
  python3 - "$here/../testing/python" "$work" "$ranks" <<'EOF'
import json, os, sys
sys.path.insert(0, sys.argv[1])
from mpi_job import check_against_manifests
work, ranks = sys.argv[2], int(sys.argv[3])
dumps = json.load(open(os.path.join(work, "dump.json")))
manifests = [json.load(open(os.path.join(work, "rank-%d.json" % r))) for r in range(ranks)]
problems = check_against_manifests(dumps, manifests)
for p in problems[:50]:
    print("mpi-demo: FAIL: " + p)
operations = sum(len(q["operations"]) for d in dumps for c in d.get("communicators", [])
                 for q in c["queues"].values())
posted = sum(len(m["operations"]) for m in manifests)
print("== check: %d pending operations dumped, %d posted: %s"
      % (operations, posted, "FAIL" if problems else "every one as posted"))
sys.exit(1 if problems else 0)
EOF
fi
