//! Compiles the gRPC contract in `proto/` with protox, a protobuf compiler
//! written in Rust, so that building needs no system `protoc`. The encoded
//! descriptors of the public API (not of the workers' protocol) are kept for
//! server reflection.

use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let files = [
        "proto/xccd/v1/solver.proto",
        "proto/xccd/v1/puzzles.proto",
        "proto/xccd/cluster/v1/worker.proto",
    ];
    println!("cargo:rerun-if-changed=proto");
    let descriptors = protox::compile(files, ["proto"])?;
    let out = PathBuf::from(std::env::var("OUT_DIR")?);
    // Reflection lists what clients may call: the workers' protocol is
    // served on its own listener and left out.
    let public = protox::compile(&files[..2], ["proto"])?;
    std::fs::write(
        out.join("xccd_descriptor.bin"),
        prost::Message::encode_to_vec(&public),
    )?;
    tonic_prost_build::configure()
        // A stream's packed solutions: the server hands its solution buffer
        // over without a copy, and a client decodes them without one.
        .bytes(".xccd.v1.SolutionBatch.packed_indices")
        .compile_fds(descriptors)?;
    Ok(())
}
