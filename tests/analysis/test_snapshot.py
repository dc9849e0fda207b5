"""Loading snapshots: version 1, today's `mqd dump --json` upgraded, and bad input (a clear
sentence, exit status 2 from the command line)."""
import json
import os

import pytest
from conftest import HERE, JobBuilder, run_cli

from mqd_analysis import SnapshotError, load_snapshot, parse_snapshot
from mqd_analysis.snapshot import loads

REPLAY_DUMP = os.path.join(HERE, "..", "unit", "data", "replay-dump.json")


def test_version_1_is_read():
    s = parse_snapshot(JobBuilder(3).call(0, "MPI_Recv").recv(0, 1).snapshot())
    assert [r.rank for r in s.ranks] == [0, 1, 2]
    assert s.ranks[0].state.mpi_call == "MPI_Recv" and s.upgraded_from is None


def test_mqd_dump_all_json_is_upgraded():
    s = load_snapshot(REPLAY_DUMP)
    assert s.upgraded_from == "mqd dump --json"
    assert all(r.state is None for r in s.ranks)
    assert s.ranks[0].rank == 1 and s.ranks[0].partial
    assert s.ranks[1].rank is None and not s.ranks[1].readable


def test_single_rank_mqd_dump_json_is_upgraded():
    one = json.load(open(REPLAY_DUMP))[0]
    assert len(parse_snapshot(one).ranks) == 1


@pytest.mark.parametrize("text, words", [
    ("", "is empty"),
    ('{"mqd_snapshot": 1, "ranks": [{"rank": 0, "communicators": [', "is truncated"),
    ('{"mqd_snapshot": 1, "ranks": [{"rank": 0, "commun', "is truncated"),
    ('{"name": "left-pad", "version": "1.3.0"}', "JSON but not an mqd snapshot"),
    ("[1, 2, 3]", "JSON but not an mqd snapshot"),
    ('{"mqd_snapshot": 2, "ranks": []}', "version 2; this tool reads version 1"),
    ('{"mqd_snapshot": "1", "ranks": []}', 'version "1"'),
    ('{"mqd_snapshot": 1, "ranks": []}', "has no ranks"),
    ('{"mqd_snapshot": 1}', 'has no "ranks"'),
    ('{"mqd_snapshot": 1, "ranks": [{"rank": 0}]}', 'has neither "communicators" nor "error"'),
    ('{"mqd_snapshot": 1, "ranks": [{"rank": "zero", "communicators": []}]}',
     "ranks[0].rank has the wrong type (str)"),
    ("not json at all", "is not valid JSON"),
    ('{"mqd_snapshot": 1, "ranks": [{"rank": 0, "communicators": [], "warnings": [3]}]}',
     "ranks[0].warnings[0] is not a string"),
    ('{"mqd_snapshot": 1, "ranks": [{"rank": 0, "communicators": [], "warnings": "x"}]}',
     "ranks[0].warnings has the wrong type (str)"),
])
def test_bad_input_is_one_clear_sentence(text, words):
    with pytest.raises(SnapshotError) as e:
        loads(text, "x.json")
    assert words in str(e.value)
    assert str(e.value).startswith("x.json")


def test_bad_operation_says_where():
    job = JobBuilder(2).recv(0, 1)
    del job.ranks[0]["communicators"][0]["queues"]["receives"]["operations"][0]["desired_tag"]
    with pytest.raises(SnapshotError) as e:
        parse_snapshot(job.snapshot(), "s.json")
    assert str(e.value) == ('s.json: ranks[0].communicators[0].queues.receives.operations[0] '
                            'has no "desired_tag"')


def test_repeated_rank_is_refused():
    snap = JobBuilder(2).snapshot()
    snap["ranks"][1]["rank"] = 0
    with pytest.raises(SnapshotError, match="repeats MPI_COMM_WORLD rank 0"):
        parse_snapshot(snap)


def test_binary_file_is_refused(tmp_path):
    path = tmp_path / "core"
    path.write_bytes(b"\x7fELF\x02\x01\x01\x00\xff\xfe")
    with pytest.raises(SnapshotError, match="not UTF-8 text"):
        load_snapshot(str(path))


@pytest.mark.parametrize("content", [
    '{"mqd_snapshot": 1, "ranks": [{"rank": 0, "pid": 3, "communicators": [{"unique',
    '{"dependencies": {"left-pad": "^1.3.0"}}',
    '{"mqd_snapshot": 7, "ranks": []}',
])
def test_command_line_exits_2_with_one_sentence(tmp_path, content):
    path = tmp_path / "bad.json"
    path.write_text(content)
    status, out, err = run_cli("graph", path)
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("mqd_analysis: ") and "Traceback" not in err


def test_command_line_missing_file_and_usage_errors_exit_2(tmp_path):
    status, _, err = run_cli("graph", tmp_path / "none.json")
    assert status == 2 and "cannot read" in err and err.count("\n") == 1
    status, _, err = run_cli("graph")
    assert status == 2 and "see --help" in err and err.count("\n") == 1
    status, _, err = run_cli("graph", "x.json", "--bogus")
    assert status == 2 and "--bogus" in err
    status, _, err = run_cli()
    assert status == 2 and "graph" in err


def test_command_line_help_documents_exit_status():
    status, out, _ = run_cli("graph", "--help")
    assert status == 0 and "exit status" in out and "--compare" in out


def test_command_line_reads_an_upgraded_dump():
    status, out, err = run_cli("graph", REPLAY_DUMP)
    assert status == 0, err
    assert out.startswith("NO DEADLOCK FOUND: the snapshot cannot tell what ranks 0-1 are doing")
    assert "state-unknown" in out and "could not be read" in out
