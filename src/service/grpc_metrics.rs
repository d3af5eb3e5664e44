//! The tower layer that times every gRPC call of the public API:
//! `xccd_grpc_server_handling_seconds{service,method,code}`, from the call's
//! arrival to its status. A unary call's status comes with its answer; a
//! stream's in its trailers, so its time is the stream's whole life. A call
//! whose client goes away before the status is counted `cancelled`.
//!
//! Calls answered UNIMPLEMENTED (no such method) are counted under service
//! and method `unknown`: a client's made-up paths must not become labels.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use http::{HeaderMap, Request, Response};
use http_body::Frame;
use tonic::body::Body;
use tonic::codegen::{Bytes, StdError};

use super::metrics as metric;

/// The layer; see the module's documentation.
#[derive(Debug, Clone, Copy, Default)]
pub struct GrpcMetricsLayer;

impl<S> tower::Layer<S> for GrpcMetricsLayer {
    type Service = GrpcMetrics<S>;
    fn layer(&self, inner: S) -> GrpcMetrics<S> {
        GrpcMetrics { inner }
    }
}

#[derive(Debug, Clone)]
pub struct GrpcMetrics<S> {
    inner: S,
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl<S, B, R> tower::Service<Request<B>> for GrpcMetrics<S>
where
    S: tower::Service<Request<B>, Response = Response<R>>,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
    R: http_body::Body<Data = Bytes> + Send + 'static,
    R::Error: Into<StdError>,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = BoxFuture<Result<Response<Body>, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let call = Call {
            path: request.uri().path().to_string(),
            start: Instant::now(),
        };
        let answer = self.inner.call(request);
        Box::pin(async move {
            let response = match answer.await {
                Ok(response) => response,
                Err(error) => {
                    call.done(Some(tonic::Code::Internal));
                    return Err(error);
                }
            };
            if let Some(code) = status(response.headers()) {
                // Trailers-only: the status is already known.
                call.done(Some(code));
                return Ok(response.map(Body::new));
            }
            Ok(response.map(|body| {
                Body::new(Timed {
                    inner: Body::new(body),
                    call: Some(call),
                })
            }))
        })
    }
}

/// A call being timed.
struct Call {
    path: String,
    start: Instant,
}

impl Call {
    /// Records the call's time under its status (`None`: no status came).
    fn done(self, code: Option<tonic::Code>) {
        let elapsed = self.start.elapsed();
        let code = code.map_or("unknown", metric::grpc_code);
        let (service, method) = match self.path.trim_start_matches('/').split_once('/') {
            Some((service, method)) if code != "unimplemented" => {
                (service.to_string(), method.to_string())
            }
            _ => ("unknown".to_string(), "unknown".to_string()),
        };
        metrics::histogram!(
            metric::GRPC_SERVER_HANDLING,
            "service" => service,
            "method" => method,
            "code" => code
        )
        .record(elapsed);
    }
}

fn status(headers: &HeaderMap) -> Option<tonic::Code> {
    headers
        .get("grpc-status")
        .map(|value| tonic::Code::from_bytes(value.as_bytes()))
}

/// A response body that records its call when its trailers pass, or when
/// it is dropped before them (the client went away: `cancelled`).
struct Timed {
    inner: Body,
    call: Option<Call>,
}

impl http_body::Body for Timed {
    type Data = Bytes;
    type Error = tonic::Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, tonic::Status>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(trailers) = frame.trailers_ref() {
                    if let Some(call) = self.call.take() {
                        call.done(status(trailers));
                    }
                }
            }
            Poll::Ready(Some(Err(_))) => {
                if let Some(call) = self.call.take() {
                    call.done(Some(tonic::Code::Internal));
                }
            }
            Poll::Ready(None) => {
                if let Some(call) = self.call.take() {
                    call.done(None);
                }
            }
            Poll::Pending => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for Timed {
    fn drop(&mut self) {
        if let Some(call) = self.call.take() {
            call.done(Some(tonic::Code::Cancelled));
        }
    }
}
