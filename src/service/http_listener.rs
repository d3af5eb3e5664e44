//! The accept loop of the server's two small HTTP/1 listeners, `/metrics`
//! (metrics.rs) and the dashboard (dashboard/): each connection served by
//! hyper on a task of its own with the listener's answer function. It owns
//! only the transport (TLS too, for the dashboard when the server has a
//! certificate); what a request is answered is the caller's.

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;

/// How long a client has to finish its TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Serves HTTP/1 on `listener` forever, answering each request with
/// `answer`, over TLS with `tls`. `name` labels the log line when a
/// connection cannot be accepted (out of file descriptors, most likely):
/// the loop waits a little and goes on rather than spinning or ending the
/// listener.
pub async fn serve<A, F>(
    listener: TcpListener,
    name: &'static str,
    answer: Arc<A>,
    tls: Option<tokio_rustls::TlsAcceptor>,
) where
    A: Fn(http::Request<hyper::body::Incoming>) -> F + Send + Sync + 'static,
    F: Future<Output = http::Response<String>> + Send + 'static,
{
    loop {
        let (stream, _) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(error) => {
                tracing::warn!(%error, "{name} listener: cannot accept");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let answer = answer.clone();
        let tls = tls.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |request| {
                let reply = answer(request);
                async move { Ok::<_, Infallible>(reply.await) }
            });
            let http1 = hyper::server::conn::http1::Builder::new();
            let Some(tls) = tls else {
                let _ = http1
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                    .await;
                return;
            };
            // A failed handshake (a plain-HTTP client, an unknown
            // certificate) ends the connection, nothing more.
            if let Ok(Ok(stream)) =
                tokio::time::timeout(HANDSHAKE_TIMEOUT, tls.accept(stream)).await
            {
                let _ = http1
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                    .await;
            }
        });
    }
}
