//! Running a search somewhere other than this thread: on the server's worker
//! pool in this process (`--threads N`), or on a running server (`--server
//! URL`). `xccd solve` and `xccd puzzle solve` both use these, so every way
//! of running prints the same thing.

use std::io::{self, BufWriter};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tonic::Streaming;
use xccd::service::credentials::{endpoint, ClientTls};
use xccd::service::error_chain;
use xccd::service::job::Event;
use xccd::service::proto as pb;
use xccd::service::proto::solver_service_client::SolverServiceClient;
use xccd::service::tls_advice::with_advice;
use xccd::service::{Delivery, EndReason, JobSpec, Pool, PoolConfig};
use xccd::xcc::preprocess::Reduced;
use xccd::xcc::{Problem, Stats};

use super::output::{finish, Ended, SolutionWriter};
use super::progress::Bar;
use super::solve_args::{solution_limit, SolveArgs};
use super::CliError;

fn runtime() -> Result<tokio::runtime::Runtime, CliError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::Failed(format!("cannot start the runtime: {e}")))
}

/// The delivery of a job whose solutions this process prints (or counts).
pub fn delivery(count_only: bool) -> Delivery {
    if count_only {
        Delivery::CountOnly
    } else {
        Delivery::Stream {
            buffer_batches: 64,
            batch_size: 256,
        }
    }
}

/// Runs one job on a pool of `threads` worker threads in this process,
/// handing each solution (option indices) to `each` as it comes.
pub fn on_pool(
    problem: Arc<Problem>,
    spec: JobSpec,
    threads: usize,
    quiet: bool,
    mut each: impl FnMut(&[u32]) -> io::Result<()>,
) -> Result<Ended, CliError> {
    if threads == 0 {
        return Err(CliError::BadInput("--threads must be at least 1".into()));
    }
    let pool = Pool::new(PoolConfig {
        threads,
        max_jobs: 1,
        ..PoolConfig::default()
    });
    let job = pool
        .submit(problem, spec)
        .map_err(|e| CliError::Failed(e.to_string()))?;
    let mut bar = Bar::new(quiet);
    let mut write_error = None;
    let summary = runtime()?.block_on(async {
        let mut tick = tokio::time::interval(Duration::from_millis(200));
        loop {
            tokio::select! {
                event = job.next_event() => match event {
                    Event::Solutions(batch) => {
                        for solution in &batch {
                            if write_error.is_some() {
                                break;
                            }
                            if let Err(e) = each(solution) {
                                write_error = Some(e);
                                pool.cancel(&job, EndReason::Cancelled);
                            }
                        }
                    }
                    Event::Snapshot(_) => {}
                    Event::Done(summary) => break summary,
                },
                _ = tick.tick() => {
                    let p = pool.progress(&job);
                    bar.update(p.solutions, p.nodes, p.fraction_done);
                }
            }
        }
    });
    bar.finish();
    if let (EndReason::Failed, None) = (summary.reason, &write_error) {
        return Err(CliError::Failed(summary.failure.map_or_else(
            || "the search failed".to_string(),
            |f| f.message().to_string(),
        )));
    }
    Ok(Ended {
        stats: summary.stats,
        node_limit: summary.reason == EndReason::NodeLimit,
        write_error,
        cut_short: None,
        preprocessing: None,
    })
}

/// Runs `problem` (or with --preprocess its `reduced` form, whose solutions
/// are printed as the input's options) on a pool of `threads` threads.
pub fn run_local(
    args: &SolveArgs,
    problem: Problem,
    threads: usize,
    reduced: Option<&Reduced>,
) -> Result<(), CliError> {
    let limit = solution_limit(args.all, args.count, args.limit)?;
    let problem = Arc::new(problem);
    let searched = reduced.map_or_else(|| problem.clone(), |r| Arc::new(r.problem.clone()));
    let origin = reduced.map(|r| r.origin.as_slice());
    let start = Instant::now();
    let stdout = io::stdout();
    let mut writer = SolutionWriter::new(
        &problem,
        BufWriter::new(stdout.lock()),
        args.format,
        !args.count,
    );
    let mut options = Vec::new();
    let spec = JobSpec {
        limit,
        max_nodes: args.max_nodes,
        delivery: delivery(args.count),
        engine: args.at.engine.resolve(&searched)?,
        ..JobSpec::default()
    };
    let ended = on_pool(searched, spec, threads, args.quiet, |solution| {
        options.clear();
        options.extend(solution.iter().map(|&o| input_option(origin, o)));
        writer.write(&options)
    })?;
    finish(args, writer, ended, start.elapsed())
}

/// The input's index of option `o` of the problem searched (`origin`: the
/// reduced problem's map, with --preprocess).
fn input_option(origin: Option<&[usize]>, o: u32) -> usize {
    origin.map_or(o as usize, |m| m[o as usize])
}

fn status_error(url: &str, status: tonic::Status) -> CliError {
    match status.code() {
        tonic::Code::InvalidArgument => CliError::BadInput(status.message().to_string()),
        code => CliError::Failed(format!("{url}: {code:?}: {}", status.message())),
    }
}

/// A channel to the server at `url`.
pub async fn connect(url: &str, tls: &ClientTls) -> Result<tonic::transport::Channel, CliError> {
    endpoint(url, tls)
        .map_err(|e| CliError::BadInput(format!("--server: {e}")))?
        .connect()
        .await
        .map_err(|e| {
            CliError::Failed(with_advice(format!(
                "cannot connect to {url}: {}",
                error_chain(&e)
            )))
        })
}

/// A request carrying the API key, if there is one.
pub fn authorized<T>(message: T, api_key: Option<&str>) -> Result<tonic::Request<T>, CliError> {
    let mut request = tonic::Request::new(message);
    if let Some(key) = api_key {
        let value = format!("Bearer {key}")
            .parse()
            .map_err(|_| CliError::BadInput("the API key is not printable ASCII".into()))?;
        request.metadata_mut().insert("authorization", value);
    }
    Ok(request)
}

/// One message of a solution stream, whatever the RPC.
pub enum StreamEvent<S> {
    Solutions(Vec<S>),
    Progress(pb::Progress),
    Summary(pb::Summary),
    /// A message that breaks the contract (what is wrong with it).
    Malformed(String),
    Nothing,
}

/// The messages of the server's solution streams.
pub trait Streamed {
    type Solution;
    fn event(self) -> StreamEvent<Self::Solution>;
}

/// Enumerate's solutions are their option indices, sent one message each or
/// in the packed form.
impl Streamed for pb::EnumerateResponse {
    type Solution = Vec<u32>;
    fn event(self) -> StreamEvent<Vec<u32>> {
        use pb::enumerate_response::Event as E;
        match self.event {
            Some(E::Solutions(batch)) if batch.solutions.is_empty() => {
                match xccd::service::convert::unpack(batch) {
                    Ok(solutions) => {
                        StreamEvent::Solutions(solutions.iter().map(<[u32]>::to_vec).collect())
                    }
                    Err(e) => StreamEvent::Malformed(e),
                }
            }
            Some(E::Solutions(batch)) => StreamEvent::Solutions(
                batch
                    .solutions
                    .into_iter()
                    .map(|s| s.option_indices)
                    .collect(),
            ),
            Some(E::Progress(p)) => StreamEvent::Progress(p),
            Some(E::Summary(s)) => StreamEvent::Summary(s),
            None => StreamEvent::Nothing,
        }
    }
}

impl Streamed for pb::EnumeratePuzzleResponse {
    type Solution = pb::PuzzleSolution;
    fn event(self) -> StreamEvent<pb::PuzzleSolution> {
        use pb::enumerate_puzzle_response::Event as E;
        match self.event {
            Some(E::Solutions(batch)) => StreamEvent::Solutions(batch.solutions),
            Some(E::Progress(p)) => StreamEvent::Progress(p),
            Some(E::Summary(s)) => StreamEvent::Summary(s),
            None => StreamEvent::Nothing,
        }
    }
}

/// Reads a solution stream from the server at `url` to its summary, handing
/// each solution to `each`. A write error drops the stream, which cancels
/// the search on the server.
pub async fn drain<M: Streamed>(
    url: &str,
    mut stream: Streaming<M>,
    quiet: bool,
    mut each: impl FnMut(M::Solution) -> io::Result<()>,
) -> Result<Ended, CliError> {
    let mut bar = Bar::new(quiet);
    let summary = loop {
        let Some(message) = stream.message().await.map_err(|s| status_error(url, s))? else {
            return Err(CliError::Failed(format!(
                "{url}: the stream ended without a summary"
            )));
        };
        match message.event() {
            StreamEvent::Solutions(solutions) => {
                for solution in solutions {
                    if let Err(e) = each(solution) {
                        bar.finish();
                        return Ok(Ended {
                            stats: Stats::default(),
                            node_limit: false,
                            write_error: Some(e),
                            cut_short: None,
                            preprocessing: None,
                        });
                    }
                }
            }
            StreamEvent::Progress(p) => bar.update(p.solutions, p.nodes, p.fraction_done),
            StreamEvent::Summary(summary) => break summary,
            StreamEvent::Malformed(what) => {
                bar.finish();
                return Err(CliError::Failed(format!("{url}: {what}")));
            }
            StreamEvent::Nothing => {}
        }
    };
    bar.finish();
    let cut_short = match pb::EndReason::try_from(summary.reason) {
        Ok(pb::EndReason::Failed) => {
            let why = summary
                .error
                .map_or_else(|| "the search failed".to_string(), |status| status.message);
            return Err(CliError::Failed(format!("{url}: {why}")));
        }
        Ok(pb::EndReason::Complete | pb::EndReason::Limit | pb::EndReason::NodeLimit) => None,
        Ok(pb::EndReason::Shutdown) => Some(format!("{url} is shutting down")),
        Ok(pb::EndReason::Deadline) => Some(format!("{url}: the call's deadline passed")),
        Ok(pb::EndReason::Cancelled) => Some(format!("{url}: the search was cancelled there")),
        Ok(pb::EndReason::Unspecified) | Err(_) => Some(format!(
            "{url}: the search ended for a reason this xccd does not know ({})",
            summary.reason
        )),
    };
    let s = summary.statistics.unwrap_or_default();
    let preprocessing = s.preprocessing;
    Ok(Ended {
        stats: Stats {
            nodes: s.nodes,
            updates: s.updates,
            cleansings: s.cleansings,
            replay_updates: s.replay_updates,
            replay_cleansings: s.replay_cleansings,
            solutions: summary.solutions,
            ..Stats::default()
        },
        node_limit: summary.reason == pb::EndReason::NodeLimit as i32,
        write_error: None,
        cut_short,
        preprocessing,
    })
}

/// Runs `problem` (its DLX `text`) on the server at `url`; with
/// --preprocess the server reduces it (the request's `preprocess`) and
/// names the solutions by the input's options, and its report on what it
/// removed is printed as a local --preprocess prints it.
pub fn run_remote(
    args: &SolveArgs,
    problem: &Problem,
    text: String,
    url: &str,
) -> Result<(), CliError> {
    let limit = solution_limit(args.all, args.count, args.limit)?;
    let stdout = io::stdout();
    let mut writer = SolutionWriter::new(
        problem,
        BufWriter::new(stdout.lock()),
        args.format,
        !args.count,
    );
    let start = Instant::now();
    // DLX-PRE's report counts the mems of reading the input, here.
    let input_mems = xccd::xcc::preprocess::input_mems(text.as_bytes());
    let request = pb::EnumerateRequest {
        problem: Some(pb::Problem {
            source: Some(pb::problem::Source::Dlx(text)),
        }),
        limit: limit.unwrap_or(0),
        count_only: args.count,
        max_nodes: args.max_nodes.unwrap_or(0),
        progress_interval_seconds: 0.2,
        engine: args.at.engine.proto(),
        // Solutions are written from their indices with the problem read
        // here: the packed form is all they need, and the cheapest.
        packed_solutions: !args.count,
        preprocess: args.preprocess,
        ..Default::default()
    };

    let mut options = Vec::new();
    let tls = args.at.tls.load()?;
    let request = authorized(request, args.at.api_key.load()?.as_deref())?;
    let ended = runtime()?.block_on(async {
        let mut client = SolverServiceClient::new(connect(url, &tls).await?)
            .max_decoding_message_size(64 << 20)
            .max_encoding_message_size(64 << 20);
        let stream = client
            .enumerate(request)
            .await
            .map_err(|s| status_error(url, s))?
            .into_inner();
        drain(url, stream, args.quiet, |solution| {
            options.clear();
            options.extend(solution.iter().map(|&o| o as usize));
            writer.write(&options)
        })
        .await
    })?;
    if let (Some(p), false) = (&ended.preprocessing, args.quiet) {
        let figures = xccd::xcc::preprocess::Figures {
            options_out: p.removed_options as usize,
            items_out: p.removed_items as usize,
            rounds: p.rounds,
            mems: p.mems,
            ..Default::default()
        };
        eprintln!(
            "Preprocessed (DLX-PRE, on the server): {}",
            figures.summary(input_mems)
        );
    }
    finish(args, writer, ended, start.elapsed())
}

/// Solves a puzzle on the server at `url` (EnumeratePuzzle), handing each
/// solved grid's text to `each`.
pub fn puzzle_remote(
    url: &str,
    tls: &ClientTls,
    request: tonic::Request<pb::EnumeratePuzzleRequest>,
    quiet: bool,
    each: impl FnMut(pb::PuzzleSolution) -> io::Result<()>,
) -> Result<Ended, CliError> {
    runtime()?.block_on(async {
        let mut client = xccd::service::proto::puzzle_service_client::PuzzleServiceClient::new(
            connect(url, tls).await?,
        )
        .max_decoding_message_size(64 << 20)
        .max_encoding_message_size(64 << 20);
        let stream = client
            .enumerate_puzzle(request)
            .await
            .map_err(|s| status_error(url, s))?
            .into_inner();
        drain(url, stream, quiet, each).await
    })
}
