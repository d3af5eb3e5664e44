//! The tower layer in front of a coordinator's listeners (the public API
//! and the workers') when several coordinators share a PostgreSQL store:
//! while this one does not lead, every call but the gRPC health and
//! reflection services is answered UNAVAILABLE, reason `NOT_LEADER`, with
//! the leader's advertised address in `ErrorInfo` metadata `leader`, before
//! any service sees it. So a standby runs no job and hands out no lease,
//! and a client or a worker learns where to go. The health service says
//! NOT_SERVING on a standby (see [`crate::service::leader`]), so a
//! Kubernetes Service routes to the leader only.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use http::{Request, Response};
use tonic::body::Body;

use super::status;
use super::store::fence::Fence;

/// Calls a standby answers itself: health (so that probes see it) and
/// reflection.
fn always_served(path: &str) -> bool {
    path.starts_with("/grpc.health.v1.") || path.starts_with("/grpc.reflection.")
}

/// The layer; see the module's documentation. Without a fence (the SQLite
/// store, or no store) it lets every call through.
#[derive(Clone, Default)]
pub struct LeaderGateLayer {
    fence: Option<Arc<Fence>>,
    /// Refuses whatever the fence says (a standby's listeners).
    standby: bool,
}

impl LeaderGateLayer {
    /// Serves while `fence` leads (the leader's listeners).
    pub fn leading(fence: Option<Arc<Fence>>) -> LeaderGateLayer {
        LeaderGateLayer {
            fence,
            standby: false,
        }
    }

    /// Refuses every call but health and reflection.
    pub fn standby(fence: Arc<Fence>) -> LeaderGateLayer {
        LeaderGateLayer {
            fence: Some(fence),
            standby: true,
        }
    }

    /// The refusal for a call now, if it is refused.
    fn refusal(&self, path: &str) -> Option<Response<Body>> {
        let fence = self.fence.as_ref()?;
        if always_served(path) || (!self.standby && fence.leads()) {
            return None;
        }
        Some(status::not_leader(fence.leader().as_deref()).into_http())
    }
}

impl<S> tower::Layer<S> for LeaderGateLayer {
    type Service = LeaderGate<S>;
    fn layer(&self, inner: S) -> LeaderGate<S> {
        LeaderGate {
            inner,
            gate: self.clone(),
        }
    }
}

#[derive(Clone)]
pub struct LeaderGate<S> {
    inner: S,
    gate: LeaderGateLayer,
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl<S, B, R> tower::Service<Request<B>> for LeaderGate<S>
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
        if let Some(refusal) = self.gate.refusal(request.uri().path()) {
            return Box::pin(std::future::ready(Ok(refusal)));
        }
        let answer = self.inner.call(request);
        Box::pin(async move { answer.await.map(|r| r.map(Body::new)) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_standby_answers_all_but_health_and_reflection() {
        let fence = Arc::new(Fence::new());
        let leading = LeaderGateLayer::leading(Some(fence.clone()));
        let standby = LeaderGateLayer::standby(fence.clone());
        let call = "/xccd.v1.SolverService/CreateJob";
        assert!(leading.refusal(call).is_some(), "no token, no service");
        fence.lead(1, "10.0.0.1:50051");
        assert!(leading.refusal(call).is_none());
        assert!(standby.refusal(call).is_some());
        assert!(standby.refusal("/grpc.health.v1.Health/Check").is_none());
        assert!(LeaderGateLayer::default().refusal(call).is_none());
    }
}
