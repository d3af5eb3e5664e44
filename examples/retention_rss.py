#!/usr/bin/env python3
"""The memory a server holds for retained jobs: RSS with 40 finished jobs kept, and after they expire.

    python3 examples/retention_rss.py target/release/xccd [--jobs 40] [--keep 100000]
        [--env MALLOC_ARENA_MAX=2 ...]

Starts `xccd serve` (the binary given) on a free port with a short --job-retention and no job
store (--data-dir none: a durable job's solutions live in the store, not in memory), submits
`--jobs` jobs of bench/instances/latin5.dlx that each keep `--keep` solutions with their options'
text (CreateJob, at most 8 running at once), and prints the server's VmRSS and VmHWM
(/proc/PID/status) once every job has ended (the plateau, under the 256 MiB cap of
--max-retained-bytes), then again after every record has expired (ListJobs drops them). This is
how issue 24's "RSS plateaus near 950 MB and stays at 488 MB when all are expired" was measured,
and the figures in src/service/jobs.rs and src/main.rs come from it. A measurement, not a test:
run it on a quiet machine. Needs grpcio and grpcio-tools (tests/python/requirements.txt).
"""
import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import grpc

import xccd_stubs

ROOT = Path(__file__).resolve().parents[1]
RETENTION_SECONDS = 20


def status_kb(pid, field):
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


def mb(kb):
    return kb / 1024


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("xccd", type=Path, help="the xccd binary to measure")
    parser.add_argument("--jobs", type=int, default=40)
    parser.add_argument("--keep", type=int, default=100_000)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--env", action="append", default=[],
                        help="NAME=VALUE for the server's environment (e.g. MALLOC_ARENA_MAX=2)")
    parser.add_argument("--label", default="")
    args = parser.parse_args()
    env = dict(os.environ)
    for item in args.env:
        name, _, value = item.partition("=")
        env[name] = value
    port = free_port()
    server = subprocess.Popen(
        [str(args.xccd), "serve", "--listen", f"127.0.0.1:{port}", "--threads",
         str(args.threads), "--job-retention", str(RETENTION_SECONDS), "--data-dir", "none"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        with tempfile.TemporaryDirectory() as out:
            pb2, pb2_grpc = xccd_stubs.load(out)
            with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
                grpc.channel_ready_future(channel).result(timeout=30)
                stub = pb2_grpc.SolverServiceStub(channel)
                measure(args, server.pid, pb2, stub)
    finally:
        server.terminate()
        server.wait(timeout=30)


def measure(args, pid, pb2, stub):
    dlx = (ROOT / "bench" / "instances" / "latin5.dlx").read_text()
    start_rss = status_kb(pid, "VmRSS")
    running, ended, high = [], 0, 0
    started = time.monotonic()
    submitted = 0
    while ended < args.jobs:
        while submitted < args.jobs and len(running) < 8:
            reply = stub.CreateJob(pb2.CreateJobRequest(
                problem=pb2.Problem(dlx=dlx), keep_solutions=args.keep,
                include_option_text=True), timeout=60)
            running.append(reply.job.name)
            submitted += 1
        time.sleep(0.05)
        high = max(high, status_kb(pid, "VmRSS"))
        still = []
        for name in running:
            try:
                job = stub.GetJob(pb2.GetJobRequest(name=name, max_solutions=1),
                                  timeout=60).job
            except grpc.RpcError as error:
                if error.code() != grpc.StatusCode.NOT_FOUND:
                    raise
                job = None  # ended, and already dropped past the cap
            if job is None or job.state not in (pb2.JOB_STATE_QUEUED, pb2.JOB_STATE_RUNNING):
                ended += 1
            else:
                still.append(name)
        running = still
    elapsed = time.monotonic() - started
    listed = len(stub.ListJobs(pb2.ListJobsRequest(), timeout=60).jobs)
    time.sleep(1)
    plateau, hwm = status_kb(pid, "VmRSS"), status_kb(pid, "VmHWM")
    # Every record ended at most `elapsed` seconds ago: wait out the retention.
    time.sleep(RETENTION_SECONDS + 1)
    left = len(stub.ListJobs(pb2.ListJobsRequest(), timeout=60).jobs)
    time.sleep(1)
    expired = status_kb(pid, "VmRSS")
    label = args.label or " ".join(args.env) or "default"
    print(f"{label:<34} start {mb(start_rss):7.1f} MB  plateau {mb(plateau):7.1f} MB  "
          f"HWM {mb(hwm):7.1f} MB  expired {mb(expired):7.1f} MB  "
          f"({args.jobs} jobs x {args.keep} kept in {elapsed:.1f} s; {listed} listed, {left} after expiry)")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
