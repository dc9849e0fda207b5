"""The wait-for rules and the deadlock verdict, one rule at a time, on hand-built snapshots."""
from conftest import JobBuilder, findings, kinds, knots

from mqd_analysis import model


def ring(job, ranks, call, build):
    for r in ranks:
        job.call(r, call)
        build(r, ranks[(ranks.index(r) + 1) % len(ranks)])


# ---- point-to-point -------------------------------------------------------------------------

def test_receive_from_a_specific_source_waits_on_that_rank_only():
    job = JobBuilder(4).call(0, "MPI_Recv").recv(0, 2, tag=9)
    a = job.analyse()
    rm = a.model.ranks[0]
    assert rm.status == model.Status.BLOCKED
    assert [w.targets for w in rm.waits] == [(2,)]
    assert rm.edge_kind(rm.waits[0], 2) == "AND"
    assert a.verdict == "no deadlock"          # rank 2 computes: it can still send


def test_cycle_of_receives_is_a_knot():
    job = JobBuilder(4)
    ring(job, [0, 1, 2, 3], "MPI_Recv", lambda r, n: job.recv(r, n))
    a = job.analyse()
    assert a.verdict == "deadlock" and knots(a) == [[0, 1, 2, 3]]
    assert "receive-cycle" in kinds(a)


def test_cycle_of_pending_sends_is_a_knot_explained_as_such():
    job = JobBuilder(3)
    ring(job, [0, 1, 2], "MPI_Send", lambda r, n: job.send(r, n, length=1 << 20))
    a = job.analyse()
    assert knots(a) == [[0, 1, 2]]
    [cycle] = findings(a, "send-cycle")
    assert "0 → 1 → 2 → 0" in cycle.text and "1048576 bytes" in cycle.text


def test_pending_send_waits_on_its_receiver_which_computes():
    job = JobBuilder(2).call(0, "MPI_Send").send(0, 1)
    a = job.analyse()
    assert a.model.ranks[0].waits[0].kind == model.WaitKind.SEND
    assert a.verdict == "no deadlock"


def test_two_separate_cycles_are_two_knots_and_the_rest_is_free():
    job = JobBuilder(6)
    ring(job, [0, 1], "MPI_Recv", lambda r, n: job.recv(r, n))
    ring(job, [3, 4], "MPI_Send", lambda r, n: job.send(r, n))
    a = job.analyse()
    assert knots(a) == [[0, 1], [3, 4]]
    assert a.model.ranks[2].status == model.Status.COMPUTING
    assert {f.knot for f in a.findings if f.knot is not None} == {0, 1}


def test_a_rank_waiting_on_a_knot_is_in_it_but_not_in_its_core():
    job = JobBuilder(4)
    ring(job, [0, 1], "MPI_Recv", lambda r, n: job.recv(r, n))
    job.call(3, "MPI_Recv").recv(3, 0)
    a = job.analyse()
    [k] = a.knots
    assert k.ranks == [0, 1, 3] and k.cores == [[0, 1]] and k.dependents == [3]
    assert "blocked-behind" in kinds(a)
    assert "blocked-elsewhere" in kinds(a)


def test_receive_from_oneself_is_a_knot_of_one():
    job = JobBuilder(2).call(1, "MPI_Recv").recv(1, 1)
    a = job.analyse()
    assert knots(a) == [[1]]


# ---- wildcards and OR waits -------------------------------------------------------------------

def test_wildcard_receive_waits_on_every_other_member_as_an_or():
    job = JobBuilder(4).call(0, "MPI_Recv").recv_any(0)
    rm = job.analyse().model.ranks[0]
    [w] = rm.waits
    assert w.any_source and w.need == model.Need.OR and w.targets == (1, 2, 3)
    assert {rm.edge_kind(w, t) for t in w.targets} == {"OR"}


def test_any_source_as_minus_one_is_a_wildcard_too():
    job = JobBuilder(3).call(0, "MPI_Recv").recv_any(0)
    op = job.ranks[0]["communicators"][0]["queues"]["receives"]["operations"][0]
    op["desired_local_rank"] = -1
    assert job.analyse().model.ranks[0].waits[0].targets == (1, 2)


def test_wildcards_deadlock_when_nobody_is_left_to_send():
    job = JobBuilder(3)
    for r in range(3):
        job.call(r, "MPI_Recv").recv_any(r)
    a = job.analyse()
    assert knots(a) == [[0, 1, 2]]
    assert "wildcard-blocked" in kinds(a)


def test_cycle_broken_by_a_wildcard_through_a_computing_rank_is_not_a_deadlock():
    # 0 waits for anyone, 1 for 0, 2 for 1: a cycle 0 <-> 1, but rank 3 computes and can
    # send to 0.
    job = JobBuilder(4).call(0, "MPI_Recv").recv_any(0)
    job.call(1, "MPI_Recv").recv(1, 0).call(2, "MPI_Recv").recv(2, 1)
    a = job.analyse()
    assert a.verdict == "no deadlock" and knots(a) == []
    [f] = findings(a, "cycle-broken")
    assert "rank 3, which is computing" in f.text


def test_or_wait_released_through_a_chain_is_not_a_deadlock():
    # 0 waits for 1 or 2; 1 waits for 0; 2 waits for 3, which computes: 3 releases 2,
    # 2 releases 0, 0 releases 1.
    job = JobBuilder(4).call(0, "MPI_Waitany").recv(0, 1).recv(0, 2)
    job.call(1, "MPI_Recv").recv(1, 0).call(2, "MPI_Recv").recv(2, 3)
    a = job.analyse()
    assert a.verdict == "no deadlock"
    assert all(a.evaluation.can[r] for r in range(4))


def test_waitall_is_an_and_waitany_an_or():
    def job(call):
        j = JobBuilder(4).call(0, call).recv(0, 1).recv(0, 3)
        return j.call(1, "MPI_Recv").recv(1, 0)   # rank 3 computes
    waitall = job("MPI_Waitall").analyse()
    assert waitall.model.ranks[0].combine == model.Need.AND
    assert knots(waitall) == [[0, 1]]
    waitany = job("MPI_Waitany").analyse()
    assert waitany.model.ranks[0].combine == model.Need.OR
    assert waitany.verdict == "no deadlock"
    assert "cycle-broken" in kinds(waitany)
    waitsome = job("MPI_Waitsome").analyse()
    assert waitsome.verdict == "no deadlock"


def test_single_request_call_with_several_pending_operations_waits_on_any_of_them():
    # MPI_Wait holds one request, which the queues cannot tell: any of them may be it.
    job = JobBuilder(3).call(0, "MPI_Wait").recv(0, 1).recv(0, 2)
    job.call(1, "MPI_Recv").recv(1, 0)
    a = job.analyse()
    assert a.model.ranks[0].combine == model.Need.OR
    assert a.verdict == "no deadlock"


def test_sendrecv_needs_both_its_send_and_its_receive():
    job = JobBuilder(3).call(0, "MPI_Sendrecv").send(0, 1).recv(0, 2)
    job.call(1, "MPI_Recv").recv(1, 0)      # rank 1 never receives from 0's send
    a = job.analyse()
    assert a.model.ranks[0].combine == model.Need.AND
    assert knots(a) == [[0, 1]]


def test_matched_receive_is_satisfied():
    job = JobBuilder(2).call(0, "MPI_Recv").recv(0, 1, status="matched")
    job.call(1, "MPI_Recv").recv(1, 0)
    a = job.analyse()
    assert a.verdict == "no deadlock"
    assert a.model.ranks[0].waits[0].in_progress


def test_open_mpi_shows_waited_on_requests_complete_and_they_are_pending():
    job = JobBuilder(2).call(0, "MPI_Waitall").recv(0, 1, status="complete")
    job.call(1, "MPI_Recv").recv(1, 0)
    a = job.analyse()
    assert knots(a) == [[0, 1]]
    assert "shown-complete" in kinds(a)
    # A send the PML completed says so: it is complete.
    done = JobBuilder(2).call(0, "MPI_Waitall").send(0, 1, status="complete", extra=[
        "Send: 0x1", "Data transfer completed", "MPI_", "", ""])
    done.call(1, "MPI_Recv").recv(1, 0)
    assert done.analyse().verdict == "no deadlock"
    # Another MPI's DLL means what it says.
    other = JobBuilder(2, dll="MPICH message queue DLL").call(0, "MPI_Waitall")
    other.recv(0, 1, status="complete").call(1, "MPI_Recv").recv(1, 0)
    assert other.analyse().verdict == "no deadlock"


# ---- mismatches -----------------------------------------------------------------------------

def test_tag_mismatch_is_named():
    job = JobBuilder(2).call(0, "MPI_Send").send(0, 1, tag=5)
    job.call(1, "MPI_Recv").recv(1, 0, tag=6)
    a = job.analyse()
    assert knots(a) == [[0, 1]]
    [f] = findings(a, "tag-mismatch")
    assert "tag 5" in f.text and "tag 6" in f.text and f.ranks == [0, 1]
    assert "%d bytes" % (1 << 20) in f.text


def test_lengths_are_bytes_only_for_open_mpis_dll():
    # MPICH's DLL gives counts of elements: the words say "length N", as the dump does, and
    # no eager-limit reasoning (a fact of Open MPI's transports in bytes) is made of them.
    job = JobBuilder(2, dll="MPICH message queue DLL").call(0, "MPI_Send").send(0, 1, tag=5)
    job.call(1, "MPI_Recv").recv(1, 0, tag=6)
    [f] = findings(job.analyse(), "tag-mismatch")
    assert "length %d" % (1 << 20) in f.text and "bytes" not in f.text
    cycle = JobBuilder(3, dll="MPICH message queue DLL")
    ring(cycle, [0, 1, 2], "MPI_Send", lambda r, n: cycle.send(r, n, length=1 << 20))
    a = cycle.analyse()
    [text] = [f.text for f in findings(a, "send-cycle")]
    assert "bytes" not in text and "eager" not in text
    assert "length %d" % (1 << 20) in a.model.ranks[0].describe(a.model.world)


def test_any_tag_receive_is_no_tag_mismatch():
    job = JobBuilder(2).call(0, "MPI_Send").send(0, 1, tag=5)
    job.call(1, "MPI_Recv").recv(1, 0, any_tag=True)
    assert "tag-mismatch" not in kinds(job.analyse())


def test_communicator_mismatch_is_named():
    job = JobBuilder(2).comm(3, "MPI COMMUNICATOR 3 DUP FROM 0", [0, 1])
    job.call(0, "MPI_Send").send(0, 1, tag=5, comm="MPI COMMUNICATOR 3 DUP FROM 0")
    job.call(1, "MPI_Recv").recv(1, 0, tag=5)
    a = job.analyse()
    [f] = findings(a, "communicator-mismatch")
    assert "MPI COMMUNICATOR 3 DUP FROM 0" in f.text and "MPI_COMM_WORLD" in f.text


def test_unexpected_message_with_another_tag_is_named_when_the_dll_shows_it():
    job = JobBuilder(2).call(0, "MPI_Recv").recv(0, 1, tag=7)
    job.call(1, "MPI_Recv").recv(1, 0, tag=8)
    job.op(1, "unexpected", 0, 9, length=4)
    job.ranks[1]["communicators"][0]["queues"]["unexpected"]["rc"] = 2
    a = job.analyse()
    assert any("unexpected at rank 1" in f.text for f in findings(a, "tag-mismatch"))


# ---- collectives ----------------------------------------------------------------------------

def test_collective_waits_on_members_that_did_not_reach_it():
    job = JobBuilder(4)
    for r in (1, 2, 3):
        job.call(r, "MPI_Barrier")
    job.call(0, "MPI_Recv").recv(0, 1, tag=7, length=4)
    a = job.analyse()
    assert [w.targets for w in a.model.ranks[2].waits] == [(0,)]
    assert knots(a) == [[0, 1, 2, 3]]
    [f] = findings(a, "collective-not-reached")
    assert f.text.startswith("ranks 1-3 are in MPI_Barrier on MPI_COMM_WORLD")
    assert "rank 0 never reached it" in f.text
    assert "collective-communicator-inferred" in kinds(a)


def test_collective_that_everyone_reached_is_not_blocked():
    job = JobBuilder(3)
    for r in range(3):
        job.call(r, "MPI_Allreduce")
    a = job.analyse()
    assert a.verdict == "no deadlock"
    assert all(a.evaluation.can[r] for r in range(3))


def test_collective_waiting_on_a_computing_rank_is_slow_not_dead():
    job = JobBuilder(4)
    for r in (1, 2, 3):
        job.call(r, "MPI_Barrier")
    a = job.analyse()
    assert a.verdict == "no deadlock"
    assert a.classes[1].description == "in MPI_Barrier on MPI_COMM_WORLD, waiting for rank 0"


def test_different_collectives_on_the_same_ranks_are_named():
    job = JobBuilder(3).call(0, "MPI_Bcast").call(1, "MPI_Barrier").call(2, "MPI_Barrier")
    a = job.analyse()
    assert knots(a) == [[0, 1, 2]]
    assert "collective-mismatch" in kinds(a)


def test_collective_traffic_is_named_by_tag_and_gives_the_communicator():
    # A DLL that shows internal requests: the barrier's point-to-point traffic (tag -16) on a
    # split communicator {0, 1}; ranks 2 and 3 are on the other half and irrelevant.
    job = JobBuilder(4).comm(5, "even-odd", [0, 1]).comm(5, "even-odd", [2, 3])
    job.call(0, "MPI_Barrier").recv(0, 1, tag=-16, comm="even-odd", length=0)
    job.call(1, "MPI_Recv").recv(1, 0, tag=3)
    job.call(2, "MPI_Barrier")
    a = job.analyse()
    [w] = a.model.ranks[0].waits
    assert w.kind == model.WaitKind.COLLECTIVE and w.collective == "MPI_Barrier"
    assert w.comm == "even-odd" and w.targets == (1,) and not w.comm_inferred
    # No point-to-point edge for the barrier's own traffic.
    assert all(x.kind != model.WaitKind.RECEIVE for x in a.model.ranks[0].waits)
    assert knots(a) == [[0, 1]]
    assert a.evaluation.can[3] is True


def test_collective_tags_are_named():
    from mqd_analysis import openmpi
    assert openmpi.collective_of_tag(-16) == "MPI_Barrier"
    assert openmpi.collective_of_tag(-17) == "MPI_Bcast"
    assert openmpi.collective_of_tag(-31079) == "communicator creation (barrier)"
    assert openmpi.collective_of_tag(-30) == "a nonblocking collective"
    assert openmpi.collective_of_tag(5) is None
    assert openmpi.collective_of_tag(-1) is None     # MPI_ANY_TAG


def test_nonblocking_collective_under_mpi_wait():
    job = JobBuilder(3).call(0, "MPI_Wait").recv(0, 1, tag=-27, length=0)
    job.call(1, "MPI_Wait").recv(1, 2, tag=-27, length=0)
    job.call(2, "MPI_Recv").recv(2, 0, tag=4)
    a = job.analyse()
    assert a.model.ranks[0].waits[0].kind == model.WaitKind.COLLECTIVE
    assert a.model.ranks[0].waits[0].targets == (2,)
    assert knots(a) == [[0, 1, 2]]


# ---- finished, finalizing and unknown ranks ---------------------------------------------------

def test_receive_from_a_finished_rank():
    job = JobBuilder(3).set(0, finished=True, communicators=None)
    job.call(1, "MPI_Recv").recv(1, 0, tag=3)
    a = job.analyse()
    assert knots(a) == [[1]]                    # the finished rank is not blocked
    [f] = findings(a, "waits-for-finished")
    assert "rank 0 has finished" in f.text


def test_receive_from_a_rank_in_mpi_finalize():
    job = JobBuilder(4)
    for r in (0, 2, 3):   # the innermost MPI call comes from the frames
        job.ranks[r]["state"] = {"frames": ["sched_yield", "ompi_mpi_finalize", "main"]}
    job.call(1, "MPI_Recv").recv(1, 0, tag=3)
    a = job.analyse()
    assert a.model.ranks[0].status == model.Status.FINALIZING
    assert knots(a) == [[0, 1, 2, 3]]
    assert {"waits-for-finished", "collective-not-reached"} <= kinds(a)


def test_finalizing_ranks_waiting_on_a_computing_rank_are_not_deadlocked():
    job = JobBuilder(3).call(0, "MPI_Finalize").call(1, "MPI_Finalize")
    assert job.analyse().verdict == "no deadlock"


def test_rank_in_a_nonblocking_call_is_computing():
    job = JobBuilder(2).call(0, "MPI_Test").recv(0, 1).call(1, "MPI_Recv").recv(1, 0)
    a = job.analyse()
    assert a.model.ranks[0].status == model.Status.COMPUTING
    assert a.verdict == "no deadlock"


def test_probe_waits_for_nothing_visible_and_gives_no_certain_verdict():
    job = JobBuilder(2).call(0, "MPI_Probe").call(1, "MPI_Recv").recv(1, 0)
    a = job.analyse()
    assert a.model.ranks[0].status == model.Status.BLOCKED_UNSEEN
    assert a.verdict == "unknown" and knots(a) == [[0, 1]]
    assert {"waits-unseen", "possible-deadlock"} <= kinds(a)
    assert not a.deadlock


def test_unreadable_rank_is_named_with_its_error_and_blocks_no_certain_verdict():
    job = JobBuilder(3).set(2, communicators=None, error="mqs_setup_process failed: boom (3)")
    job.call(0, "MPI_Recv").recv(0, 2).call(1, "MPI_Recv").recv(1, 0)
    a = job.analyse()
    assert a.verdict == "unknown" and knots(a) == [[0, 1]]
    [f] = findings(a, "unreadable")
    assert "mqs_setup_process failed: boom (3)" in f.text


def test_ranks_missing_from_the_snapshot_are_named():
    job = JobBuilder(4)
    del job.ranks[3]
    job.call(0, "MPI_Recv").recv(0, 3)
    a = job.analyse()
    assert a.model.ranks[3].status == model.Status.MISSING
    assert "missing" in kinds(a) and a.verdict == "unknown"


def test_ucx_pml_means_every_queue_is_unknown():
    job = JobBuilder(2)
    for r in range(2):
        job.call(r, "MPI_Recv").set(r, pml="ucx")
    a = job.analyse()
    assert a.verdict == "unknown" and knots(a) == [[0, 1]]
    [f] = findings(a, "pml-invisible")
    assert "ucx" in f.text and "--mca pml ob1" in f.text


def test_a_rank_the_proxy_warned_of_is_named_and_its_queues_are_not_trusted():
    warning = ("the debugger's target_to_host says this process is big-endian, but its "
               "memory is little-endian")
    job = JobBuilder(2).call(0, "MPI_Recv").call(1, "MPI_Recv").set(1, warnings=[warning])
    job.recv(0, 1)  # rank 1's queues read byte-reversed: empty
    a = job.analyse()
    assert a.model.ranks[1].status == model.Status.BLOCKED_UNSEEN
    assert warning in a.model.ranks[1].reason
    [f] = findings(a, "proxy-warning")
    assert f.ranks == [1] and f.text == "rank 1: " + warning
    assert a.verdict == "unknown"  # no deadlock is claimed from queues read wrong


def test_ucx_is_also_recognised_from_the_frames():
    job = JobBuilder(2).call(0, "MPI_Recv", frames=["mca_pml_ucx_recv", "PMPI_Recv", "main"])
    assert job.analyse().model.ranks[0].status == model.Status.BLOCKED_UNSEEN


def test_all_queues_empty_while_ranks_block_in_point_to_point_calls_is_said():
    job = JobBuilder(2).call(0, "MPI_Recv").call(1, "MPI_Recv")
    a = job.analyse()
    assert "queues-empty" in kinds(a) and a.verdict == "unknown"


def test_unexpected_queue_without_information_is_unknown_not_empty():
    a = JobBuilder(2).analyse()
    [f] = findings(a, "unexpected-unknown")
    assert "unknown, not absent" in f.text


def test_communicator_null_is_ignored():
    job = JobBuilder(2).call(0, "MPI_Recv").recv_any(0)
    rm = job.analyse().model.ranks[0]
    assert rm.waits[0].targets == (1,)


def test_names_of_mpi_calls_are_normalised():
    from mqd_analysis import mpicalls, snapshot
    assert mpicalls.normalise("PMPI_Recv") == "MPI_Recv"
    assert mpicalls.normalise("mpi_recv_") == "MPI_Recv"
    assert mpicalls.normalise("PMPI_WAITALL") == "MPI_Waitall"
    assert mpicalls.normalise("opal_progress") is None
    assert snapshot.mpi_call_of(["sched_yield", "mca_pml_ob1_recv", "PMPI_Recv", "main"]) == \
        "MPI_Recv"
    assert snapshot.mpi_call_of(["nanosleep", "ompi_mpi_finalize", "main"]) == "MPI_Finalize"
    assert snapshot.mpi_call_of(["usleep", "main"]) is None


def test_snapshot_without_mpi_call_takes_it_from_the_frames():
    job = JobBuilder(2)
    job.ranks[0]["state"] = {"frames": ["sched_yield", "mca_pml_ob1_recv", "PMPI_Recv", "main"]}
    job.recv(0, 1)
    assert job.analyse().model.ranks[0].call == "MPI_Recv"


def test_state_unknown_ranks_make_a_possible_deadlock_only():
    job = JobBuilder(3)
    for r in range(3):
        job.ranks[r].pop("state")
    job.recv(0, 1).recv(1, 0)
    a = job.analyse()
    assert a.verdict == "unknown" and knots(a) == [[0, 1]]
    assert a.model.ranks[2].status == model.Status.UNKNOWN
    assert "state-unknown" in kinds(a)


# ---- the graph algorithms -------------------------------------------------------------------

def test_strongly_connected_components_match_mutual_reachability():
    import random
    from mqd_analysis.knots import strongly_connected
    rng = random.Random(20)
    for _ in range(300):
        n = rng.randint(1, 12)
        succ = {v: sorted(rng.sample(range(n), rng.randint(0, min(3, n)))) for v in range(n)}
        reach = {}
        for v in range(n):
            seen, stack = {v}, [v]
            while stack:
                for w in succ[stack.pop()]:
                    if w not in seen:
                        seen.add(w)
                        stack.append(w)
            reach[v] = seen
        expected = sorted({tuple(sorted(w for w in range(n) if w in reach[v] and v in reach[w]))
                           for v in range(n)})
        assert sorted(tuple(c) for c in strongly_connected(list(range(n)), succ)) == expected


def test_knots_against_brute_force_on_random_jobs():
    # Random jobs of point-to-point waits: a rank is deadlocked iff no computing rank is
    # reachable through its waits, where an AND rank needs all its targets and an OR rank one.
    import random
    rng = random.Random(7)
    for _ in range(200):
        n = rng.randint(2, 8)
        job = JobBuilder(n)
        waits = {}
        for r in range(n):
            if rng.random() < 0.25:
                continue                                    # computing
            targets = rng.sample(range(n), rng.randint(1, min(3, n)))
            call = rng.choice(["MPI_Waitall", "MPI_Waitany"])
            job.call(r, call)
            for t in targets:
                job.recv(r, t)
            waits[r] = (call, set(targets))
        can = {r: r not in waits for r in range(n)}
        changed = True
        while changed:
            changed = False
            for r, (call, targets) in waits.items():
                ok = all(can[t] for t in targets) if call == "MPI_Waitall" else \
                    any(can[t] for t in targets)
                if ok and not can[r]:
                    can[r] = changed = True
        a = job.analyse()
        dead = sorted(r for r in range(n) if not can[r])
        assert sorted(r for k in a.knots for r in k.ranks) == dead
        assert a.deadlock == bool(dead)
