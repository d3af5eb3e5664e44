"""The xccd gRPC API from a Python client (grpcio).

The stubs are generated from proto/xccd/v1 (puzzle.proto, solver.proto and
puzzles.proto) with grpcio-tools into a temporary directory when the session
starts, so that the test always follows the contract in the repository. The
server's address comes from the XCCD_ADDR environment variable (for example
localhost:50599). With
XCCD_CA_CERT (the CA that signed the server's certificate) the client speaks
TLS, and with XCCD_API_KEY it sends the key (`authorization: Bearer KEY`)
on every call; CI runs it so, and checks that the server refuses a client
without the key.
"""

import importlib
import importlib.resources
import os
import sys
from pathlib import Path
from types import SimpleNamespace

import grpc
import pytest
from grpc_tools import protoc

ROOT = Path(__file__).resolve().parents[2]
PROTO_ROOT = ROOT / "proto"
# The benchmark instances in the repository (bench/README.md); XCCD_INSTANCES names another folder.
INSTANCES = Path(os.environ.get("XCCD_INSTANCES", ROOT / "bench" / "instances"))
# Seconds any one call may take.
TIMEOUT = 60


@pytest.fixture(scope="session")
def pb(tmp_path_factory):
    out = tmp_path_factory.mktemp("stubs")
    well_known = importlib.resources.files("grpc_tools") / "_proto"
    rc = protoc.main(
        [
            "grpc_tools.protoc",
            f"-I{PROTO_ROOT}",
            f"-I{well_known}",
            f"--python_out={out}",
            f"--grpc_python_out={out}",
            str(PROTO_ROOT / "xccd" / "v1" / "puzzle.proto"),
            str(PROTO_ROOT / "xccd" / "v1" / "solver.proto"),
            str(PROTO_ROOT / "xccd" / "v1" / "puzzles.proto"),
        ]
    )
    assert rc == 0, "protoc failed on the protos"
    sys.path.insert(0, str(out))
    try:
        pb2 = importlib.import_module("xccd.v1.solver_pb2")
        pb2_grpc = importlib.import_module("xccd.v1.solver_pb2_grpc")
        puzzle = importlib.import_module("xccd.v1.puzzle_pb2")
        puzzles = importlib.import_module("xccd.v1.puzzles_pb2")
        puzzles_grpc = importlib.import_module("xccd.v1.puzzles_pb2_grpc")
    finally:
        sys.path.remove(str(out))
    return SimpleNamespace(
        pb2=pb2, grpc=pb2_grpc, puzzle=puzzle, puzzles=puzzles, puzzles_grpc=puzzles_grpc
    )


def open_channel(addr, with_key=True):
    """A channel to the server: TLS when XCCD_CA_CERT names a CA, and the
    API key of XCCD_API_KEY on every call unless `with_key` is false."""
    ca = os.environ.get("XCCD_CA_CERT")
    if ca:
        credentials = grpc.ssl_channel_credentials(root_certificates=Path(ca).read_bytes())
        key = os.environ.get("XCCD_API_KEY")
        if key and with_key:
            credentials = grpc.composite_channel_credentials(
                credentials,
                grpc.access_token_call_credentials(key),
            )
        return grpc.secure_channel(addr, credentials)
    channel = grpc.insecure_channel(addr)
    key = os.environ.get("XCCD_API_KEY")
    if key and with_key:
        channel = grpc.intercept_channel(channel, BearerKey(key))
    return channel


class BearerKey(grpc.UnaryUnaryClientInterceptor, grpc.UnaryStreamClientInterceptor):
    """Adds `authorization: Bearer KEY` to every call (plaintext channels,
    where gRPC refuses call credentials)."""

    def __init__(self, key):
        self.metadata = (("authorization", f"Bearer {key}"),)

    def _details(self, details):
        metadata = tuple(details.metadata or ()) + self.metadata
        return details._replace(metadata=metadata)

    def intercept_unary_unary(self, continuation, details, request):
        return continuation(self._details(details), request)

    def intercept_unary_stream(self, continuation, details, request):
        return continuation(self._details(details), request)


@pytest.fixture(scope="session")
def stub(pb):
    addr = os.environ.get("XCCD_ADDR")
    if not addr:
        pytest.fail("XCCD_ADDR must name a running xccd server (host:port)")
    channel = open_channel(addr)
    try:
        grpc.channel_ready_future(channel).result(timeout=30)
    except grpc.FutureTimeoutError:
        pytest.fail(f"no xccd server answers at {addr}")
    yield pb.grpc.SolverServiceStub(channel)
    channel.close()


@pytest.fixture(scope="session")
def puzzles(pb):
    channel = open_channel(os.environ["XCCD_ADDR"])
    yield pb.puzzles_grpc.PuzzleServiceStub(channel)
    channel.close()


def dlx_problem(pb, name):
    return pb.pb2.Problem(dlx=(INSTANCES / f"{name}.dlx").read_text())


def read_dlx(name):
    """A minimal reading of DLX text, independent of the server: the primary
    and secondary item names, and each option's item names (no colors or
    multiplicities: enough for sudoku and queens)."""
    lines = [
        line.strip()
        for line in (INSTANCES / f"{name}.dlx").read_text().splitlines()
        if line.strip() and not line.strip().startswith("|")
    ]
    items = lines[0].split()
    bar = items.index("|") if "|" in items else len(items)
    primary, secondary = items[:bar], items[bar + 1 :]
    options = [line.split() for line in lines[1:]]
    assert all(":" not in t for o in options for t in o), "no colors expected"
    return primary, secondary, options


def assert_exact_cover(name, indices):
    """Every primary item covered exactly once, every secondary at most once."""
    primary, secondary, options = read_dlx(name)
    assert list(indices) == sorted(set(indices)), "indices ascending, distinct"
    covered = {}
    for i in indices:
        for item in options[i]:
            covered[item] = covered.get(item, 0) + 1
    for item in primary:
        assert covered.get(item) == 1, f"{name}: primary {item} covered {covered.get(item)}"
    for item in secondary:
        assert covered.get(item, 0) <= 1, f"{name}: secondary {item} covered twice"


def unpack(batch):
    """The solutions of a batch in the packed form (EnumerateRequest.packed_solutions)."""
    data, width = batch.packed_indices, batch.packed_index_bytes
    if not batch.packed_lengths:
        assert not data, "packed indices without lengths"
        return
    assert width in (1, 2, 4), f"{width} bytes per index"
    assert len(data) % width == 0, f"{width} bytes per index"
    indices = [int.from_bytes(data[k : k + width], "little") for k in range(0, len(data), width)]
    start = 0
    for length in batch.packed_lengths:
        yield tuple(indices[start : start + length])
        start += length
    assert start == len(indices), "the lengths add up to the indices"


def enumerate_all(stub, request):
    solutions, batches, progress, summaries = [], 0, 0, []
    for response in stub.Enumerate(request, timeout=TIMEOUT):
        kind = response.WhichOneof("event")
        assert not summaries, "nothing may follow the summary"
        if kind == "solutions":
            batches += 1
            batch = response.solutions
            solutions.extend(tuple(s.option_indices) for s in batch.solutions)
            solutions.extend(unpack(batch))
        elif kind == "progress":
            progress += 1
            assert 0.0 <= response.progress.fraction_done <= 1.0
        else:
            assert kind == "summary", kind
            summaries.append(response.summary)
    assert len(summaries) == 1, "the stream ends with one summary"
    return solutions, batches, progress, summaries[0]


@pytest.mark.parametrize("name", ["sudoku_hard17", "sudoku_royle17a", "sudoku_royle17b"])
def test_solve_sudoku_has_exactly_one_solution(pb, stub, name):
    response = stub.Solve(
        pb.pb2.SolveRequest(
            problem=dlx_problem(pb, name), limit=2, include_option_text=True
        ),
        timeout=TIMEOUT,
    )
    assert len(response.solutions) == 1
    assert response.exhausted
    assert response.reason == pb.pb2.END_REASON_COMPLETE
    solution = response.solutions[0]
    primary, _, options = read_dlx(name)
    # One option per empty cell, each covering cell, row, column and box.
    assert len(solution.option_indices) == len(primary) // 4
    assert_exact_cover(name, solution.option_indices)
    assert [t.split() for t in solution.option_texts] == [
        options[i] for i in solution.option_indices
    ]
    assert response.statistics.solutions == 1
    assert response.statistics.nodes > 0


def test_enumerate_queens8(pb, stub):
    solutions, batches, _, summary = enumerate_all(
        stub,
        pb.pb2.EnumerateRequest(problem=dlx_problem(pb, "queens8"), batch_size=10),
    )
    assert len(solutions) == 92
    assert len(set(solutions)) == 92, "solutions are distinct"
    assert batches >= 1
    for s in solutions:
        assert len(s) == 8
        assert_exact_cover("queens8", s)
    assert summary.solutions == 92
    assert summary.exhausted
    assert summary.reason == pb.pb2.END_REASON_COMPLETE


def packed_index_bytes(stub, request):
    """The bytes per index of a stream's packed batches."""
    widths = set()
    for response in stub.Enumerate(request, timeout=TIMEOUT):
        if response.WhichOneof("event") == "solutions" and response.solutions.packed_lengths:
            widths.add(response.solutions.packed_index_bytes)
    return widths


# latin4 has 64 options (an index is 1 byte), pent3x20 1,236 (2 bytes).
@pytest.mark.parametrize("name, solutions, width", [("latin4", 576, 1), ("pent3x20", 8, 2)])
def test_enumerate_packed_gives_the_same_solutions(pb, stub, name, solutions, width):
    one_each, _, _, _ = enumerate_all(
        stub, pb.pb2.EnumerateRequest(problem=dlx_problem(pb, name))
    )
    request = pb.pb2.EnumerateRequest(
        problem=dlx_problem(pb, name), packed_solutions=True, batch_size=50
    )
    packed, batches, _, summary = enumerate_all(stub, request)
    assert len(packed) == solutions == summary.solutions
    assert batches >= solutions // 50
    assert sorted(packed) == sorted(one_each)
    for s in packed:
        assert_exact_cover(name, s)
    assert packed_index_bytes(stub, request) == {width}


def test_enumerate_packed_refuses_option_text(pb, stub):
    with pytest.raises(grpc.RpcError) as refused:
        enumerate_all(
            stub,
            pb.pb2.EnumerateRequest(
                problem=dlx_problem(pb, "latin4"),
                packed_solutions=True,
                include_option_text=True,
            ),
        )
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "packed_solutions" in refused.value.details()


def test_enumerate_count_only_queens10(pb, stub):
    solutions, batches, _, summary = enumerate_all(
        stub,
        pb.pb2.EnumerateRequest(problem=dlx_problem(pb, "queens10"), count_only=True),
    )
    assert solutions == [] and batches == 0
    assert summary.solutions == 724
    assert summary.exhausted


def test_job_queens8(pb, stub):
    job_id = stub.CreateJob(
        pb.pb2.CreateJobRequest(problem=dlx_problem(pb, "queens8"), keep_solutions=10),
        timeout=TIMEOUT,
    ).job.name
    summaries, kept = [], []
    for response in stub.WatchJob(
        pb.pb2.WatchJobRequest(name=job_id, include_solutions=True), timeout=TIMEOUT
    ):
        kind = response.WhichOneof("event")
        if kind == "solutions":
            kept.extend(tuple(s.option_indices) for s in response.solutions.solutions)
        elif kind == "summary":
            summaries.append(response.summary)
    assert len(summaries) == 1 and summaries[0].solutions == 92
    # The server of these tests stores its jobs (--data-dir): a job keeps
    # every solution, in the order found.
    got = stub.GetJob(pb.pb2.GetJobRequest(name=job_id, max_solutions=10), timeout=TIMEOUT)
    assert got.job.state == pb.pb2.JOB_STATE_SUCCEEDED
    assert got.job.durable and got.job.stored_solutions == 92
    assert job_id.startswith("jobs/") and got.job.name == job_id
    assert got.job.create_time.seconds > 0
    assert got.job.summary.statistics.elapsed.ToTimedelta().total_seconds() >= 0
    assert got.job.summary.solutions == 92
    assert [tuple(s.option_indices) for s in got.solutions] == kept[:10]
    assert len(kept) == 92 and len(set(kept)) == 92
    for s in kept:
        assert_exact_cover("queens8", s)
    # Read back in pages of 25, and watched again from solution 50.
    paged, token = [], ""
    while True:
        page = stub.ListJobSolutions(
            pb.pb2.ListJobSolutionsRequest(name=job_id, page_size=25, page_token=token),
            timeout=TIMEOUT,
        )
        assert page.first_index == len(paged)
        paged.extend(tuple(s.option_indices) for s in page.solutions)
        token = page.next_page_token
        if not token:
            break
    assert paged == kept
    rest = []
    for response in stub.WatchJob(
        pb.pb2.WatchJobRequest(name=job_id, include_solutions=True, from_solution=50),
        timeout=TIMEOUT,
    ):
        if response.WhichOneof("event") == "solutions":
            rest.extend(tuple(s.option_indices) for s in response.solutions.solutions)
    assert rest == kept[50:]
    stub.DeleteJob(pb.pb2.DeleteJobRequest(name=job_id), timeout=TIMEOUT)
    with pytest.raises(grpc.RpcError) as error:
        stub.GetJob(pb.pb2.GetJobRequest(name=job_id), timeout=TIMEOUT)
    assert error.value.code() == grpc.StatusCode.NOT_FOUND


@pytest.mark.parametrize(
    "problem_text, words",
    [
        ("A B\nA B\nA C\n", ["line 3", '"C"']),
        ("A B A\nA B\n", ["line 1", "duplicate"]),
    ],
)
def test_bad_problem_is_invalid_argument(pb, stub, problem_text, words):
    with pytest.raises(grpc.RpcError) as error:
        stub.Solve(
            pb.pb2.SolveRequest(problem=pb.pb2.Problem(dlx=problem_text)), timeout=TIMEOUT
        )
    assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    for word in words:
        assert word in error.value.details()


def test_missing_problem_is_invalid_argument(pb, stub):
    with pytest.raises(grpc.RpcError) as error:
        stub.Solve(pb.pb2.SolveRequest(limit=1), timeout=TIMEOUT)
    assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "problem" in error.value.details()


HITORI = "2 2 1 4\n1 3 3 2\n4 1 2 2\n3 4 4 1\n"


def hitori_ok(puzzle, solved):
    """The rules of hitori, checked here: the white cells keep their numbers,
    no number twice in a row or column among them, no two black cells side
    by side, and the white cells connected."""
    given = [line.split() for line in puzzle.splitlines()]
    grid = [line.split() for line in solved.splitlines()]
    n = len(given)
    assert len(grid) == n and all(len(row) == n for row in grid), solved
    white = {(r, c) for r in range(n) for c in range(n) if grid[r][c] != "#"}
    for r, c in white:
        assert grid[r][c] == given[r][c], solved
    for k in range(n):
        row = [grid[k][c] for c in range(n) if (k, c) in white]
        col = [grid[r][k] for r in range(n) if (r, k) in white]
        if len(set(row)) < len(row) or len(set(col)) < len(col):
            return False
    black = {(r, c) for r in range(n) for c in range(n)} - white
    if any((r + 1, c) in black or (r, c + 1) in black for r, c in black):
        return False
    start = next(iter(white))
    seen, todo = {start}, [start]
    while todo:
        r, c = todo.pop()
        for cell in ((r + 1, c), (r - 1, c), (r, c + 1), (r, c - 1)):
            if cell in white and cell not in seen:
                seen.add(cell)
                todo.append(cell)
    return seen == white


def test_solve_puzzle_hitori_keeps_white_cells_connected(pb, puzzles):
    response = puzzles.SolvePuzzle(
        pb.puzzles.SolvePuzzleRequest(
            puzzle=pb.puzzle.Puzzle(kind=pb.puzzle.PUZZLE_KIND_HITORI, text=HITORI),
            limit=100,
        ),
        timeout=TIMEOUT,
    )
    assert response.exhausted
    texts = [s.text for s in response.solutions]
    assert len(texts) == 2 and len(set(texts)) == 2, texts
    for text in texts:
        assert hitori_ok(HITORI, text), text


def test_enumerate_puzzle_in_batches_and_counts(pb, puzzles):
    blank = pb.puzzle.Puzzle(kind=pb.puzzle.PUZZLE_KIND_SLITHERLINK, text="..\n..\n")
    drawings, summaries = [], []
    for response in puzzles.EnumeratePuzzle(
        pb.puzzles.EnumeratePuzzleRequest(puzzle=blank, batch_size=4), timeout=TIMEOUT
    ):
        kind = response.WhichOneof("event")
        if kind == "solutions":
            assert 1 <= len(response.solutions.solutions) <= 4
            drawings.extend(s.text for s in response.solutions.solutions)
        elif kind == "summary":
            summaries.append(response.summary)
    # Every simple loop on a 2x2 grid of cells, never the empty drawing.
    assert len(drawings) == 13 and len(set(drawings)) == 13
    assert all("-" in d for d in drawings)
    assert len(summaries) == 1 and summaries[0].solutions == 13
    counted = list(
        puzzles.EnumeratePuzzle(
            pb.puzzles.EnumeratePuzzleRequest(puzzle=blank, count_only=True), timeout=TIMEOUT
        )
    )
    assert [r.WhichOneof("event") for r in counted if r.WhichOneof("event") != "progress"] == [
        "summary"
    ]
    assert counted[-1].summary.solutions == 13


@pytest.mark.skipif(not os.environ.get("XCCD_API_KEY"), reason="the server takes no API key")
def test_a_call_without_the_key_is_unauthenticated(pb):
    channel = open_channel(os.environ["XCCD_ADDR"], with_key=False)
    stub = pb.grpc.SolverServiceStub(channel)
    with pytest.raises(grpc.RpcError) as error:
        stub.Solve(pb.pb2.SolveRequest(problem=dlx_problem(pb, "queens8")), timeout=TIMEOUT)
    assert error.value.code() == grpc.StatusCode.UNAUTHENTICATED
    channel.close()
