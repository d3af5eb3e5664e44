"""Jobs through the client: a durable puzzle job of each kind survives a
restart of its server with the solutions (grids) enumerate_puzzle gives; a
create retried with the same request_id makes one job; cancel, delete,
list_jobs's filter and paging, watch and solutions.

The servers are the tests' own (OwnServer), each with a data directory in
the test's tmp folder, so that ListJobs shows exactly the jobs the test
made and a restart on the same folder finds them again."""

from __future__ import annotations

import hashlib
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, List, Optional, Set, Tuple

import grpc
import pytest
from conftest import ROOT, OwnServer, queens_dlx

import xccd

PUZZLES = ROOT / "examples" / "puzzles"
SLITHERLINK = "3..3\n....\n....\n3..3\n"

# A puzzle of each kind, and its number of solutions where it is known
# without xccd (None: the test takes enumerate_puzzle's on the same server).
# The larger ones run long enough for the restart to land mid-run.
INSTANCES: List[Tuple[str, str, Any]] = [
    # Every latin square of order 5: 161,280 (OEIS A002860).
    ("latin", "5", 161_280),
    # An empty 4x4 futoshiki with one inequality: v -> 5 - v maps the
    # latin squares of order 4 (576) with a < b onto those with a > b.
    ("futoshiki", ". .<. .\n. . . .\n. . . .\n. . . .\n", 576 // 2),
    # The hitori of docs/puzzles.md: one solution with its unshaded cells
    # connected, of 4 weak ones (checked below: the side condition is kept).
    ("hitori", (PUZZLES / "hitori.txt").read_text(), 1),
    # A hidato with one given: every king's path through the 3x3 board
    # from the corner.
    ("hidato", "1 . .\n. . .\n. . .\n", None),
    # A slitherlink with a 3 in each corner: its single loops (there are
    # more weak solutions, with several loops: checked below).
    ("slitherlink", SLITHERLINK, None),
    # Every 4x4 sudoku: 288.
    ("sudoku", "." * 16, 288),
    # 11 queens: 2,680 (OEIS A000170).
    ("queens", "11", 2_680),
]


def connect(server: OwnServer) -> xccd.Client:
    # Retries enough to ride out a restart (about a second).
    return xccd.Client(server.addr, timeout=120, retries=12)


def restart(own_server: Any, server: OwnServer, *args: str) -> OwnServer:
    """SIGTERM to `server` (a clean exit), then a server on the same port
    and data directory."""
    server.terminate()
    assert server.process.wait(timeout=60) == 0, server.log.read_text()
    again: OwnServer = own_server(*args, port=server.port, data_dir=server.data_dir)
    return again


def final(client: xccd.Client, name: str) -> xccd.Job:
    """The job `name` once it has ended, watched to its end."""
    events = list(client.watch(name))
    job = events[-1]
    assert isinstance(job, xccd.Job), events[-1]
    assert all(isinstance(e, xccd.Progress) for e in events[:-1])
    return job


@pytest.mark.parametrize("kind,puzzle,known", INSTANCES, ids=[i[0] for i in INSTANCES])
def test_a_puzzle_job_of_each_kind_survives_a_restart(
    own_server: Any, tmp_path: Path, kind: str, puzzle: str, known: Any
) -> None:
    args = ("--threads", "2")
    server = own_server(*args, data_dir=tmp_path / "data")
    with connect(server) as c:
        expected = list(c.enumerate_puzzle(kind, puzzle))
        created = c.create_puzzle_job(kind, puzzle)
        assert created.name.startswith("jobs/")
        assert created.durable and created.puzzle_kind == kind
        assert created.state in ("QUEUED", "RUNNING", "SUCCEEDED")
    # Restarted at once: mid-run for the larger ones (latin 5 runs about
    # 0.3 s), after the end for the others.
    server = restart(own_server, server, *args)
    with connect(server) as c:
        after = final(c, created.name)
        solutions = list(c.solutions(created.name, page_size=5000))
        listed = [job.name for job in c.list_jobs()]
    if known is not None:
        assert len(expected) == known
    assert len(set(expected)) == len(expected)
    assert after.name == created.name and listed == [created.name]
    assert after.state == "SUCCEEDED" and after.end_reason == "END_REASON_COMPLETE", after
    assert after.puzzle_kind == kind and after.durable
    # A resource's create_time does not move (a filter on it relies on it).
    assert after.create_time == created.create_time, "create_time changed across the restart"
    assert after.end_time is not None and after.create_time is not None
    assert after.end_time >= after.create_time
    assert after.solutions == len(expected) == after.stored_solutions
    # Every solution once, in order, as a grid: the same grids as
    # enumerate_puzzle's, whether the restart came before or after the end.
    assert [s.index for s in solutions] == list(range(len(expected)))
    grids = [s.grid for s in solutions]
    assert all(isinstance(g, str) and g for g in grids)
    assert len(set(grids)) == len(grids)
    assert set(grids) == set(expected)


@pytest.mark.parametrize(
    "kind,puzzle",
    [("hitori", (PUZZLES / "hitori.txt").read_text()), ("slitherlink", SLITHERLINK)],
)
def test_a_puzzle_job_keeps_the_side_condition(
    own_server: Any, tmp_path: Path, kind: str, puzzle: str
) -> None:
    server = own_server("--threads", "2", data_dir=tmp_path / "data")
    with connect(server) as c:
        strong = set(c.enumerate_puzzle(kind, puzzle))
        weak = set(c.enumerate_puzzle(kind, puzzle, weak=True))
        # The instance tells the two apart.
        assert strong < weak
        for wanted, is_weak in ((strong, False), (weak, True)):
            job = c.create_puzzle_job(kind, puzzle, weak=is_weak)
            assert final(c, job.name).solutions == len(wanted)
            assert {s.grid for s in c.solutions(job.name)} == wanted


def digests(grids: Iterable[Optional[str]]) -> List[bytes]:
    """Each grid as a 16-byte digest: the large instances' grids compared
    in a few dozen MB."""
    return [hashlib.blake2b((g or "").encode(), digest_size=16).digest() for g in grids]


def test_a_job_restarted_mid_run_neither_loses_nor_repeats_a_solution(
    own_server: Any, tmp_path: Path
) -> None:
    # 14 queens on one thread: 365,596 solutions in about 2 s, so that the
    # SIGTERM sent as soon as the job runs lands in the middle of the run.
    args = ("--threads", "1")
    server = own_server(*args, data_dir=tmp_path / "data")
    with connect(server) as c:
        expected = set(digests(c.enumerate_puzzle("queens", 14)))
        job = c.create_puzzle_job("queens", 14)
        watch = c.watch(job.name, progress_interval=0.05)
        assert isinstance(next(watch), xccd.Progress)
        assert not c.get_job(job.name).done
        server.terminate()
        # The watch ends before the job: it raises, naming the shutdown.
        with pytest.raises(xccd.IncompleteError) as raised:
            for _ in watch:
                pass
        assert raised.value.end_reason == "END_REASON_SHUTDOWN", raised.value
    assert server.process.wait(timeout=60) == 0
    restarted_at = datetime.now(timezone.utc)
    server = own_server(*args, port=server.port, data_dir=server.data_dir)
    with connect(server) as c:
        after = final(c, job.name)
        found = digests(s.grid for s in c.solutions(job.name, page_size=10_000))
    assert len(expected) == 365_596
    # The shutdown did not end the job: it ended after the restart.
    assert after.end_time is not None and after.end_time > restarted_at, after
    assert after.state == "SUCCEEDED" and after.solutions == len(expected), after
    assert len(found) == len(expected) and set(found) == expected


def test_a_retried_create_job_with_the_same_request_id_makes_one_job(
    own_server: Any, tmp_path: Path
) -> None:
    args = ("--threads", "2")
    server = own_server(*args, data_dir=tmp_path / "data")
    request_id = str(uuid.uuid4())
    with connect(server) as c:
        first = c.create_puzzle_job("queens", 8, request_id=request_id)
        again = c.create_puzzle_job("queens", 8, request_id=request_id)
        assert again.name == first.name
        assert [j.name for j in c.list_jobs()] == [first.name]
        # The same request_id on a different request is refused.
        with pytest.raises(xccd.XccdError) as raised:
            c.create_puzzle_job("queens", 9, request_id=request_id)
        assert raised.value.code == grpc.StatusCode.ALREADY_EXISTS
        assert raised.value.reason == "REQUEST_ID_REUSED", raised.value
        assert final(c, first.name).solutions == 92
    # The key outlives a restart with its (durable) job.
    server = restart(own_server, server, *args)
    with connect(server) as c:
        after = c.create_puzzle_job("queens", 8, request_id=uuid.UUID(request_id))
        assert after.name == first.name
        assert [j.name for j in c.list_jobs()] == [first.name]
        # Without a request_id each create is a job of its own (the client
        # makes up a key per call).
        one = c.create_job(queens_dlx(6))
        two = c.create_job(queens_dlx(6))
        assert len({first.name, one.name, two.name}) == 3
        assert len(list(c.list_jobs())) == 3


class LostAnswer(grpc.RpcError):  # type: ignore[misc]
    """UNAVAILABLE, as a client sees it when the connection broke after the
    server took the call but before its answer arrived."""

    def code(self) -> grpc.StatusCode:
        return grpc.StatusCode.UNAVAILABLE

    def details(self) -> str:
        return "the connection broke before the answer"

    def trailing_metadata(self) -> Tuple[()]:
        return ()


def test_the_clients_own_retry_of_a_create_whose_answer_was_lost_makes_one_job(
    own_server: Any, tmp_path: Path
) -> None:
    server = own_server("--threads", "2", data_dir=tmp_path / "data")
    with connect(server) as c:
        create = c._solver.CreateJob
        sent: List[Any] = []

        def first_answer_lost(request: Any, **kwargs: Any) -> Any:
            sent.append(request.request_id)
            answer = create(request, **kwargs)
            if len(sent) == 1:
                raise LostAnswer()
            return answer

        c._solver.CreateJob = first_answer_lost
        job = c.create_puzzle_job("queens", 8)
        # Two attempts, one key (made up by the client), one job.
        assert len(sent) == 2 and sent[0] == sent[1] and uuid.UUID(sent[0])
        assert [j.name for j in c.list_jobs()] == [job.name]
        assert final(c, job.name).solutions == 92


def test_a_request_id_that_is_not_a_uuid_is_invalid(own_server: Any) -> None:
    server = own_server("--threads", "1")
    with connect(server) as c:
        with pytest.raises(xccd.XccdError) as raised:
            c.create_job(queens_dlx(6), request_id="not-a-uuid")
    assert raised.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert "request_id" in raised.value.message


def test_cancel_and_delete(own_server: Any, tmp_path: Path) -> None:
    server = own_server("--threads", "1", data_dir=tmp_path / "data")
    with connect(server) as c:
        running = c.create_job(queens_dlx(20), count_only=True)
        c.cancel(running.name)
        cancelled = final(c, running.name)
        assert cancelled.state == "CANCELLED" and cancelled.done
        assert cancelled.end_reason == "END_REASON_CANCELLED"
        assert cancelled.end_time is not None
        # Cancelling an ended job leaves it as it is.
        assert c.cancel(running.name).state == "CANCELLED"
        c.delete(running.name)
        with pytest.raises(xccd.XccdError) as raised:
            c.get_job(running.name)
        assert raised.value.code == grpc.StatusCode.NOT_FOUND
        assert raised.value.reason == "JOB_NOT_FOUND", raised.value
        # A running job can be deleted at once (it is stopped first).
        other = c.create_puzzle_job("latin", 7, count_only=True)
        c.delete(other.name)
        with pytest.raises(xccd.XccdError) as raised:
            c.get_job(other.name)
        assert raised.value.reason == "JOB_NOT_FOUND"
        assert list(c.list_jobs()) == []


def test_list_jobs_filters_and_pages(own_server: Any, tmp_path: Path) -> None:
    server = own_server("--threads", "2", data_dir=tmp_path / "data")
    with connect(server) as c:
        done = [c.create_job(queens_dlx(n)) for n in (5, 6, 7)]
        for job in done:
            assert final(c, job.name).state == "SUCCEEDED"
        stopped = c.create_job(queens_dlx(20), count_only=True)
        c.cancel(stopped.name)
        assert final(c, stopped.name).state == "CANCELLED"
        everything = [j.name for j in c.list_jobs()]
        assert everything == [j.name for j in done] + [stopped.name]
        # One a page: the same jobs, oldest first.
        assert [j.name for j in c.list_jobs(page_size=1)] == everything
        succeeded = list(c.list_jobs("state = SUCCEEDED"))
        assert [j.name for j in succeeded] == [j.name for j in done]
        assert all(j.state == "SUCCEEDED" for j in succeeded)
        assert [j.name for j in c.list_jobs("state = SUCCEEDED", page_size=2)] == [
            j.name for j in done
        ]
        assert [j.name for j in c.list_jobs("state != SUCCEEDED")] == [stopped.name]
        assert [j.name for j in c.list_jobs("state = JOB_STATE_CANCELLED")] == [stopped.name]
        # The first job's create_time to the nanosecond (a datetime keeps
        # microseconds): the jobs created after it.
        first = c.get_job(done[0].name).message.create_time.ToJsonString()
        later = [j.name for j in c.list_jobs(f'create_time > "{first}"')]
        assert later == everything[1:]
        assert [j.name for j in c.list_jobs(f'create_time <= "{first}"')] == everything[:1]
        with pytest.raises(xccd.XccdError) as raised:
            list(c.list_jobs("state = = SUCCEEDED"))
        assert raised.value.code == grpc.StatusCode.INVALID_ARGUMENT


def test_watch_and_solutions_of_a_problem_job(own_server: Any, tmp_path: Path) -> None:
    server = own_server("--threads", "2", data_dir=tmp_path / "data")
    with connect(server) as c:
        expected = {tuple(s) for s in c.enumerate(queens_dlx(8))}
        job = c.create_job(queens_dlx(8))
        assert job.puzzle_kind is None
        events = list(c.watch(job.name, include_solutions=True))
        end = events[-1]
        assert isinstance(end, xccd.Job) and end.state == "SUCCEEDED" and end.exhausted
        watched = [e for e in events if isinstance(e, xccd.JobSolution)]
        assert [s.index for s in watched] == list(range(92))
        assert {tuple(s.options) for s in watched} == expected
        assert all(s.grid is None for s in watched)
        paged = list(c.solutions(job.name, page_size=10))
        assert [s.options for s in paged] == [s.options for s in watched]
        # Watched again from solution 90: the last two.
        rest = [
            e for e in c.watch(job.name, True, from_solution=90) if isinstance(e, xccd.JobSolution)
        ]
        assert [(s.index, s.options) for s in rest] == [(s.index, s.options) for s in watched[90:]]


def test_watch_of_a_puzzle_job_yields_its_grids(own_server: Any) -> None:
    # No store: the job's kept solutions come with the watch, and
    # solutions() (the store's) is refused.
    server = own_server("--threads", "2")
    with connect(server) as c:
        expected: Set[str] = set(c.enumerate_puzzle("queens", 6))
        job = c.create_puzzle_job("queens", 6)
        assert not job.durable
        events = list(c.watch(job.name, include_solutions=True))
        grids = {e.grid for e in events if isinstance(e, xccd.JobSolution)}
        assert grids == expected
        end = events[-1]
        assert isinstance(end, xccd.Job) and end.solutions == 4 and end.puzzle_kind == "queens"
        with pytest.raises(xccd.XccdError) as raised:
            list(c.solutions(job.name))
        assert raised.value.code == grpc.StatusCode.FAILED_PRECONDITION
        assert raised.value.reason == "NO_JOB_STORE", raised.value
