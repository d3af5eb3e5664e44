//! The tower layer in front of the public gRPC services that checks the
//! headers gRPC itself defines before any service sees the call (the gRPC
//! over HTTP/2 spec, PROTOCOL-HTTP2.md):
//!
//! - `content-type`: a request that is not gRPC (no `application/grpc`
//!   prefix) gets HTTP 415, as the spec asks, so that no other HTTP client
//!   reads an answer as success; gRPC in another encoding than protobuf
//!   (`application/grpc+json`, ...) gets UNIMPLEMENTED, where tonic would
//!   decode it as protobuf;
//! - `grpc-timeout`: one that does not parse gets INVALID_ARGUMENT (ErrorInfo
//!   `MALFORMED_GRPC_TIMEOUT`) rather than being taken as no deadline, and a
//!   deadline that passes before the handler answers gets DEADLINE_EXCEEDED:
//!   tonic's own timer, outside every layer, would answer CANCELLED. A
//!   timeout of 1 ms or less is answered at once, before any work.
//!
//! The parsing of `grpc-timeout` lives here, and the handlers read their
//! deadline through [`parse_timeout`] too: one reading of the header.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use http::{header, HeaderMap, Request, Response, StatusCode};
use tonic::body::Body;

use super::status;

/// The longest deadline taken from a request; longer ones are clamped, so
/// that adding one to the clock cannot overflow.
const LONGEST_DEADLINE: Duration = Duration::from_secs(10 * 365 * 86400);

/// Deadlines this short are over before a call could do anything: they are
/// answered DEADLINE_EXCEEDED at once.
const TOO_SHORT: Duration = Duration::from_millis(1);

/// Reads a `grpc-timeout` value: an integer and a unit (H, M, S, m, u, n),
/// clamped to ten years. The spec allows at most 8 digits; longer numbers
/// are taken (and clamped) rather than refused, as clients send them.
/// `None` when it does not parse.
pub fn parse_timeout(value: &[u8]) -> Option<Duration> {
    let (&unit, digits) = value.split_last()?;
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let digits = std::str::from_utf8(digits).ok()?;
    // Longer numbers than u64 holds are clamped too.
    let n: u64 = digits.parse().unwrap_or(u64::MAX);
    let d = match unit {
        b'H' => Duration::from_secs(n.saturating_mul(3600)),
        b'M' => Duration::from_secs(n.saturating_mul(60)),
        b'S' => Duration::from_secs(n),
        b'm' => Duration::from_millis(n),
        b'u' => Duration::from_micros(n),
        b'n' => Duration::from_nanos(n),
        _ => return None,
    };
    Some(d.min(LONGEST_DEADLINE))
}

/// What the headers of a request say to do with it.
enum Verdict {
    /// Serve it, with the deadline it names, if any.
    Serve(Option<Duration>),
    /// Answer this at once.
    Answer(Response<Body>),
}

fn judge(headers: &HeaderMap) -> Verdict {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .map(|v| v.as_bytes())
        .unwrap_or_default();
    let Some(rest) = content_type.strip_prefix(b"application/grpc") else {
        let mut response = Response::new(Body::new(
            "xccd serves gRPC: the content-type must be application/grpc\n".to_string(),
        ));
        *response.status_mut() = StatusCode::UNSUPPORTED_MEDIA_TYPE;
        return Verdict::Answer(response);
    };
    let subtype = match rest.first() {
        None | Some(b';') => None,
        Some(b'+') => Some(rest[1..].split(|&b| b == b';').next().unwrap_or_default()),
        // `application/grpcfoo` is no gRPC content type at all.
        Some(_) => Some(rest),
    };
    if let Some(subtype) = subtype.filter(|s| !s.eq_ignore_ascii_case(b"proto")) {
        return Verdict::Answer(
            status::error(
                status::Reason::UnsupportedContentType,
                format!(
                    "content-type: application/grpc+{} is not served: only protobuf \
                 (application/grpc or application/grpc+proto)",
                    String::from_utf8_lossy(subtype)
                ),
            )
            .into_http(),
        );
    }
    let Some(value) = headers.get("grpc-timeout") else {
        return Verdict::Serve(None);
    };
    match parse_timeout(value.as_bytes()) {
        None => Verdict::Answer(
            status::error(
                status::Reason::MalformedGrpcTimeout,
                format!(
                    "grpc-timeout: {:?} is not a gRPC timeout (digits and a unit: H, M, S, m, u \
                     or n)",
                    String::from_utf8_lossy(value.as_bytes())
                ),
            )
            .into_http(),
        ),
        Some(d) if d <= TOO_SHORT => Verdict::Answer(deadline_exceeded(d)),
        Some(d) => Verdict::Serve(Some(d)),
    }
}

fn deadline_exceeded(d: Duration) -> Response<Body> {
    status::deadline(format!(
        "deadline of {:.3} s passed before the server answered",
        d.as_secs_f64()
    ))
    .into_http()
}

/// The layer; see the module's documentation.
#[derive(Debug, Clone, Copy, Default)]
pub struct GrpcHeadersLayer;

impl<S> tower::Layer<S> for GrpcHeadersLayer {
    type Service = GrpcHeaders<S>;
    fn layer(&self, inner: S) -> GrpcHeaders<S> {
        GrpcHeaders { inner }
    }
}

#[derive(Debug, Clone)]
pub struct GrpcHeaders<S> {
    inner: S,
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl<S, B, R> tower::Service<Request<B>> for GrpcHeaders<S>
where
    S: tower::Service<Request<B>, Response = Response<R>>,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
    R: tonic::codegen::Body<Data = tonic::codegen::Bytes> + Send + 'static,
    R::Error: Into<tonic::codegen::StdError>,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = BoxFuture<Result<Response<Body>, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        match judge(request.headers()) {
            Verdict::Answer(response) => Box::pin(std::future::ready(Ok(response))),
            Verdict::Serve(deadline) => {
                // The timer starts before tonic's (which is set up after
                // this call returns) and so fires no later: when both are
                // due, tonic polls this future first and takes its answer.
                let sleep = deadline.map(tokio::time::sleep);
                let answer = self.inner.call(request);
                Box::pin(async move {
                    let answer = async { answer.await.map(|r| r.map(Body::new)) };
                    match sleep {
                        None => answer.await,
                        Some(sleep) => tokio::select! {
                            biased;
                            answer = answer => answer,
                            () = sleep => Ok(deadline_exceeded(deadline.unwrap_or_default())),
                        },
                    }
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_parse_as_the_spec_writes_them() {
        assert_eq!(parse_timeout(b"1m"), Some(Duration::from_millis(1)));
        assert_eq!(parse_timeout(b"15S"), Some(Duration::from_secs(15)));
        assert_eq!(parse_timeout(b"2H"), Some(Duration::from_secs(7200)));
        assert_eq!(
            parse_timeout(b"18446744073709551615H"),
            Some(LONGEST_DEADLINE)
        );
        for bad in [
            &b""[..],
            b"1",
            b"S",
            b"1.5S",
            b"+1S",
            b"1s",
            b"1 S",
            b"\xd9\xa3S",
        ] {
            assert_eq!(
                parse_timeout(bad),
                None,
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.insert(*k, v.parse().unwrap());
        }
        map
    }

    fn grpc_status(verdict: Verdict) -> Option<String> {
        match verdict {
            Verdict::Answer(r) => r
                .headers()
                .get("grpc-status")
                .map(|v| v.to_str().unwrap().to_string())
                .or(Some(r.status().as_str().to_string())),
            Verdict::Serve(_) => None,
        }
    }

    #[test]
    fn headers_are_judged_before_any_service() {
        let grpc = ("content-type", "application/grpc");
        for (pairs, expected) in [
            (vec![grpc], None),
            (vec![("content-type", "application/grpc+proto")], None),
            (vec![("content-type", "application/grpc;charset=x")], None),
            (vec![("content-type", "application/grpc+json")], Some("12")),
            (vec![("content-type", "text/plain")], Some("415")),
            (vec![("content-type", "application/grpcx")], Some("12")),
            (vec![], Some("415")),
            (vec![grpc, ("grpc-timeout", "1m")], Some("4")),
            (vec![grpc, ("grpc-timeout", "900u")], Some("4")),
            (vec![grpc, ("grpc-timeout", "2m")], None),
            (vec![grpc, ("grpc-timeout", "soon")], Some("3")),
        ] {
            assert_eq!(
                grpc_status(judge(&headers(&pairs))).as_deref(),
                expected,
                "{pairs:?}"
            );
        }
    }
}
