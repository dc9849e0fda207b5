"""Grouping ranks into classes at scale, and progress between two snapshots."""
import json
import time

from conftest import JobBuilder, knots, run_cli

from mqd_analysis import rankset


def test_ranges_in_words():
    assert rankset.ranges([5, 0, 1, 2, 3, 8, 9]) == "0-3, 5, 8-9"
    assert rankset.ranks_text([4]) == "rank 4"
    assert rankset.ranks_text(range(4, 64)) == "ranks 4-63"
    assert rankset.ranks_text([]) == "no rank"


def test_64_ranks_in_a_barrier_that_one_never_reached_are_two_classes():
    job = JobBuilder(64).call(0, "MPI_Recv").recv(0, 1, tag=7, length=4)
    for r in range(1, 64):
        job.call(r, "MPI_Barrier")
    a = job.analyse()
    assert knots(a) == [list(range(64))]
    assert [c.ranks for c in a.classes] == [[0], list(range(1, 64))]
    assert a.classes[1].label == "ranks 1-63"
    assert a.classes[1].description == "in MPI_Barrier on MPI_COMM_WORLD, waiting for rank 0"
    assert a.classes[1].knot == 0


def test_64_ranks_waiting_on_a_computing_rank():
    job = JobBuilder(64)
    for r in range(4, 64):
        job.call(r, "MPI_Barrier")
    for r in (0, 2, 3):
        job.call(r, "MPI_Recv").recv(r, 1, tag=2)
    a = job.analyse()
    assert a.verdict == "no deadlock"
    texts = {c.ranges: c.description for c in a.classes}
    assert texts["4-63"] == "in MPI_Barrier on MPI_COMM_WORLD, waiting for ranks 0-3"
    assert texts["1"] == "computing"
    assert texts["0, 2-3"].startswith("in MPI_Recv: receive from rank 1 on MPI_COMM_WORLD")


def test_1024_rank_ring_is_one_relative_class_and_quick():
    n = 1024
    job = JobBuilder(n)
    for r in range(n):
        job.call(r, "MPI_Send").send(r, (r + 1) % n, length=1 << 20 if r % 2 else 1 << 21)
    # Guards against a blow-up (exponential in the ranks), not a speed: this process's CPU
    # time, which a loaded machine's waiting does not count, against a bound far past it.
    started = time.process_time()
    a = job.analyse()
    assert time.process_time() - started < 300
    assert knots(a) == [list(range(n))]
    assert len(a.classes) == 1 and a.classes[0].relative
    assert a.classes[0].description == "in MPI_Send: send to rank+1 on MPI_COMM_WORLD (tag 1)"
    [cycle] = [f for f in a.findings if f.kind == "send-cycle"]
    assert "(1024 ranks)" in cycle.text


def test_1024_ranks_in_classes_for_the_picture_and_json(tmp_path):
    n = 1024
    job = JobBuilder(n).call(0, "MPI_Recv").recv(0, 1, tag=7, length=4)
    for r in range(1, n):
        job.call(r, "MPI_Barrier")
    status, out, err = run_cli("graph", job.write(tmp_path / "s.json"), "--json",
                               "--dot", tmp_path / "p.dot")
    assert status == 0, err
    d = json.loads(out)
    assert [c["ranges"] for c in d["classes"]] == ["0", "1-1023"]
    dot = (tmp_path / "p.dot").read_text()
    assert "ranks 1-1023 (1023)" in dot and "r5 " not in dot   # class nodes, not ranks


# ---- progress -------------------------------------------------------------------------------

def stuck_job():
    job = JobBuilder(4)
    for r in range(3):
        job.call(r, "MPI_Recv").recv(r, (r + 1) % 3, tag=1)
    return job


def test_same_snapshot_twice_is_stuck():
    a = stuck_job().analyse(earlier=stuck_job())
    assert a.progress.of("stuck") == [0, 1, 2]
    assert a.progress.of("running") == [3]
    assert a.progress.of("moved") == []


def test_changed_queues_or_call_is_moved():
    later = stuck_job()
    later.ranks[1]["communicators"][0]["queues"]["receives"]["operations"][0]["desired_tag"] = 2
    later.call(2, "MPI_Send").send(2, 3)
    later.ranks[2]["communicators"][0]["queues"]["receives"]["operations"] = []
    a = later.analyse(earlier=stuck_job())
    assert a.progress.of("stuck") == [0]
    assert a.progress.of("moved") == [1, 2]
    assert "MPI_Recv, then MPI_Send" in a.progress.changes[2]


def test_knot_rank_that_moved_is_flagged():
    earlier = stuck_job()
    earlier.ranks[0]["communicators"][0]["queues"]["receives"]["operations"][0]["buffer"] = 1
    a = stuck_job().analyse(earlier=earlier)
    assert "knot-moved" in {f.kind for f in a.findings}


def test_compare_from_the_command_line(tmp_path):
    first = stuck_job().write(tmp_path / "a.json")
    later = stuck_job()
    later.call(0, None)
    second = later.write(tmp_path / "b.json")
    status, out, err = run_cli("graph", first, "--compare", second, "--json")
    assert status == 0, err
    p = json.loads(out)["progress"]
    assert p["stuck"] == [1, 2] and p["running"] == [0, 3]
    status, out, _ = run_cli("graph", first, "--compare", second)
    assert "stuck (nothing changed): ranks 1-2" in out


def test_snapshots_of_different_jobs_are_refused(tmp_path):
    first = stuck_job().write(tmp_path / "a.json")
    other = stuck_job()
    for r in other.ranks.values():
        r["pid"] += 50000
    status, _, err = run_cli("graph", first, "--compare", other.write(tmp_path / "b.json"))
    assert status == 2 and "not of the same job" in err
