//! gzip on a real `xccd serve` process, seen on the wire (raw HTTP/2 with
//! the h2 crate, since a gRPC client hides it): a gzip-compressed request
//! is answered, and the answer comes gzip-compressed when the request's
//! `grpc-accept-encoding` asks for it, uncompressed when not.

mod common;

use common::queens::queens_dlx;
use common::service::{Log, Server};
use std::io::{Read, Write};
use std::time::Duration;

use bytes::Bytes;
use prost::Message;
use xccd::service::proto as pb;

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

fn gunzip(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(bytes)
        .read_to_end(&mut out)
        .expect("a gzip stream");
    out
}

/// A gRPC frame: the compressed flag, the length, the message.
fn frame(compressed: bool, message: &[u8]) -> Bytes {
    let mut frame = vec![u8::from(compressed)];
    frame.extend_from_slice(&(message.len() as u32).to_be_bytes());
    frame.extend_from_slice(message);
    frame.into()
}

/// The answer to one Solve: its `grpc-encoding` header, whether its message
/// was flagged compressed, the decoded response, and the gRPC status.
struct Answer {
    encoding: Option<String>,
    compressed: bool,
    response: pb::SolveResponse,
    status: tonic::Status,
}

async fn solve(
    client: &mut h2::client::SendRequest<Bytes>,
    headers: &[(&str, &str)],
    body: Bytes,
) -> Answer {
    let mut request = http::Request::builder()
        .method("POST")
        .uri("http://localhost/xccd.v1.SolverService/Solve")
        .header("te", "trailers")
        .header("content-type", "application/grpc");
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
    let encoding = response
        .headers()
        .get("grpc-encoding")
        .map(|v| v.to_str().unwrap().to_owned());
    let early = tonic::Status::from_header_map(response.headers());
    let mut body = response.into_body();
    let mut bytes = Vec::new();
    while let Some(chunk) = body.data().await {
        let chunk = chunk.expect("the body");
        let _ = body.flow_control().release_capacity(chunk.len());
        bytes.extend_from_slice(&chunk);
    }
    let status = match early {
        Some(status) => status,
        None => {
            let trailers = body.trailers().await.expect("trailers").expect("trailers");
            tonic::Status::from_header_map(&trailers).expect("a grpc-status")
        }
    };
    assert_eq!(status.code(), tonic::Code::Ok, "{status:?}");
    assert!(bytes.len() >= 5, "one message");
    let compressed = bytes[0] == 1;
    let length = u32::from_be_bytes(bytes[1..5].try_into().unwrap()) as usize;
    assert_eq!(bytes.len(), 5 + length, "one message");
    let message = if compressed {
        gunzip(&bytes[5..])
    } else {
        bytes[5..].to_vec()
    };
    Answer {
        encoding,
        compressed,
        response: pb::SolveResponse::decode(message.as_slice()).expect("a SolveResponse"),
        status,
    }
}

#[tokio::test]
async fn gzip_requests_are_answered_and_answers_are_gzipped_when_asked() {
    let mut server = Server::start(&["--threads", "2", "--data-dir", "none"], Log::Null);
    let mut client = server.h2().await;
    let request = pb::SolveRequest {
        problem: Some(pb::Problem {
            source: Some(pb::problem::Source::Dlx(queens_dlx(8))),
        }),
        limit: 100,
        ..Default::default()
    }
    .encode_to_vec();

    // A compressed request, and an answer asked for in gzip.
    let gzipped = solve(
        &mut client,
        &[("grpc-encoding", "gzip"), ("grpc-accept-encoding", "gzip")],
        frame(true, &gzip(&request)),
    )
    .await;
    assert_eq!(gzipped.encoding.as_deref(), Some("gzip"));
    assert!(
        gzipped.compressed,
        "the answer's message is flagged compressed"
    );
    assert_eq!(gzipped.response.solutions.len(), 92);
    assert!(gzipped.response.exhausted);

    // A compressed request from a client that takes only identity: the
    // answer is not compressed.
    let plain = solve(
        &mut client,
        &[("grpc-encoding", "gzip")],
        frame(true, &gzip(&request)),
    )
    .await;
    assert_eq!(plain.encoding, None);
    assert!(!plain.compressed);
    assert_eq!(plain.response.solutions, gzipped.response.solutions);
    assert_eq!(plain.status.code(), tonic::Code::Ok);
}
