#!/usr/bin/env python3
"""Stream every solution of a DLX file from an xccd server in Python, and time it.

    python3 examples/python_stream.py bench/instances/latin5.dlx --addr localhost:50051

Needs grpcio and grpcio-tools (tests/python/requirements.txt); the stubs are generated from
proto/ into a temporary folder (xccd_stubs.py). Prints, for counting only, one Solution message
per solution and the packed form (EnumerateRequest.packed_solutions), the seconds and solutions per second
that this client reached, best of --runs. Plain connections only (no TLS, no API key).
"""
import argparse
import array
import sys
import tempfile
import time
from pathlib import Path

import grpc

import xccd_stubs

# The array type of packed indices of 1, 2 and 4 bytes (SolutionBatch.packed_index_bytes).
WIDTHS = {1: "B", 2: "H", 4: "I"}


def stream(stub, pb2, text, form):
    request = pb2.EnumerateRequest(
        problem=pb2.Problem(dlx=text),
        count_only=form == "count",
        packed_solutions=form == "packed",
        batch_size=4096,
    )
    start, solutions, indices = time.perf_counter(), 0, 0
    for response in stub.Enumerate(request):
        kind = response.WhichOneof("event")
        if kind == "solutions":
            batch = response.solutions
            if form == "packed":
                # What a client would keep: the flat indices and the lengths.
                flat = array.array(WIDTHS[batch.packed_index_bytes], batch.packed_indices)
                if sys.byteorder == "big":
                    flat.byteswap()
                lengths = list(batch.packed_lengths)
                solutions += len(lengths)
                indices += len(flat)
            else:
                for s in batch.solutions:
                    indices += len(list(s.option_indices))
                    solutions += 1
        elif kind == "summary" and form == "count":
            solutions = response.summary.solutions
    return time.perf_counter() - start, solutions


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dlx", type=Path)
    parser.add_argument("--addr", default="localhost:50051")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    text = args.dlx.read_text()
    with tempfile.TemporaryDirectory() as out:
        pb2, pb2_grpc = xccd_stubs.load(out)
        options = [("grpc.max_receive_message_length", 64 << 20)]
        with grpc.insecure_channel(args.addr, options=options) as channel:
            stub = pb2_grpc.SolverServiceStub(channel)
            counted = None
            print(f"{'form':<10} {'solutions':>10} {'seconds':>9} {'solutions/s':>12} {'vs count':>9}")
            for form in ["count", "messages", "packed"]:
                best, found = min(stream(stub, pb2, text, form) for _ in range(args.runs))
                counted = counted or best
                print(f"{form:<10} {found:>10} {best:>9.3f} {found / best:>12.0f} {best / counted:>9.2f}")


if __name__ == "__main__":
    main()
