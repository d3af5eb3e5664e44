//! Exercise 391 of TAOCP 7.2.2.1: which latin squares could be the unique
//! solution of a futoshiki puzzle that has weak clues only?
//!
//! A futoshiki with every weak clue and no digit pins down, for a latin
//! square, the *signature*: for each two adjacent cells, which is larger.
//! If another square has the same signature, no set of weak clues can tell
//! the two apart, so the square needs a strong clue (a digit). This program
//! streams every latin square of order n from the xccd service (Enumerate,
//! in the packed form), groups them by signature, and counts the signatures
//! shared by no other square.
//!
//! ```sh
//! cargo run --release --example latin_signatures -- --order 5
//! cargo run --release --example latin_signatures -- --order 4 --server http://127.0.0.1:50051
//! cargo run --release --example latin_signatures -- --order 6 --memory 1024 --temp-dir /var/tmp
//! ```
//! Without `--server` it starts a server in this process on a free loopback
//! port (`--threads` workers, one per core by default, polling their job
//! every `--poll-nodes` nodes: 65536, so that each message carries thousands
//! of squares; give a server of your own `xccd serve --poll-nodes 65536`).
//! The last three lines are `squares: N`, `signatures: S`, `unique: U`; a
//! line on stderr before them says how long the stream and the merge took
//! and how much went to disk.
//!
//! Order 6 has 812,851,200 squares, whose signatures (60 bits each) do not
//! fit a hash map in memory. So the client keeps them in two buffers of
//! `--memory` MiB altogether: while one fills, a thread of its own sorts the
//! other and writes it to a run file under `--temp-dir` (6.5 GB for order 6,
//! removed at the end, on an error and on Ctrl-C); the sorted runs are then
//! merged (at most `FAN_IN` at a time), and equal neighbours counted. A
//! progress bar on stderr (when it is a terminal) shows the squares received
//! against their known number (OEIS A002860), the rate and the time left.
//!
//! Order 6 took 7 min 47 s on a 2-core VM that other jobs shared (load 3-5),
//! with 1.09 GiB of RSS at the default `--memory 1024`; its counts
//! (385,204,902 signatures, 217,548,736 unique: 73.2% of the squares need a
//! strong clue) agree with a second method that knows nothing of XCC
//! (`cargo test --release --test latin_signatures -- --ignored`).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;
use std::time::Instant;

use clap::Parser;
use indicatif::{ProgressBar, ProgressStyle};
use xccd::puzzles::latin::LatinPuzzle;
use xccd::puzzles::Encoded;
use xccd::service::convert;
use xccd::service::pool::PoolConfig;
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
    /// Worker threads of the server started in this process (default: one
    /// per core).
    #[arg(long)]
    threads: Option<usize>,
    /// Nodes between two looks of a worker of the server started here at
    /// its job, when it also hands over the solutions found: the server's
    /// default (1024) makes messages of 120-140 squares, and order 6 then
    /// spends a third of its CPU in the kernel passing 6 million of them.
    #[arg(long, default_value_t = POLL_NODES)]
    poll_nodes: u64,
    /// MiB of memory for the signatures in this process; beyond it they are
    /// sorted in runs on disk.
    #[arg(long, default_value_t = 1024)]
    memory: usize,
    /// Where the sorted runs go (in a folder of their own, removed at the
    /// end); by default the system's temporary folder.
    #[arg(long)]
    temp_dir: Option<PathBuf>,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

/// The number of latin squares of order n (OEIS A002860), for the progress
/// bar only: the counts printed are those received.
const KNOWN_SQUARES: [u64; 7] = [1, 1, 2, 12, 576, 161_280, 812_851_200];

/// Most runs merged at once; more are first merged into longer runs.
pub const FAN_IN: usize = 64;

/// Solutions per message asked of the server (a batch of order 6 is
/// 144 bytes a square, well under gRPC's 4 MiB limit).
const BATCH_SIZE: u32 = 16_384;

/// Nodes between polls of the server started here (see `--poll-nodes`).
pub const POLL_NODES: u64 = 1 << 16;

/// How to count.
#[derive(Debug, Clone)]
pub struct Options {
    /// A running xccd server; `None` starts one in this process.
    pub server: Option<String>,
    /// Worker threads of the server started here (`None`: one per core).
    pub threads: Option<usize>,
    /// Nodes between polls of the server started here.
    pub poll_nodes: u64,
    /// Bytes of memory for signatures (two buffers of half each).
    pub memory: usize,
    /// Parent of the folder of sorted runs.
    pub temp_dir: PathBuf,
    /// Most runs merged at once.
    pub fan_in: usize,
    /// Show a progress bar on stderr (if it is a terminal).
    pub progress: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            server: None,
            threads: None,
            poll_nodes: POLL_NODES,
            memory: 1024 << 20,
            temp_dir: std::env::temp_dir(),
            fan_in: FAN_IN,
            progress: false,
        }
    }
}

/// What the program prints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Counts {
    pub squares: u64,
    pub signatures: u64,
    pub unique: u64,
}

/// How the signatures were counted: in memory (no run), or through runs
/// on disk.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Spilled {
    /// Sorted runs written as the signatures came (0: all fitted in memory).
    pub runs: usize,
    /// Runs written by merges of `fan_in` runs, when there were more.
    pub merged_runs: usize,
    /// Bytes of runs on disk at most at one time.
    pub peak_bytes: u64,
}

/// How a count went.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// Messages of solutions received.
    pub messages: u64,
    /// From the request to the stream's end (and the last square signed).
    pub stream: std::time::Duration,
    /// The rest: the last sort and the merge.
    pub tally: std::time::Duration,
    pub spilled: Spilled,
}

#[allow(dead_code)] // not called when a test includes this file
#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let options = Options {
        server: args.server,
        threads: args.threads,
        poll_nodes: args.poll_nodes,
        memory: args.memory.max(1) << 20,
        temp_dir: args.temp_dir.unwrap_or_else(std::env::temp_dir),
        fan_in: FAN_IN,
        progress: !args.quiet,
    };
    // On Ctrl-C the count is dropped, and with it the runs on disk.
    let (counts, report) = tokio::select! {
        counted = count_with(args.order, &options) => counted?,
        _ = tokio::signal::ctrl_c() => return Err("interrupted".into()),
    };
    eprintln!(
        "{:.1} s streaming ({} messages), {:.1} s sorting and merging; {} sorted runs on disk ({} from merges), {:.2} GB at most",
        report.stream.as_secs_f64(),
        report.messages,
        report.tally.as_secs_f64(),
        report.spilled.runs,
        report.spilled.merged_runs,
        report.spilled.peak_bytes as f64 / 1e9
    );
    println!("order: {}", args.order);
    println!("squares: {}", counts.squares);
    println!("signatures: {}", counts.signatures);
    println!("unique: {}", counts.unique);
    Ok(())
}

/// One bit per pair of adjacent cells: whether the first (left or upper)
/// is the smaller. Bit k is the k-th pair met going through the cells row
/// by row, each cell's right neighbour before its lower one.
#[inline(always)]
fn signature_by(n: usize, value: impl Fn(usize, usize) -> u8) -> u64 {
    let mut bits = 0u64;
    let mut k = 0;
    for r in 0..n {
        for c in 0..n {
            if c + 1 < n {
                bits |= u64::from(value(r, c) < value(r, c + 1)) << k;
                k += 1;
            }
            if r + 1 < n {
                bits |= u64::from(value(r, c) < value(r + 1, c)) << k;
                k += 1;
            }
        }
    }
    bits
}

/// The signature of a square (order at most 6: 2n(n-1) bits).
pub fn signature(grid: &[Vec<usize>]) -> u64 {
    assert!(grid.len() <= 6, "a signature of order 7 needs 84 bits");
    signature_by(grid.len(), |r, c| grid[r][c] as u8)
}

/// Signatures straight from a solution's option indices: a table of each
/// option's cell and value, read from the puzzle's decoder once, instead of
/// a grid decoded per solution.
pub struct Signer {
    n: usize,
    /// Option index -> (row * n + column, value).
    place: Vec<(u8, u8)>,
}

impl Signer {
    pub fn new(order: usize) -> Signer {
        assert!((2..=6).contains(&order), "orders 2 to 6");
        let encoded = LatinPuzzle::empty(order).encode();
        let place = (0..encoded.problem().options().len())
            .map(|o| {
                // The grid of this option alone: one cell filled.
                let grid = encoded.grid(&[o]);
                let (cell, value) = grid
                    .iter()
                    .flatten()
                    .enumerate()
                    .find(|(_, &v)| v != 0)
                    .expect("an option places a value");
                (cell as u8, *value as u8)
            })
            .collect();
        Signer { n: order, place }
    }

    /// The signature of the square of these option indices (one per cell).
    pub fn sign(&self, options: impl IntoIterator<Item = u32>) -> u64 {
        let mut cells = [0u8; 36];
        for o in options {
            let (cell, value) = self.place[o as usize];
            cells[cell as usize] = value;
        }
        // With the order a constant the comparisons unroll.
        fn of<const N: usize>(cells: &[u8; 36]) -> u64 {
            signature_by(N, |r, c| cells[r * N + c])
        }
        match self.n {
            6 => of::<6>(&cells),
            5 => of::<5>(&cells),
            4 => of::<4>(&cells),
            3 => of::<3>(&cells),
            _ => of::<2>(&cells),
        }
    }
}

/// Streams every latin square of order `order` from the service at
/// `server` (or one started here) and counts their signatures.
pub async fn count(
    order: usize,
    server: Option<String>,
) -> Result<Counts, Box<dyn std::error::Error>> {
    let options = Options {
        server,
        ..Options::default()
    };
    Ok(count_with(order, &options).await?.0)
}

/// A batch of packed solutions on its way from the stream to the thread
/// that signs them: the indices' bytes, the bytes of one index
/// (`packed_index_bytes`: 1, 2 or 4) and each solution's length.
type Packed = (prost::bytes::Bytes, usize, Vec<u32>);

/// [`count`] with every knob.
pub async fn count_with(
    order: usize,
    options: &Options,
) -> Result<(Counts, Report), Box<dyn std::error::Error>> {
    if !(2..=6).contains(&order) {
        return Err("--order must be between 2 and 6".into());
    }
    let encoded = LatinPuzzle::empty(order).encode();
    let text = dlx_format::to_string(encoded.problem());
    let (url, local) = match &options.server {
        Some(url) => (url.clone(), None),
        None => {
            let mut config = ServeConfig {
                listen: ([127, 0, 0, 1], 0).into(),
                ..ServeConfig::default()
            };
            config.pool = PoolConfig {
                threads: options.threads.unwrap_or(config.pool.threads),
                poll_interval: options.poll_nodes,
                ..PoolConfig::default()
            };
            let server = start(config).await?;
            (format!("http://{}", server.addr), Some(server))
        }
    };
    let started = Instant::now();
    let mut client = SolverServiceClient::connect(url).await?;
    let mut stream = client
        .enumerate(pb::EnumerateRequest {
            problem: Some(pb::Problem {
                source: Some(pb::problem::Source::Dlx(text)),
            }),
            batch_size: BATCH_SIZE,
            packed_solutions: true,
            ..Default::default()
        })
        .await?
        .into_inner();

    // The stream is read here; signing and tallying run on a thread of
    // their own (and sorting on another), so that this task keeps reading.
    let (to_signer, mut batches) = tokio::sync::mpsc::channel::<Packed>(16);
    // Dropped (and with it the runs) however this ends, even when the
    // caller drops this future (Ctrl-C).
    let dir = tempfile::Builder::new()
        .prefix("latin-signatures-")
        .tempdir_in(&options.temp_dir)?;
    let tally = Tally::new(options.memory, dir.path(), options.fan_in);
    let signer = std::thread::spawn(move || -> io::Result<(u64, Tally)> {
        let signer = Signer::new(order);
        let mut tally = tally;
        let mut squares = 0u64;
        while let Some((bytes, width, lengths)) = batches.blocking_recv() {
            let mut indices = bytes.chunks_exact(width).map(|b| {
                let mut index = [0u8; 4];
                index[..width].copy_from_slice(b);
                u32::from_le_bytes(index)
            });
            for &length in &lengths {
                tally.push(signer.sign(indices.by_ref().take(length as usize)))?;
            }
            squares += lengths.len() as u64;
        }
        Ok((squares, tally))
    });

    let bar = progress_bar(options.progress, KNOWN_SQUARES[order], "squares");
    let mut summary = None;
    let mut messages = 0u64;
    while let Some(message) = stream.message().await? {
        match message.event {
            Some(pb::enumerate_response::Event::Solutions(batch)) => {
                messages += 1;
                // Indices missing from the bytes would sign squares wrongly.
                let width = convert::packed_width(&batch)?;
                bar.inc(batch.packed_lengths.len() as u64);
                if to_signer
                    .send((batch.packed_indices, width, batch.packed_lengths))
                    .await
                    .is_err()
                {
                    break; // the signer failed: its error follows
                }
            }
            Some(pb::enumerate_response::Event::Summary(s)) => summary = Some(s),
            _ => {}
        }
    }
    drop(to_signer);
    bar.finish_and_clear();
    let (squares, tally) = tokio::task::spawn_blocking(move || signer.join())
        .await?
        .expect("the signing thread")?;
    match summary {
        Some(s) if s.exhausted && s.solutions == squares => {}
        other => {
            return Err(format!(
            "the enumeration did not end complete with the {squares} squares received: {other:?}"
        )
            .into())
        }
    }
    if let Some(server) = local {
        server.shutdown().await?;
    }
    let stream_time = started.elapsed();
    let progress = options.progress;
    let (signatures, unique, spilled) =
        tokio::task::spawn_blocking(move || tally.finish(progress)).await??;
    dir.close()?;
    Ok((
        Counts {
            squares,
            signatures,
            unique,
        },
        Report {
            messages,
            stream: stream_time,
            tally: started.elapsed() - stream_time,
            spilled,
        },
    ))
}

/// A progress bar of `len` things, hidden unless asked for (and stderr is
/// a terminal).
fn progress_bar(show: bool, len: u64, what: &str) -> ProgressBar {
    if !show {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(len);
    bar.set_style(
        ProgressStyle::with_template(&format!(
            "{{bar:30}} {{percent:>3}}% {{human_pos}}/{{human_len}} {what}, {{rate}}, {{elapsed}} gone, ETA {{eta}}"
        ))
        .expect("a valid template")
        .with_key(
            "rate",
            |state: &indicatif::ProgressState, out: &mut dyn std::fmt::Write| {
                let _ = write!(out, "{:.2} M/s", state.per_sec() / 1e6);
            },
        ),
    );
    bar
}

/// Counts distinct values and those seen once, in bounded memory. Values
/// fill a buffer; a full buffer goes to a thread that sorts it and writes
/// it to a run file while the next one fills; at the end the runs are
/// merged. If everything fits one buffer, nothing touches the disk.
pub struct Tally {
    buffer: Vec<u64>,
    capacity: usize,
    fan_in: usize,
    /// Where the runs go.
    dir: PathBuf,
    spill: Option<Spill>,
}

/// The sorting thread.
struct Spill {
    full: SyncSender<Vec<u64>>,
    empty: Receiver<Vec<u64>>,
    thread: JoinHandle<io::Result<Vec<PathBuf>>>,
    /// Whether the thread holds the other buffer, to give back once it is
    /// written (false until the first spill, when there is no other yet).
    lent: bool,
}

impl Tally {
    /// `memory` bytes for two buffers; runs go to the folder `dir`, which
    /// the caller owns ([`Tally::finish`] removes them, an error leaves
    /// them); at most `fan_in` (at least 2) runs merged at once.
    pub fn new(memory: usize, dir: &Path, fan_in: usize) -> Tally {
        let capacity = (memory / 16).max(1);
        Tally {
            buffer: Vec::new(),
            capacity,
            fan_in: fan_in.max(2),
            dir: dir.to_path_buf(),
            spill: None,
        }
    }

    pub fn push(&mut self, value: u64) -> io::Result<()> {
        if self.buffer.len() == self.capacity {
            self.spill_buffer()?;
        }
        if self.buffer.capacity() == 0 {
            // Lazily: a small count never allocates the whole buffer.
            self.buffer.reserve_exact(self.capacity.min(1 << 16));
        } else if self.buffer.len() == self.buffer.capacity() {
            let more = self
                .buffer
                .capacity()
                .min(self.capacity - self.buffer.len());
            self.buffer.reserve_exact(more);
        }
        self.buffer.push(value);
        Ok(())
    }

    /// Hands the full buffer to the sorting thread (started the first
    /// time) and takes the other one back.
    fn spill_buffer(&mut self) -> io::Result<()> {
        if self.spill.is_none() {
            let (full, full_rx) = sync_channel::<Vec<u64>>(1);
            let (empty_tx, empty) = sync_channel::<Vec<u64>>(1);
            let path = self.dir.clone();
            let thread = std::thread::spawn(move || -> io::Result<Vec<PathBuf>> {
                let mut runs = Vec::new();
                for mut values in full_rx {
                    values.sort_unstable();
                    let run = path.join(format!("run-{}", runs.len()));
                    write_run(&run, values.iter().copied())?;
                    runs.push(run);
                    values.clear();
                    // The last buffer is not waited for.
                    let _ = empty_tx.send(values);
                }
                Ok(runs)
            });
            self.spill = Some(Spill {
                full,
                empty,
                thread,
                lent: false,
            });
        }
        let spill = self.spill.as_mut().expect("just started");
        let next = if spill.lent {
            // Waits while the thread still sorts or writes it.
            spill.empty.recv().ok()
        } else {
            Some(Vec::with_capacity(self.capacity))
        };
        let full = std::mem::replace(&mut self.buffer, next.unwrap_or_default());
        spill.lent = true;
        if spill.full.send(full).is_err() || self.buffer.capacity() == 0 {
            // The thread ended: it failed, and says why.
            let spill = self.spill.take().expect("there");
            drop(spill.full);
            return Err(match spill.thread.join().expect("the sorting thread") {
                Err(e) => e,
                Ok(_) => io::Error::other("the sorting thread ended early"),
            });
        }
        Ok(())
    }

    /// Distinct values, values seen once, and how the disk was used. With
    /// `progress`, a bar for the merge.
    pub fn finish(mut self, progress: bool) -> io::Result<(u64, u64, Spilled)> {
        let Some(spill) = self.spill.take() else {
            self.buffer.sort_unstable();
            let (distinct, unique) = count_groups(self.buffer.iter().map(|&v| Ok(v)))?;
            return Ok((distinct, unique, Spilled::default()));
        };
        let last = std::mem::take(&mut self.buffer);
        if !last.is_empty() {
            spill
                .full
                .send(last)
                .map_err(|_| io::Error::other("the sorting thread ended"))?;
        }
        drop(spill.full);
        drop(spill.empty); // frees the other buffer when given back
        let mut runs = spill.thread.join().expect("the sorting thread")?;
        let mut spilled = Spilled {
            runs: runs.len(),
            merged_runs: 0,
            peak_bytes: 0,
        };
        let total: u64 = runs.iter().map(|r| file_len(r)).sum::<io::Result<u64>>()?;
        spilled.peak_bytes = total;
        let bar = progress_bar(progress, total / 8, "signatures merged");
        // Each pass merges the oldest runs into one at the end of the list.
        let read_block = (self.capacity * 8 / self.fan_in).clamp(4 << 10, 4 << 20);
        while runs.len() > self.fan_in {
            let group: Vec<PathBuf> = runs.drain(..self.fan_in).collect();
            let merged = self.dir.join(format!("merged-{}", spilled.merged_runs));
            let mut merger = Merger::new(&group, read_block)?;
            write_run_from(&merged, &mut merger)?;
            let merged_bytes = file_len(&merged)?;
            spilled.peak_bytes = spilled.peak_bytes.max(total + merged_bytes);
            for run in &group {
                std::fs::remove_file(run)?;
            }
            runs.push(merged);
            spilled.merged_runs += 1;
        }
        let mut merger = Merger::new(&runs, read_block)?;
        let mut taken = 0u64;
        let (distinct, unique) = count_groups(std::iter::from_fn(|| {
            taken += 1;
            if taken.is_multiple_of(1 << 20) {
                bar.inc(1 << 20);
            }
            merger.next().transpose()
        }))?;
        bar.finish_and_clear();
        drop(merger);
        for run in &runs {
            std::fs::remove_file(run)?;
        }
        Ok((distinct, unique, spilled))
    }
}

fn file_len(path: &Path) -> io::Result<u64> {
    Ok(std::fs::metadata(path)?.len())
}

/// How many distinct values a sorted sequence has, and how many of them
/// occur once.
pub fn count_groups(sorted: impl Iterator<Item = io::Result<u64>>) -> io::Result<(u64, u64)> {
    let (mut distinct, mut unique) = (0u64, 0u64);
    let mut current: Option<(u64, u64)> = None; // value, times
    for value in sorted {
        let value = value?;
        match &mut current {
            Some((v, times)) if *v == value => *times += 1,
            Some((v, times)) => {
                debug_assert!(*v < value, "not sorted");
                unique += u64::from(*times == 1);
                *v = value;
                *times = 1;
                distinct += 1;
            }
            None => {
                current = Some((value, 1));
                distinct += 1;
            }
        }
    }
    if let Some((_, 1)) = current {
        unique += 1;
    }
    Ok((distinct, unique))
}

/// A run file: the values as little-endian u64, one after another.
fn write_run(path: &Path, values: impl Iterator<Item = u64>) -> io::Result<()> {
    let mut out = BufWriter::with_capacity(1 << 20, File::create(path)?);
    for v in values {
        out.write_all(&v.to_le_bytes())?;
    }
    out.into_inner().map_err(|e| e.into_error())?;
    Ok(())
}

fn write_run_from(path: &Path, merger: &mut Merger) -> io::Result<()> {
    let mut out = BufWriter::with_capacity(1 << 20, File::create(path)?);
    while let Some(v) = merger.next()? {
        out.write_all(&v.to_le_bytes())?;
    }
    out.into_inner().map_err(|e| e.into_error())?;
    Ok(())
}

/// Reads a run file in blocks.
struct RunReader {
    file: File,
    block: Vec<u8>,
    /// Bytes of `block` read from the file, and the next value's offset.
    len: usize,
    at: usize,
}

impl RunReader {
    fn open(path: &Path, block: usize) -> io::Result<RunReader> {
        Ok(RunReader {
            file: File::open(path)?,
            block: vec![0; block / 8 * 8],
            len: 0,
            at: 0,
        })
    }

    fn next(&mut self) -> io::Result<Option<u64>> {
        if self.at == self.len {
            self.len = 0;
            self.at = 0;
            while self.len < self.block.len() {
                match self.file.read(&mut self.block[self.len..])? {
                    0 => break,
                    k => self.len += k,
                }
            }
            if !self.len.is_multiple_of(8) {
                return Err(io::Error::other("a run file ends within a value"));
            }
            if self.len == 0 {
                return Ok(None);
            }
        }
        let bytes: [u8; 8] = self.block[self.at..self.at + 8]
            .try_into()
            .expect("8 bytes");
        self.at += 8;
        Ok(Some(u64::from_le_bytes(bytes)))
    }
}

/// The values of sorted runs, in order (a k-way merge on a heap).
struct Merger {
    readers: Vec<RunReader>,
    heap: BinaryHeap<Reverse<(u64, usize)>>,
}

impl Merger {
    fn new(runs: &[PathBuf], block: usize) -> io::Result<Merger> {
        let mut readers = Vec::new();
        let mut heap = BinaryHeap::new();
        for (i, run) in runs.iter().enumerate() {
            let mut reader = RunReader::open(run, block)?;
            if let Some(v) = reader.next()? {
                heap.push(Reverse((v, i)));
            }
            readers.push(reader);
        }
        Ok(Merger { readers, heap })
    }

    fn next(&mut self) -> io::Result<Option<u64>> {
        let Some(mut top) = self.heap.peek_mut() else {
            return Ok(None);
        };
        let Reverse((value, i)) = *top;
        match self.readers[i].next()? {
            Some(v) => *top = Reverse((v, i)),
            None => {
                std::collections::binary_heap::PeekMut::pop(top);
            }
        }
        Ok(Some(value))
    }
}
