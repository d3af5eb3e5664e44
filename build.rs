//! Compiles the gRPC contract in `proto/` with protox, a protobuf compiler
//! written in Rust, so that building needs no system `protoc`. The encoded
//! descriptor set is kept for server reflection.

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
    std::fs::write(
        out.join("xccd_descriptor.bin"),
        prost::Message::encode_to_vec(&descriptors),
    )?;
    tonic_prost_build::configure().compile_fds(descriptors)?;
    Ok(())
}
