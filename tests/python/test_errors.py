"""The error details of xccd's statuses (docs/errors.md, AIP-193), read by
a real grpcio client with grpcio-status: every error path carries a
google.rpc.ErrorInfo with a stable reason in domain "xccd", and the details
that go with its code (BadRequest, ResourceInfo, RetryInfo).

Runs against the live server of test_client.py (XCCD_ADDR, XCCD_CA_CERT,
XCCD_API_KEY) and shares its fixtures.
"""

import os

import grpc
import pytest
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from test_client import TIMEOUT, dlx_problem, open_channel, pb, puzzles, stub  # noqa: F401


def details(error):
    """The status of a failed call and its details by type name."""
    status = rpc_status.from_call(error)
    assert status is not None, f"{error.code()} {error.details()} has no details"
    assert status.code == error.code().value[0]
    found = {}
    for any_ in status.details:
        name = any_.TypeName().split(".")[-1]
        message = getattr(error_details_pb2, name)()
        assert any_.Unpack(message)
        found[name] = message
    return status, found


def reason_of(error, reason, code):
    assert error.code() == code, error.details()
    status, found = details(error)
    info = found["ErrorInfo"]
    assert info.domain == "xccd"
    assert info.reason == reason, f"{info.reason} != {reason}: {status.message}"
    return found


def fails(call, request, stream=False):
    """The error a call ends with (a stream is read to its end)."""
    with pytest.raises(grpc.RpcError) as error:
        result = call(request, timeout=TIMEOUT)
        if stream:
            for _ in result:
                pass
    return error.value


def test_a_bad_problem_names_its_field_and_reason(pb, stub):
    error = fails(stub.Solve, pb.pb2.SolveRequest(problem=pb.pb2.Problem(dlx="a b\nc\n")))
    found = reason_of(error, "INVALID_PROBLEM", grpc.StatusCode.INVALID_ARGUMENT)
    assert found["ErrorInfo"].metadata["field"] == "problem.dlx"
    assert found["BadRequest"].field_violations[0].field == "problem.dlx"


def test_a_missing_problem_is_invalid_problem(pb, stub):
    error = fails(stub.Solve, pb.pb2.SolveRequest())
    reason_of(error, "INVALID_PROBLEM", grpc.StatusCode.INVALID_ARGUMENT)


def test_a_problem_over_the_item_limit_is_too_large(pb, stub):
    items = " ".join(f"i{k}" for k in range((1 << 20) + 1))
    error = fails(stub.Solve, pb.pb2.SolveRequest(problem=pb.pb2.Problem(dlx=f"{items}\ni0\n")))
    found = reason_of(error, "PROBLEM_TOO_LARGE", grpc.StatusCode.INVALID_ARGUMENT)
    assert int(found["ErrorInfo"].metadata["limit"]) == 1 << 20
    assert int(found["ErrorInfo"].metadata["value"]) > 1 << 20


def test_a_batch_over_its_limit_says_the_limit(pb, stub):
    request = pb.pb2.EnumerateRequest(problem=dlx_problem(pb, "queens8"), batch_size=1 << 31)
    error = fails(stub.Enumerate, request, stream=True)
    found = reason_of(error, "LIMIT_EXCEEDED", grpc.StatusCode.INVALID_ARGUMENT)
    metadata = found["ErrorInfo"].metadata
    assert metadata["field"] == "batch_size" and int(metadata["value"]) > int(metadata["limit"])


def test_a_missing_job_names_the_resource(pb, stub):
    error = fails(stub.GetJob, pb.pb2.GetJobRequest(name="jobs/987654321"))
    found = reason_of(error, "JOB_NOT_FOUND", grpc.StatusCode.NOT_FOUND)
    assert found["ResourceInfo"].resource_type == "xccd.v1.Job"
    assert found["ResourceInfo"].resource_name == "jobs/987654321"


def test_a_bad_job_name_is_invalid_job_name(pb, stub):
    error = fails(stub.GetJob, pb.pb2.GetJobRequest(name="five"))
    reason_of(error, "INVALID_JOB_NAME", grpc.StatusCode.INVALID_ARGUMENT)


def test_a_bad_page_token_is_invalid_page_token(pb, stub):
    error = fails(stub.ListJobs, pb.pb2.ListJobsRequest(page_token="not-a-token"))
    found = reason_of(error, "INVALID_PAGE_TOKEN", grpc.StatusCode.INVALID_ARGUMENT)
    assert found["BadRequest"].field_violations[0].field == "page_token"


def test_a_bad_puzzle_is_invalid_puzzle(pb, puzzles):
    request = pb.puzzles.SolvePuzzleRequest(puzzle=pb.puzzle.Puzzle())
    error = fails(puzzles.SolvePuzzle, request)
    reason_of(error, "INVALID_PUZZLE", grpc.StatusCode.INVALID_ARGUMENT)


@pytest.mark.skipif(not os.environ.get("XCCD_API_KEY"), reason="the server takes no API key")
def test_a_call_without_the_key_says_api_key_invalid(pb):
    channel = open_channel(os.environ["XCCD_ADDR"], with_key=False)
    try:
        unkeyed = pb.grpc.SolverServiceStub(channel)
        error = fails(unkeyed.Solve, pb.pb2.SolveRequest(problem=dlx_problem(pb, "queens8")))
        reason_of(error, "API_KEY_INVALID", grpc.StatusCode.UNAUTHENTICATED)
    finally:
        channel.close()

