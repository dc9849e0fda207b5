"""What a dump made with MPICH 4.0.2's DLL (libtvmpich.so, the ch3 device) must show of what
every rank posted, as recorded in its manifest (tests/e2e/pending.c or tests/mpich/sessions.c:
communicators by label with name, rank and size; operations with kind, communicator label,
peer as a local and a world rank, tag, count and buffer).

    from mpich_manifest import check_against_manifests
    problems = check_against_manifests(dumps, job.manifests)   # [] when all is as posted

The rules are the DLL's, measured and explained in docs/mpich.md ("What MQD shows for MPICH"):
  * Communicators are found by the operations they hold: MPICH lists its own internal ones
    beside the program's, and every unnamed one is "--unnamed--" (MPI_Comm_get_name gives "").
    A named one without operations is found by its name.
  * Groups are unknown (null) and every global rank is -1: the DLL has no mqs_get_comm_group
    and its rank translation is a stub.
  * Lengths are counts in the datatype's elements, not bytes.
  * MPI_ANY_SOURCE is desired_local_rank -1; MPI_ANY_TAG sets tag_wild.
  * A receive and a send past the eager limit are pending. A small (eager) send may already be
    complete, so its status is not checked.
  * The unexpected queue holds exactly the messages sent to this rank that no receive matched:
    every send of any rank on the same communicator to this rank, with the sender's local rank
    and the tag (length and buffer are those of a request not yet matched: not checked).
  * Nothing else: every operation the dump shows is one of these, and every queue of every
    communicator is known and walked to its end.
Upstream defects: the lengths in elements break the MQD interface's rule (bytes), and the
rank translation was never written (pmodels/mpich#6131); both are expected as they are, in the
fields named above. pmodels/mpich#6141 (wrong ranks and tags) lies in the DLL's ch4 branch
only: with ch3, which this MPICH is built with, ranks and tags must be exactly those posted.
"""

from collections import Counter

UNNAMED = "--unnamed--"
RECEIVES = ("recv", "recv_any_source", "recv_any_tag")
SENDS = ("send", "send_small")  # past the eager limit; eager


def check_against_manifests(dumps, manifests):
    if len(dumps) != len(manifests):
        return ["%d inferiors dumped, %d ranks" % (len(dumps), len(manifests))]
    problems = []
    for dump, m in zip(dumps, manifests):
        problems += check_rank(dump, m, manifests)
    return problems


def check_rank(dump, m, manifests):
    who = "rank %d" % m["rank"]
    if dump.get("error"):
        return ["%s: %s" % (who, dump["error"])]
    problems = []
    if dump["pid"] != m["pid"] or dump["rank"] != m["rank"]:
        problems.append("%s: dumped pid %s rank %s" % (who, dump["pid"], dump["rank"]))
    communicators = dump["communicators"]
    # Where each posted operation is shown: its buffer is unique in the process.
    where = {}
    for c in communicators:
        for queue in ("sends", "receives"):
            for o in c["queues"][queue]["operations"]:
                where.setdefault(o["buffer"], []).append((c, queue, o))
    accounted = 0
    for label, facts in m["communicators"].items():
        posted = [op for op in m["operations"] if op["comm"] == label]
        c, trouble = identify(communicators, label, facts, posted, where)
        problems += ["%s: %s" % (who, t) for t in trouble]
        if c is None:
            continue
        name = "%s (%s)" % (c["name"], label)
        expected_name = facts["name"] or UNNAMED
        if c["name"] != expected_name:
            problems.append("%s: %s is named %r, expected %r" % (who, label, c["name"],
                                                                 expected_name))
        if (c["local_rank"], c["size"], c["group"]) != (facts["rank"], facts["size"], None):
            problems.append("%s: %s is rank %s of %s, group %s; expected %d of %d, group "
                            "unknown" % (who, name, c["local_rank"], c["size"], c["group"],
                                         facts["rank"], facts["size"]))
        for queue, kinds in (("sends", SENDS), ("receives", RECEIVES)):
            want = [op for op in posted if op["kind"] in kinds]
            have = c["queues"][queue]["operations"]
            if len(have) != len(want):
                problems.append("%s: %s %s: %d operations, posted %d" % (
                    who, name, queue, len(have), len(want)))
            by_buffer = {o["buffer"]: o for o in have}
            for op in want:
                got = by_buffer.get(int(op["buffer"], 16))
                if got is None:
                    problems.append("%s: %s %s: %s with buffer %s missing" % (
                        who, name, queue, op["kind"], op["buffer"]))
                    continue
                accounted += 1
                problems += check_operation(who, name, op, got)
        unexpected = c["queues"]["unexpected"]
        want = Counter(sent_to(m, label, manifests))
        have = Counter((o["desired_local_rank"], o["desired_tag"])
                       for o in unexpected["operations"])
        if have != want:
            problems.append("%s: %s unexpected messages (source, tag): missing %s, not sent "
                            "here %s" % (who, name, sorted((want - have).elements()),
                                         sorted((have - want).elements())))
        for o in unexpected["operations"]:
            if (o["actual_local_rank"], o["actual_tag"]) != (o["desired_local_rank"],
                                                             o["desired_tag"]):
                problems.append("%s: %s unexpected message %s" % (who, name, o))
        accounted += len(unexpected["operations"])
    for c in communicators:
        for queue, shown in c["queues"].items():
            if shown["rc"] != 2:  # mqs_end_of_list: every queue is known and walked to its end
                problems.append("%s: %s (0x%x) %s queue ended with %s %s" % (
                    who, c["name"], c["unique_id"], queue, shown["rc"], shown.get("error", "")))
    shown = sum(len(q["operations"]) for c in communicators for q in c["queues"].values())
    if shown != accounted:
        problems.append("%s: the dump shows %d operations, %d of them posted or sent here"
                        % (who, shown, accounted))
    return problems


def identify(communicators, label, facts, posted, where):
    """The dumped communicator behind LABEL, and sentences for what went wrong finding it."""
    holders = {}
    for op in posted:
        for c, _, _ in where.get(int(op["buffer"], 16), []):
            holders[c["unique_id"]] = c
    if len(holders) > 1:
        return None, ["the operations on %s are shown on %d communicators" % (label,
                                                                            len(holders))]
    if holders:
        return next(iter(holders.values())), []
    if posted:
        return None, ["none of the %d operations on %s is shown" % (len(posted), label)]
    named = [c for c in communicators if facts["name"] and c["name"] == facts["name"]]
    if len(named) == 1:
        return named[0], []
    if facts["name"]:
        return None, ["%d communicators named %r" % (len(named), facts["name"])]
    return None, []  # unnamed, no operation: nothing tells it from MPICH's own


def sent_to(m, label, manifests):
    """(sender's local rank, tag) of every send on LABEL addressed to the rank of manifest M."""
    return [(sender["communicators"][label]["rank"], op["tag"])
            for sender in manifests for op in sender["operations"]
            if op["comm"] == label and op["kind"] in SENDS and op["peer_world"] == m["rank"]]


def check_operation(who, comm, op, got):
    where = "%s: %s %s tag %s" % (who, comm, op["kind"], op["tag"])
    problems = []
    if op["kind"] != "send_small" and got["status"] != "pending":
        problems.append("%s: status %s" % (where, got["status"]))
    if got["desired_length"] != op["count"]:
        problems.append("%s: length %s, posted %s elements" % (where, got["desired_length"],
                                                                op["count"]))
    if op["kind"] == "recv_any_tag":
        if not got["tag_wild"]:
            problems.append("%s: not shown as a wildcard tag" % where)
    elif got["tag_wild"] or got["desired_tag"] != op["tag"]:
        problems.append("%s: tag %s" % (where, got["desired_tag"]))
    peer = -1 if op["kind"] == "recv_any_source" else op["peer_local"]
    if (got["desired_local_rank"], got["desired_global_rank"]) != (peer, -1):
        problems.append("%s: peer %s/%s, expected %s/-1" % (
            where, got["desired_local_rank"], got["desired_global_rank"], peer))
    return problems
