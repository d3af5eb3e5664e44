//! Compiles the gRPC contract in `proto/` with protox, a protobuf compiler
//! written in Rust, so that building needs no system `protoc`. The encoded
//! descriptors of the public API (not of the workers' protocol) are kept for
//! server reflection. It also lists the benchmark set of `bench/` for
//! `include_str!`, so that `xccd bench` carries its instances and reference
//! tables wherever the binary runs.

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
    // served on its own listener and left out. The error detail types
    // (google.rpc.ErrorInfo, BadRequest, ...) are served too, so that
    // grpcurl decodes the details of an error status (docs/errors.md).
    let reflected = [files[0], files[1], "proto/google/rpc/error_details.proto"];
    let public = protox::compile(reflected, ["proto"])?;
    std::fs::write(
        out.join("xccd_descriptor.bin"),
        prost::Message::encode_to_vec(&public),
    )?;
    tonic_prost_build::configure()
        // google.rpc.Status (Summary.error) is tonic-types' own type, the
        // one StatusExt reads and writes details with: generating it again
        // would make a second, incompatible Rust type of the same message.
        .extern_path(".google.rpc", "::tonic_types::pb")
        // A stream's packed solutions: the server hands its solution buffer
        // over without a copy, and a client decodes them without one.
        .bytes(".xccd.v1.SolutionBatch.packed_indices")
        // A worker's packed solutions likewise, both ways.
        .bytes(".xccd.cluster.v1.Found.packed_indices")
        .compile_fds(descriptors)?;
    embed_bench_set(&out)?;
    Ok(())
}

/// Writes `bench_set.rs`: every `bench/instances/*.dlx` as `(name, text)`,
/// sorted by name, every `bench/memo/*.dlx` and `bench/costs/*.dlx`
/// likewise, and the reference
/// tables.
fn embed_bench_set(out: &std::path::Path) -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=bench");
    let bench = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?).join("bench");
    let mut names: Vec<String> = std::fs::read_dir(bench.join("instances"))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|x| x == "dlx"))
        .filter_map(|path| Some(path.file_stem()?.to_str()?.to_string()))
        .collect();
    names.sort();
    let include = |path: PathBuf| format!("include_str!({:?})", path.display().to_string());
    let mut code = String::from("pub(crate) const INSTANCES: &[(&str, &str)] = &[\n");
    for name in &names {
        let path = bench.join("instances").join(format!("{name}.dlx"));
        code.push_str(&format!("    ({name:?}, {}),\n", include(path)));
    }
    code.push_str("];\n");
    // The memoized-counting instances (`xccd bench --memo`) and those with
    // costs (`xccd bench --service`'s cheapest row), beside the others:
    // `memo/*.dlx`, `costs/*.dlx`.
    for (constant, folder) in [("MEMO_INSTANCES", "memo"), ("COST_INSTANCES", "costs")] {
        code.push_str(&format!(
            "pub(crate) const {constant}: &[(&str, &str)] = &[\n"
        ));
        let mut found: Vec<String> = std::fs::read_dir(bench.join(folder))?
            .filter_map(|entry| entry.ok().map(|e| e.path()))
            .filter(|path| path.extension().is_some_and(|x| x == "dlx"))
            .filter_map(|path| Some(path.file_stem()?.to_str()?.to_string()))
            .collect();
        found.sort();
        for name in &found {
            let path = bench.join(folder).join(format!("{name}.dlx"));
            code.push_str(&format!("    ({name:?}, {}),\n", include(path)));
        }
        code.push_str("];\n");
    }
    for (constant, file) in [
        ("KNUTH_REFERENCE", "knuth-reference.tsv"),
        ("SSXCC_REFERENCE", "ssxcc-reference.tsv"),
        ("SSMCC_REFERENCE", "ssmcc-reference.tsv"),
        ("CELLS_REFERENCE", "cells-reference.tsv"),
        ("DLX6_REFERENCE", "dlx6-reference.tsv"),
    ] {
        code.push_str(&format!(
            "pub(crate) const {constant}: &str = {};\n",
            include(bench.join(file))
        ));
    }
    std::fs::write(out.join("bench_set.rs"), code)?;
    Ok(())
}
