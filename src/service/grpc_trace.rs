//! The tower layer that gives every gRPC call of the public API its span,
//! with traces on (src/service/telemetry.rs): `grpc` (OpenTelemetry name
//! `SERVICE/METHOD`, kind server), child of the context in the request's
//! W3C `traceparent` header when it has one. The handler runs in it (so a
//! job submitted by the call keeps its context, and its leases carry it to
//! the workers), and it lasts until the response's body ends: a stream's
//! whole life. The server installs the layer only with traces on.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use http::{Request, Response};
use http_body::Frame;
use tonic::body::Body;
use tonic::codegen::{Bytes, StdError};
use tracing::Instrument;

use super::telemetry;

/// The layer; see the module's documentation.
#[derive(Debug, Clone, Copy, Default)]
pub struct GrpcTraceLayer;

impl<S> tower::Layer<S> for GrpcTraceLayer {
    type Service = GrpcTrace<S>;
    fn layer(&self, inner: S) -> GrpcTrace<S> {
        GrpcTrace { inner }
    }
}

#[derive(Debug, Clone)]
pub struct GrpcTrace<S> {
    inner: S,
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl<S, B, R> tower::Service<Request<B>> for GrpcTrace<S>
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
        let path = request.uri().path();
        let (service, method) = path
            .trim_start_matches('/')
            .split_once('/')
            .unwrap_or(("unknown", "unknown"));
        let span = tracing::info_span!(
            "grpc",
            otel.name = path.trim_start_matches('/'),
            otel.kind = "server",
            rpc.system = "grpc",
            rpc.service = service,
            rpc.method = method,
        );
        if let Some(parent) = request
            .headers()
            .get(telemetry::TRACEPARENT)
            .and_then(|v| v.to_str().ok())
        {
            telemetry::set_parent(&span, parent);
        }
        let answer = {
            let _entered = span.enter();
            self.inner.call(request)
        };
        Box::pin(
            async move {
                let response = answer.await?;
                let span = tracing::Span::current();
                Ok(response.map(|body| {
                    Body::new(Traced {
                        inner: Body::new(body),
                        _span: span,
                    })
                }))
            }
            .instrument(span),
        )
    }
}

/// A response body that keeps its call's span open until it is dropped.
struct Traced {
    inner: Body,
    _span: tracing::Span,
}

impl http_body::Body for Traced {
    type Data = Bytes;
    type Error = tonic::Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, tonic::Status>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}
