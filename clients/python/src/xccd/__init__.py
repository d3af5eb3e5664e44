"""xccd's Python client: exact cover problems (with colors) solved by an
xccd server, at once or as jobs that outlive the connection.

    from xccd import Client
    with Client("localhost:50051") as xccd:
        for solution in xccd.covers([[1, 2], [2, 3], [3]], primary=[1, 2, 3]):
            print(solution)
"""

from ._client import Client, SolveResult
from ._errors import IncompleteError, XccdError
from ._jobs import Job, JobSolution, Progress
from ._problems import covers_problem

__all__ = [
    "Client",
    "IncompleteError",
    "Job",
    "JobSolution",
    "Progress",
    "SolveResult",
    "XccdError",
    "covers_problem",
]
