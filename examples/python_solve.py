#!/usr/bin/env python3
"""Solve a DLX file on an xccd server from Python, and print the solutions and statistics.

    python3 examples/python_solve.py examples/toy.dlx --addr localhost:50051 [--limit N]

The smallest client of the API: one Solve call (grpcio) with the problem as DLX text, asking for
the options' text. Needs grpcio and grpcio-tools (tests/python/requirements.txt); the stubs are
generated from proto/ into a temporary folder (xccd_stubs.py). Plain connections only; the
Python client's tests (tests/python) show TLS and API keys.
"""
import argparse
import tempfile
from pathlib import Path

import grpc

import xccd_stubs


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dlx", type=Path)
    parser.add_argument("--addr", default="localhost:50051")
    parser.add_argument("--limit", type=int, default=2,
                        help="how many solutions to ask for (2 tells whether one is unique)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as out:
        pb2, pb2_grpc = xccd_stubs.load(out)
        with grpc.insecure_channel(args.addr) as channel:
            stub = pb2_grpc.SolverServiceStub(channel)
            request = pb2.SolveRequest(
                problem=pb2.Problem(dlx=args.dlx.read_text()),
                limit=args.limit,
                include_option_text=True,
            )
            response = stub.Solve(request, timeout=60)
    for number, solution in enumerate(response.solutions, 1):
        print(f"solution {number}: options {list(solution.option_indices)}")
        for text in solution.option_texts:
            print(f"  {text}")
    stats = response.statistics
    found = "all of them" if response.exhausted else "stopped at the limit"
    plural = "" if stats.solutions == 1 else "s"
    print(f"{stats.solutions} solution{plural} ({found}), {stats.nodes} nodes,"
          f" {stats.updates} updates, {stats.engine} engine")


if __name__ == "__main__":
    main()
