"""LaunchedJob (testing/python/mpi_job.py) starting a job again after a failed start.

A rank of a failed start can outlive its launcher: under Slurm a node's slurmstepd kills it
only later, and a rank still in MPI_Init then finishes, writes its manifest and parks. The
next start must not read that rank's manifest for its own rank's (a 256-rank job took a dead
start's pid for rank 0 so, and attached the wrong process). Here a stand-in launcher plays
both starts, ordered by files, not by time: the first start leaves a straggler and fails; the
straggler writes its manifest once the second start's rank 0 has written its own, and only
then is the second start's rank 0 ready."""
import os
import sys
import textwrap

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "testing", "python"))

from mpi_job import LaunchedJob  # noqa: E402

# $1: the directory the start's ranks write to; $STATE: the test's own (which start this is).
LAUNCHER = textwrap.dedent("""\
    #!/bin/sh
    dir=$1
    wait_for() { while [ ! -e "$1" ]; do sleep 0.05; done; }
    if [ ! -e "$STATE/first" ]; then
      touch "$STATE/first"
      # The straggler: a rank of this start that finishes its start-up late.
      (wait_for "$STATE/second-wrote"
       echo '{"pid": 1, "start": 1}' > "$dir/rank-0.json"
       touch "$dir/rank-0.ready" "$STATE/straggler-wrote") </dev/null >/dev/null 2>&1 &
      echo "the first start fails"
      exit 1
    fi
    echo '{"pid": 2, "start": 2}' > "$dir/rank-0.json"
    touch "$STATE/second-wrote"
    wait_for "$STATE/straggler-wrote"
    touch "$dir/rank-0.ready"
    wait_for "$dir/stop"
    """)


def test_a_failed_starts_late_rank_is_not_the_next_starts(tmp_path):
    state = tmp_path / "state"
    work = tmp_path / "work"
    state.mkdir()
    work.mkdir()
    launcher = tmp_path / "launcher"
    launcher.write_text(LAUNCHER)
    launcher.chmod(0o755)
    env = dict(os.environ, STATE=str(state))

    job = LaunchedJob([str(launcher)], 1, str(work), "the stand-in job", env=env, starts=2)
    try:
        assert (state / "straggler-wrote").exists()
        assert [m["start"] for m in job.manifests] == [2]
        assert job.pids == [2]
        # The failed start's late ranks find its stop where they write, and exit.
        assert (work / "stop").exists()
        assert job.dir != str(work)
    finally:
        job.stop()
    assert job.proc.returncode == 0


def test_one_start_keeps_its_directory(tmp_path):
    launcher = tmp_path / "launcher"
    launcher.write_text("#!/bin/sh\necho '{\"pid\": 7}' > \"$1/rank-0.json\"\n"
                        "touch \"$1/rank-0.ready\"\n"
                        "while [ ! -e \"$1/stop\" ]; do sleep 0.05; done\n")
    launcher.chmod(0o755)
    job = LaunchedJob([str(launcher)], 1, str(tmp_path), "the stand-in job", starts=3)
    try:
        assert job.dir == str(tmp_path)
        assert job.pids == [7]
    finally:
        job.stop()
