"""frontends/gdb/mqd_gdb/dump.py on a stand-in DLL whose queues change between dumps: each
dump is what the DLL said, field for field; an operation the DLL gives again byte for byte is
the same Record as in the process's last dump (so that render.as_json keeps its text), one that
changed is a new Record, and only the last dump's operations are kept."""
import ctypes
import json

from conftest import Inferior

import gdb

from mqd_gdb import abi, dump, render
from mqd_gdb.handles import Process


class QueueDll:
    """Stands in for a DLL's entry points (Session.lib) on one process with one communicator,
    whose queues are `queues`: op class -> [(tag, extra line)], as mqs_next_operation fills
    them."""

    def __init__(self, types):
        self.types = types
        self.queues = {abi.PENDING_SENDS: [], abi.PENDING_RECEIVES: [],
                       abi.UNEXPECTED_MESSAGES: []}
        self.cursor = None
        self.communicators = 0
        self.group = [5, 9]

    def mqs_update_communicator_list(self, p):
        return abi.MQS_OK

    def mqs_setup_communicator_iterator(self, p):
        self.communicators = 1
        return abi.MQS_OK

    def mqs_get_communicator(self, p, ref):
        comm = ref._obj
        comm.unique_id, comm.local_rank, comm.name = 7, 0, b"MPI_COMM_WORLD"
        comm.size = len(self.group)
        return abi.MQS_OK

    def mqs_get_comm_group(self, p, ranks):
        ranks[:] = self.group
        return abi.MQS_OK

    def mqs_next_communicator(self, p):
        self.communicators -= 1
        return abi.MQS_OK if self.communicators > 0 else abi.MQS_END_OF_LIST

    def mqs_setup_operation_iterator(self, p, op_class):
        self.cursor = iter(self.queues[op_class])
        return abi.MQS_OK

    def mqs_next_operation(self, p, ref):
        item = next(self.cursor, None)
        if item is None:
            return abi.MQS_END_OF_LIST
        op = ref._obj
        op.status, op.desired_tag, op.buffer = abi.ST_PENDING, item[0], 0x1000 + item[0]
        op.extra_text[0].value = item[1].encode()
        return abi.MQS_OK


class Session:
    """Stands in for session.Session: one set-up process, the DLL above."""

    version = "a stand-in DLL"

    def __init__(self):
        self.abi = abi.Abi(8)
        self.lib = QueueDll(self.abi)
        self.process = Process(0x1000, 1, None)
        self.process.rank = 0

    def ensure_process(self, num):
        return self.process

    def has(self, name):
        return True

    def error_text(self, rc):
        return "error %d" % rc


def operations(result):
    return [op for q in result["communicators"][0]["queues"].values() for op in q["operations"]]


def test_unchanged_operations_are_the_last_dumps_records():
    gdb.current = Inferior(num=1, pid=4242)
    try:
        session = Session()
        dll = session.lib
        dll.queues[abi.PENDING_SENDS] = [(i, "Send: %d" % i) for i in range(6)]
        dll.queues[abi.PENDING_RECEIVES] = [(100, "Recv"), (100, "Recv")]  # the same twice
        first = dump.dump(session, 1)
        ops = operations(first)
        assert [type(op) for op in ops] == [render.Record] * 8
        assert [op["desired_tag"] for op in ops] == [0, 1, 2, 3, 4, 5, 100, 100]
        assert ops[0]["extra_text"] == ["Send: 0", "", "", "", ""]
        assert ops[6] is ops[7]

        dll.queues[abi.PENDING_SENDS][2] = (2, "Send: changed")  # one changed
        del dll.queues[abi.PENDING_SENDS][4]  # one gone
        dll.queues[abi.UNEXPECTED_MESSAGES] = [(9, "new")]  # one new
        second = dump.dump(session, 1)
        again = operations(second)
        assert [op["desired_tag"] for op in again] == [0, 1, 2, 3, 5, 100, 100, 9]
        assert again[2]["extra_text"][0] == "Send: changed" and again[2] is not ops[2]
        assert [again[i] is ops[j] for i, j in ((0, 0), (1, 1), (3, 3), (4, 5), (5, 6))] == \
            [True] * 5
        assert again[7]["extra_text"][0] == "new"
        # A queue of the same Records is the same list (its text kept too); one changed is not.
        queues = lambda r: r["communicators"][0]["queues"]  # noqa: E731
        third = dump.dump(session, 1)
        assert type(queues(third)["sends"]["operations"]) is render.Items
        for key in ("sends", "receives", "unexpected"):
            assert queues(third)[key]["operations"] is queues(second)[key]["operations"]
        assert queues(second)["sends"]["operations"] is not queues(first)["sends"]["operations"]
        assert queues(second)["receives"]["operations"] is queues(first)["receives"]["operations"]
        # And the communicators' list, when every communicator is the same.
        assert third["communicators"] is second["communicators"]
        assert type(third["communicators"]) is render.Items
        assert second["communicators"] is not first["communicators"]
        group = lambda r: r["communicators"][0]["group"]  # noqa: E731
        assert group(third) == [5, 9] and group(third) is group(first)
        dll.group = [5, 8]  # a group that changed is a new list
        dll.queues[abi.PENDING_RECEIVES].pop()  # one of two alike gone: a list of its own
        fourth = dump.dump(session, 1)
        assert queues(fourth)["receives"]["operations"] is not \
            queues(third)["receives"]["operations"]
        assert len(queues(fourth)["receives"]["operations"]) == 1
        assert group(fourth) == [5, 8] and type(group(fourth)) is render.Items
        assert fourth["communicators"] is not third["communicators"]
        # Only the last dump's operations are kept for the next.
        assert sorted(id(op) for op in session.process.operations.values()) == \
            sorted({id(op) for op in operations(fourth)})
        # Each dump's JSON is json.dumps's of it, the kept Records' texts included.
        for result in (first, second, second, third, fourth):
            assert render.as_json([result]) == json.dumps([result], indent=1) + "\n"
    finally:
        gdb.current = None


def test_a_byte_anywhere_in_the_operation_tells_it_apart():
    gdb.current = Inferior(num=1, pid=4242)
    try:
        session = Session()
        session.lib.queues[abi.PENDING_SENDS] = [(1, "a" * 63)]
        before = operations(dump.dump(session, 1))[0]
        session.lib.queues[abi.PENDING_SENDS] = [(1, "a" * 62 + "b")]
        after = operations(dump.dump(session, 1))[0]
        assert after is not before and after["extra_text"][0] == "a" * 62 + "b"
        assert ctypes.sizeof(session.abi.PendingOperation) == len(
            next(iter(session.process.operations)))
    finally:
        gdb.current = None
