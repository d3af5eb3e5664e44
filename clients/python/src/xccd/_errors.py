"""The exceptions the client raises: one class for every failed call,
carrying the gRPC code and the google.rpc.ErrorInfo of the status details
(read from any domain), and a subclass for a search that ended before it
did what was asked."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

import grpc
from google.rpc import error_details_pb2, status_pb2

_DETAILS_KEY = "grpc-status-details-bin"


class XccdError(Exception):
    """A call to xccd failed.

    `code` is the gRPC status code (a grpc.StatusCode, None when the call
    itself ended OK but its answer was incomplete), `message` the status
    message, and `reason`, `domain` and `metadata` those of the status's
    google.rpc.ErrorInfo (None, None and {} when it has none). `details`
    holds every detail of the status as google.protobuf.Any messages, for
    the kinds this class does not read (BadRequest, RetryInfo, ...).
    """

    def __init__(
        self,
        message: str,
        *,
        code: Optional[grpc.StatusCode] = None,
        reason: Optional[str] = None,
        domain: Optional[str] = None,
        metadata: Optional[Dict[str, str]] = None,
        details: Optional[List[Any]] = None,
        retry_delay: Optional[float] = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.reason = reason
        self.domain = domain
        self.metadata: Dict[str, str] = dict(metadata or {})
        self.details: List[Any] = list(details or [])
        #: Seconds the server asked to wait before a retry (RetryInfo).
        self.retry_delay = retry_delay

    def __str__(self) -> str:
        parts = []
        if self.code is not None:
            parts.append(self.code.name)
        if self.reason:
            parts.append(f"{self.reason} ({self.domain})" if self.domain else self.reason)
        prefix = " ".join(parts)
        return f"{prefix}: {self.message}" if prefix else self.message


class IncompleteError(XccdError):
    """A search ended before it did what was asked: its summary's reason is
    not COMPLETE (nor the limit asked for), or its stream ended without a
    summary. `end_reason` names the summary's EndReason (for example
    "END_REASON_SHUTDOWN"), None when there was no summary."""

    def __init__(self, message: str, *, end_reason: Optional[str] = None, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.end_reason = end_reason

    def __str__(self) -> str:
        text = super().__str__()
        return f"{self.end_reason}: {text}" if self.end_reason else text


def _rich_status(error: grpc.RpcError) -> Optional[Any]:
    trailers = getattr(error, "trailing_metadata", None)
    for key, value in (trailers() if callable(trailers) else None) or ():
        if key == _DETAILS_KEY:
            try:
                return status_pb2.Status.FromString(value)
            except Exception:  # a malformed detail is no detail
                return None
    return None


_CODES = {code.value[0]: code for code in grpc.StatusCode}


def status_code(number: int) -> grpc.StatusCode:
    """The grpc.StatusCode of a google.rpc.Status's `code`."""
    return _CODES.get(number, grpc.StatusCode.UNKNOWN)


def read_details(details: List[Any]) -> Dict[str, Any]:
    """The ErrorInfo and RetryInfo among a status's details, as keyword
    arguments of XccdError."""
    found: Dict[str, Any] = {"details": list(details)}
    for detail in details:
        if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR) and "reason" not in found:
            info = error_details_pb2.ErrorInfo()
            detail.Unpack(info)
            found.update(reason=info.reason, domain=info.domain, metadata=dict(info.metadata))
        elif detail.Is(error_details_pb2.RetryInfo.DESCRIPTOR):
            retry = error_details_pb2.RetryInfo()
            detail.Unpack(retry)
            found["retry_delay"] = retry.retry_delay.ToTimedelta().total_seconds()
    return found


def from_rpc_error(error: grpc.RpcError, cls: type = XccdError, **extra: Any) -> XccdError:
    """The XccdError (or `cls`) of a failed grpcio call."""
    code_of = getattr(error, "code", None)
    details_of = getattr(error, "details", None)
    code = code_of() if callable(code_of) else grpc.StatusCode.UNKNOWN
    message = (details_of() if callable(details_of) else None) or str(error)
    rich = _rich_status(error)
    fields = read_details(list(rich.details)) if rich is not None else {}
    made = cls(message, code=code, **fields, **extra)
    assert isinstance(made, XccdError)
    return made
