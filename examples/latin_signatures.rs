//! Exercise 391 of TAOCP 7.2.2.1: which latin squares could be the unique
//! solution of a futoshiki puzzle that has weak clues only?
//!
//! A futoshiki with every weak clue and no digit pins down, for a latin
//! square, the *signature*: for each two adjacent cells, which is larger.
//! If another square has the same signature, no set of weak clues can tell
//! the two apart, so the square needs a strong clue (a digit). This program
//! streams every latin square of order n from the xccd service (Enumerate),
//! groups them by signature, and counts the signatures shared by no other
//! square.
//!
//! ```sh
//! cargo run --release --example latin_signatures -- --order 5
//! cargo run --release --example latin_signatures -- --order 4 --server http://127.0.0.1:50051
//! ```
//! Without `--server` it starts a server in this process on a free loopback
//! port. The last three lines are `squares: N`, `signatures: S`, `unique: U`.

use std::collections::HashMap;

use clap::Parser;
use xccd::puzzles::latin::LatinPuzzle;
use xccd::service::proto as pb;
use xccd::service::proto::solver_service_client::SolverServiceClient;
use xccd::service::server::{start, ServeConfig};
use xccd::xcc::dlx_format;

#[derive(Parser)]
struct Args {
    /// Order of the latin squares (2..=6; 6 has 812851200 squares).
    #[arg(long, default_value_t = 5)]
    order: usize,
    /// A running xccd server; by default one is started in this process.
    #[arg(long)]
    server: Option<String>,
}

/// One bit per pair of adjacent cells: whether the first (left or upper)
/// is the smaller.
pub fn signature(grid: &[Vec<usize>]) -> u128 {
    let n = grid.len();
    let mut bits = 0u128;
    let mut k = 0;
    for r in 0..n {
        for c in 0..n {
            if c + 1 < n {
                bits |= u128::from(grid[r][c] < grid[r][c + 1]) << k;
                k += 1;
            }
            if r + 1 < n {
                bits |= u128::from(grid[r][c] < grid[r + 1][c]) << k;
                k += 1;
            }
        }
    }
    bits
}

/// What the program prints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Counts {
    pub squares: u64,
    pub signatures: usize,
    pub unique: usize,
}

#[allow(dead_code)] // not called when a test includes this file
#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let counts = count(args.order, args.server).await?;
    println!("order: {}", args.order);
    println!("squares: {}", counts.squares);
    println!("signatures: {}", counts.signatures);
    println!("unique: {}", counts.unique);
    Ok(())
}

/// Streams every latin square of order `order` from the service at
/// `server` (or one started here) and counts their signatures.
pub async fn count(
    order: usize,
    server: Option<String>,
) -> Result<Counts, Box<dyn std::error::Error>> {
    if !(2..=6).contains(&order) {
        return Err("--order must be between 2 and 6".into());
    }
    let encoded = LatinPuzzle::empty(order).encode();
    let text = dlx_format::to_string(xccd::puzzles::Encoded::problem(&encoded));
    let (url, local) = match server {
        Some(url) => (url, None),
        None => {
            let server = start(ServeConfig {
                listen: ([127, 0, 0, 1], 0).into(),
                ..ServeConfig::default()
            })
            .await?;
            (format!("http://{}", server.addr), Some(server))
        }
    };
    let mut client = SolverServiceClient::connect(url.clone()).await?;
    let mut stream = client
        .enumerate(pb::EnumerateRequest {
            problem: Some(pb::Problem {
                source: Some(pb::problem::Source::Dlx(text)),
            }),
            batch_size: 1024,
            ..Default::default()
        })
        .await?
        .into_inner();
    let mut by_signature: HashMap<u128, u32> = HashMap::new();
    let mut squares = 0u64;
    let mut options = Vec::new();
    while let Some(message) = stream.message().await? {
        match message.event {
            Some(pb::enumerate_response::Event::Solutions(batch)) => {
                for solution in batch.solutions {
                    options.clear();
                    options.extend(solution.option_indices.iter().map(|&o| o as usize));
                    let grid = encoded.grid(&options);
                    *by_signature.entry(signature(&grid)).or_default() += 1;
                    squares += 1;
                }
            }
            Some(pb::enumerate_response::Event::Summary(summary)) if !summary.exhausted => {
                return Err(format!("the enumeration stopped early: {summary:?}").into());
            }
            _ => {}
        }
    }
    if let Some(server) = local {
        server.shutdown().await?;
    }
    Ok(Counts {
        squares,
        signatures: by_signature.len(),
        unique: by_signature.values().filter(|&&k| k == 1).count(),
    })
}
