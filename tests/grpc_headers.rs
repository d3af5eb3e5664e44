//! The gRPC headers a real `xccd serve` process checks before any service,
//! sent as raw HTTP/2 requests (the h2 crate), since no gRPC client sends
//! them wrong: `grpc-timeout` of 1 ms or less, or one that passes before a
//! unary call answers, is DEADLINE_EXCEEDED (not CANCELLED); a malformed one
//! is INVALID_ARGUMENT with the ErrorInfo reason MALFORMED_GRPC_TIMEOUT
//! (not "no deadline"); a non-gRPC content-type gets HTTP 415 and
//! `application/grpc+json` UNIMPLEMENTED.

mod common;

use common::queens::queens_dlx;
use common::service::{Log, Server};
use std::time::Duration;

use bytes::Bytes;
use prost::Message;
use tonic::Code;
use tonic_types::StatusExt;
use xccd::service::proto as pb;

/// A Solve request for `n` queens, as a gRPC frame.
fn solve_frame(n: usize, limit: u64) -> Bytes {
    let message = pb::SolveRequest {
        problem: Some(pb::Problem {
            source: Some(pb::problem::Source::Dlx(queens_dlx(n))),
        }),
        limit,
        ..Default::default()
    }
    .encode_to_vec();
    let mut frame = vec![0u8];
    frame.extend_from_slice(&(message.len() as u32).to_be_bytes());
    frame.extend_from_slice(&message);
    frame.into()
}

/// What came back: the HTTP status, and the gRPC status if there is one
/// (from the headers of a trailers-only answer, or the trailers).
struct Answer {
    http: http::StatusCode,
    grpc: Option<tonic::Status>,
}

async fn call(
    client: &mut h2::client::SendRequest<Bytes>,
    headers: &[(&str, &str)],
    body: Bytes,
) -> Answer {
    let mut request = http::Request::builder()
        .method("POST")
        .uri("http://localhost/xccd.v1.SolverService/Solve")
        .header("te", "trailers");
    for (k, v) in headers {
        request = request.header(*k, *v);
    }
    let mut client = client.clone().ready().await.expect("ready");
    let (response, mut send) = client
        .send_request(request.body(()).unwrap(), false)
        .expect("send the request");
    send.send_data(body, true).expect("send the body");
    let response = tokio::time::timeout(Duration::from_secs(30), response)
        .await
        .expect("an answer within 30 s")
        .expect("an HTTP/2 answer");
    let http = response.status();
    let mut grpc = tonic::Status::from_header_map(response.headers());
    let mut body = response.into_body();
    while let Some(chunk) = body.data().await {
        let chunk = chunk.expect("the body");
        let _ = body.flow_control().release_capacity(chunk.len());
    }
    if grpc.is_none() {
        if let Ok(Some(trailers)) = body.trailers().await {
            grpc = tonic::Status::from_header_map(&trailers);
        }
    }
    Answer { http, grpc }
}

fn code(answer: &Answer) -> Option<Code> {
    answer.grpc.as_ref().map(|s| s.code())
}

const GRPC: (&str, &str) = ("content-type", "application/grpc");

#[tokio::test]
async fn headers_get_the_statuses_the_grpc_spec_asks() {
    let mut server = Server::start(
        &["--threads", "2", "--data-dir", "none"],
        Log::Create("grpc-headers-serve.log".into()),
    );
    let mut client = server.h2().await;

    // The control: a well-formed call is answered.
    let ok = call(
        &mut client,
        &[GRPC, ("grpc-timeout", "20S")],
        solve_frame(8, 1),
    )
    .await;
    assert_eq!(ok.http, http::StatusCode::OK);
    assert_eq!(code(&ok), Some(Code::Ok), "{:?}", ok.grpc);

    // Deadlines over before anything could run.
    for timeout in ["1m", "1u", "999u", "0S", "5n"] {
        let answer = call(
            &mut client,
            &[GRPC, ("grpc-timeout", timeout)],
            solve_frame(8, 1),
        )
        .await;
        assert_eq!(
            code(&answer),
            Some(Code::DeadlineExceeded),
            "grpc-timeout {timeout}: {:?}",
            answer.grpc
        );
    }
    // Deadlines that pass while a long Solve runs (100,000 solutions of 60
    // queens take far longer): DEADLINE_EXCEEDED, whichever timer fires.
    for timeout in ["2m", "5m", "16m", "40m"] {
        let answer = call(
            &mut client,
            &[GRPC, ("grpc-timeout", timeout)],
            solve_frame(60, 100_000),
        )
        .await;
        assert_eq!(
            code(&answer),
            Some(Code::DeadlineExceeded),
            "grpc-timeout {timeout}: {:?}",
            answer.grpc
        );
    }

    // Malformed timeouts are refused, not taken as no deadline.
    for timeout in ["garbage", "1", "1.5S", "1s", "+1S", "S"] {
        let answer = call(
            &mut client,
            &[GRPC, ("grpc-timeout", timeout)],
            solve_frame(8, 1),
        )
        .await;
        let status = answer.grpc.expect("a gRPC status");
        assert_eq!(
            status.code(),
            Code::InvalidArgument,
            "{timeout}: {status:?}"
        );
        assert!(status.message().contains("grpc-timeout"), "{status:?}");
        let details = status.get_error_details();
        let info = details.error_info().expect("an ErrorInfo");
        assert_eq!(info.reason, "MALFORMED_GRPC_TIMEOUT");
        assert_eq!(info.domain, "xccd");
    }

    // Not gRPC: HTTP 415, as the spec asks.
    for content_type in ["text/plain", "application/json", "application/grpcx"] {
        let answer = call(
            &mut client,
            &[("content-type", content_type)],
            solve_frame(8, 1),
        )
        .await;
        if content_type == "application/grpcx" {
            assert_eq!(code(&answer), Some(Code::Unimplemented), "{content_type}");
        } else {
            assert_eq!(
                answer.http,
                http::StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "{content_type}"
            );
        }
    }
    let none = call(&mut client, &[], solve_frame(8, 1)).await;
    assert_eq!(none.http, http::StatusCode::UNSUPPORTED_MEDIA_TYPE);

    // gRPC, in an encoding this server does not speak.
    for content_type in ["application/grpc+json", "application/grpc+cbor"] {
        let answer = call(
            &mut client,
            &[("content-type", content_type)],
            solve_frame(8, 1),
        )
        .await;
        let status = answer.grpc.expect("a gRPC status");
        assert_eq!(status.code(), Code::Unimplemented, "{content_type}");
        assert!(status.message().contains("content-type"), "{status:?}");
    }
    // Protobuf named explicitly is served.
    let proto = call(
        &mut client,
        &[("content-type", "application/grpc+proto")],
        solve_frame(8, 1),
    )
    .await;
    assert_eq!(code(&proto), Some(Code::Ok), "{:?}", proto.grpc);

    // The server served on through all of it.
    let after = call(&mut client, &[GRPC], solve_frame(8, 1)).await;
    assert_eq!(code(&after), Some(Code::Ok), "{:?}", after.grpc);
}
