//! Distributed traces, end to end: an OTLP receiver in this test (a tonic
//! server of the collector's `TraceService`, from the `opentelemetry-proto`
//! crate), a pure coordinator and two remote workers that export their spans
//! to it (`--otlp-endpoint`), and one Enumerate whose request carries a W3C
//! `traceparent`. The trace that arrives holds the coordinator's span of
//! the call (a child of the client's span), and task spans from both worker
//! processes in the same trace, each with the coordinator's span as an
//! ancestor: the lease carried the job's context across.

mod common;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use opentelemetry_proto::tonic::trace::v1::Span;
use tonic::{Request, Response, Status};

use common::live::Cluster;
use common::queens::queens_dlx;
use common::service::{connect, dlx};
use xccd::service::proto as pb;

/// A span as received, with its process's `service.name` and
/// `service.instance.id`.
#[derive(Clone, Debug)]
struct Received {
    service: String,
    instance: String,
    span: Span,
}

/// The OTLP receiver: keeps every span exported to it.
#[derive(Clone, Default)]
struct Receiver(Arc<Mutex<Vec<Received>>>);

#[tonic::async_trait]
impl TraceService for Receiver {
    async fn export(
        &self,
        request: Request<ExportTraceServiceRequest>,
    ) -> Result<Response<ExportTraceServiceResponse>, Status> {
        let mut spans = self.0.lock().unwrap();
        for resource_spans in request.into_inner().resource_spans {
            let attribute = |key: &str| {
                resource_spans
                    .resource
                    .iter()
                    .flat_map(|r| &r.attributes)
                    .find(|kv| kv.key == key)
                    .and_then(|kv| kv.value.as_ref()?.value.as_ref())
                    .map(|v| match v {
                        Value::StringValue(s) => s.clone(),
                        other => format!("{other:?}"),
                    })
                    .unwrap_or_default()
            };
            let (service, instance) = (attribute("service.name"), attribute("service.instance.id"));
            for scope in &resource_spans.scope_spans {
                for span in &scope.spans {
                    spans.push(Received {
                        service: service.clone(),
                        instance: instance.clone(),
                        span: span.clone(),
                    });
                }
            }
        }
        Ok(Response::new(ExportTraceServiceResponse::default()))
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The span's attribute `key` as text.
fn attribute(span: &Span, key: &str) -> Option<String> {
    span.attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref()?.value.as_ref())
        .map(|v| match v {
            Value::StringValue(s) => s.clone(),
            Value::IntValue(i) => i.to_string(),
            other => format!("{other:?}"),
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_enumerate_is_one_trace_from_the_client_to_both_workers() {
    let receiver = Receiver::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let otlp = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(TraceServiceServer::new(receiver.clone()))
            .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener)),
    );

    // Spans leave each process within 100 ms of their end.
    let (cluster, workers) = tokio::task::spawn_blocking(move || {
        let batch = ("OTEL_BSP_SCHEDULE_DELAY", "100");
        let exporting = ["--otlp-endpoint", otlp.as_str()];
        let mut cluster = Cluster::coordinator("traces", &exporting, &[batch]);
        let workers = ["trace-worker-1", "trace-worker-2"];
        for name in workers {
            let instance = format!("service.instance.id={name}");
            let env = [batch, ("OTEL_RESOURCE_ATTRIBUTES", instance.as_str())];
            cluster.worker(name, 1, &exporting, &env);
        }
        (cluster, workers)
    })
    .await
    .unwrap();

    // The client's span: a trace id and span id of its own.
    let trace_id = format!("{:016x}{:016x}", rand_u64(), rand_u64());
    let client_span = format!("{:016x}", rand_u64());
    let mut request = Request::new(pb::EnumerateRequest {
        problem: dlx(queens_dlx(12)),
        count_only: true,
        ..Default::default()
    });
    request.metadata_mut().insert(
        "traceparent",
        format!("00-{trace_id}-{client_span}-01").parse().unwrap(),
    );
    let mut client = connect(cluster.api).await;
    let mut stream = client.enumerate(request).await.unwrap().into_inner();
    let mut summary = None;
    while let Some(message) = stream.message().await.unwrap() {
        if let Some(pb::enumerate_response::Event::Summary(s)) = message.event {
            summary = Some(s);
        }
    }
    let summary = summary.expect("the stream ends with its summary");
    assert_eq!(summary.solutions, 14200, "{summary:?}");

    // Wait for the task spans of both workers and the coordinator's span.
    let until = Instant::now() + Duration::from_secs(30);
    let spans = loop {
        let spans = receiver.0.lock().unwrap().clone();
        let in_trace = |r: &&Received| hex(&r.span.trace_id) == trace_id;
        let from = |instance: &str| {
            spans
                .iter()
                .filter(in_trace)
                .any(|r| r.instance == instance && r.span.name == "task")
        };
        let call = spans
            .iter()
            .filter(in_trace)
            .any(|r| r.service == "xccd-coordinator" && r.span.name.ends_with("/Enumerate"));
        if call && workers.iter().all(|w| from(w)) {
            break spans;
        }
        assert!(
            Instant::now() < until,
            "not every span came within 30 s: {:#?}",
            spans
                .iter()
                .map(|r| (&r.service, &r.instance, &r.span.name, hex(&r.span.trace_id)))
                .collect::<Vec<_>>()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };

    let by_id: HashMap<String, &Received> =
        spans.iter().map(|r| (hex(&r.span.span_id), r)).collect();
    // The coordinator's span of the call: the client's span is its parent.
    let call = spans
        .iter()
        .find(|r| {
            r.service == "xccd-coordinator" && r.span.name == "xccd.v1.SolverService/Enumerate"
        })
        .expect("the coordinator's span of the call");
    assert_eq!(hex(&call.span.trace_id), trace_id);
    assert_eq!(hex(&call.span.parent_span_id), client_span);
    assert_eq!(
        attribute(&call.span, "rpc.method").as_deref(),
        Some("Enumerate")
    );
    // The job's span inside it.
    assert!(
        spans.iter().any(|r| r.service == "xccd-coordinator"
            && r.span.name == "job"
            && r.span.parent_span_id == call.span.span_id),
        "no job span under the call"
    );
    // Every task span of the workers is in the client's trace, under the call.
    let tasks: Vec<&Received> = spans.iter().filter(|r| r.span.name == "task").collect();
    for task in &tasks {
        assert_eq!(task.service, "xccd-worker");
        assert_eq!(hex(&task.span.trace_id), trace_id, "{task:?}");
        let mut parent = hex(&task.span.parent_span_id);
        let mut hops = 0;
        while parent != hex(&call.span.span_id) {
            let next = by_id
                .get(&parent)
                .unwrap_or_else(|| panic!("task span {task:?}: its ancestor {parent} never came"));
            parent = hex(&next.span.parent_span_id);
            hops += 1;
            assert!(hops < 10, "task span {task:?}: no coordinator ancestor");
        }
        assert!(attribute(&task.span, "job").is_some(), "{task:?}");
    }
    for worker in workers {
        assert!(
            tasks.iter().any(|t| t.instance == worker),
            "no task span from {worker}"
        );
    }
    drop(cluster);
}

fn rand_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(Instant::now().elapsed().as_nanos());
    hasher.finish() | 1
}
