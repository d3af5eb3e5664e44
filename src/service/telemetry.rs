//! OpenTelemetry traces across the coordinator and its workers, off unless
//! an OTLP endpoint is given (`--otlp-endpoint URL`, or the standard
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` / `OTEL_EXPORTER_OTLP_ENDPOINT`).
//!
//! On, [`Exporter::start`] builds an OTLP/gRPC span exporter (tonic) with a
//! batch processor, and its [`Exporter::layer`] joins the process's
//! `tracing` subscriber: every span (a gRPC call's, a job's, a worker's
//! task's) is exported. Contexts cross processes as W3C `traceparent`
//! strings: a client's request header is the parent of its call's span
//! (src/service/grpc_trace.rs), a job keeps the context of the call that
//! submitted it, and each lease carries it to the worker, whose task span
//! takes it as parent: one trace from the client's call to every worker
//! that ran a task of the job.
//!
//! Off, no layer is installed and every function here returns at once on
//! one relaxed atomic load ([`on`]): no span is made for the purpose, no
//! header read, no context written into a lease.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};

use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::WithExportConfig;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The W3C header (and lease field) that carries a span's context.
pub const TRACEPARENT: &str = "traceparent";

static ON: AtomicBool = AtomicBool::new(false);

/// Whether spans are exported (an [`Exporter`] was started).
pub fn on() -> bool {
    ON.load(Ordering::Relaxed)
}

/// The OTLP endpoint to export to: `flag` (`--otlp-endpoint`), else the
/// standard variables; None (traces off) when none is set or all are empty.
pub fn endpoint(flag: Option<String>) -> Option<String> {
    flag.into_iter()
        .chain(
            [
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                "OTEL_EXPORTER_OTLP_ENDPOINT",
            ]
            .iter()
            .filter_map(|name| std::env::var(name).ok()),
        )
        .find(|url| !url.trim().is_empty())
}

/// The span exporter of a process; flushes and stops when dropped.
pub struct Exporter {
    provider: SdkTracerProvider,
}

impl Exporter {
    /// Starts exporting spans to `endpoint` (a gRPC URL, e.g.
    /// `http://otel-collector:4317`) under the service name `service`
    /// (`OTEL_SERVICE_NAME` wins when set). Must be called inside a Tokio
    /// runtime, which must outlive the exporter: tonic's channel runs on it.
    pub fn start(endpoint: &str, service: &str) -> Result<Exporter, String> {
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_tonic()
            .with_endpoint(endpoint)
            .build()
            .map_err(|e| format!("--otlp-endpoint {endpoint}: {e}"))?;
        let service = std::env::var("OTEL_SERVICE_NAME")
            .ok()
            .filter(|name| !name.is_empty())
            .unwrap_or_else(|| service.to_string());
        let resource = opentelemetry_sdk::Resource::builder()
            .with_service_name(service)
            .with_attribute(opentelemetry::KeyValue::new(
                "service.version",
                env!("CARGO_PKG_VERSION"),
            ))
            .build();
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(resource)
            .build();
        ON.store(true, Ordering::Relaxed);
        Ok(Exporter { provider })
    }

    /// The `tracing` layer that turns spans into OpenTelemetry spans.
    pub fn layer<S>(&self) -> impl tracing_subscriber::Layer<S>
    where
        S: tracing::Subscriber + for<'span> tracing_subscriber::registry::LookupSpan<'span>,
    {
        tracing_opentelemetry::layer()
            .with_tracer(self.provider.tracer("xccd"))
            .with_tracked_inactivity(false)
    }
}

impl Drop for Exporter {
    fn drop(&mut self) {
        ON.store(false, Ordering::Relaxed);
        // Exports what is still queued (bounded by the exporter's timeout).
        if let Err(error) = self.provider.shutdown() {
            eprintln!("xccd: exporting the last spans: {error}");
        }
    }
}

/// The `traceparent` of `span`, with traces on (and a span that is
/// exported); else None.
pub fn traceparent(span: &tracing::Span) -> Option<String> {
    if !on() || span.is_disabled() {
        return None;
    }
    let mut carrier = HashMap::new();
    TraceContextPropagator::new().inject_context(&span.context(), &mut Carrier(&mut carrier));
    carrier.remove(TRACEPARENT)
}

/// The `traceparent` of the current span (see [`traceparent`]).
pub fn current() -> Option<String> {
    if !on() {
        return None;
    }
    traceparent(&tracing::Span::current())
}

/// Makes the context that `traceparent` names the parent of `span`
/// (a span not yet entered), with traces on; an empty or malformed value
/// leaves `span` a root.
pub fn set_parent(span: &tracing::Span, traceparent: &str) {
    if !on() || traceparent.is_empty() {
        return;
    }
    let mut carrier = HashMap::from([(TRACEPARENT.to_string(), traceparent.to_string())]);
    let context = TraceContextPropagator::new().extract(&Carrier(&mut carrier));
    let _ = span.set_parent(context);
}

/// A `traceparent` map for the propagator.
struct Carrier<'a>(&'a mut HashMap<String, String>);

impl Injector for Carrier<'_> {
    fn set(&mut self, key: &str, value: String) {
        self.0.insert(key.to_string(), value);
    }
}

impl Extractor for Carrier<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str)
    }
    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(String::as_str).collect()
    }
}
