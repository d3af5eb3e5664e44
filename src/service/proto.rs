//! The types and stubs generated from `proto/xccd/v1/solver.proto`.
#![allow(missing_docs, clippy::all, clippy::pedantic)]

tonic::include_proto!("xccd.v1");

/// The encoded descriptors of the public API's protos (not the workers'
/// protocol), for server reflection.
pub const FILE_DESCRIPTOR_SET: &[u8] = tonic::include_file_descriptor_set!("xccd_descriptor");
