//! `xccd solve --threads N` (the server's worker pool, in this process) and
//! `xccd solve --server URL` (a running server). Both print through the same
//! writer as the single-threaded run, so their output has the same form.

use std::io::{self, BufWriter};
use std::sync::Arc;
use std::time::{Duration, Instant};

use xccd::service::job::Event;
use xccd::service::proto as pb;
use xccd::service::proto::solver_service_client::SolverServiceClient;
use xccd::service::{Delivery, EndReason, JobSpec, Pool, PoolConfig};
use xccd::xcc::{Problem, Stats};

use super::progress::Bar;
use super::solve::{finish, solution_limit, Finish, SolutionWriter, SolveArgs};
use super::CliError;

fn runtime() -> Result<tokio::runtime::Runtime, CliError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::Failed(format!("cannot start the runtime: {e}")))
}

pub fn run_local(args: &SolveArgs, problem: Problem, threads: usize) -> Result<(), CliError> {
    if threads == 0 {
        return Err(CliError::BadInput("--threads must be at least 1".into()));
    }
    let limit = solution_limit(args)?;
    let problem = Arc::new(problem);
    let pool = Pool::new(PoolConfig {
        threads,
        max_jobs: 1,
        ..PoolConfig::default()
    });
    let start = Instant::now();
    let job = pool
        .submit(
            problem.clone(),
            JobSpec {
                limit,
                max_nodes: args.max_nodes,
                delivery: if args.count {
                    Delivery::CountOnly
                } else {
                    Delivery::Stream {
                        buffer_batches: 64,
                        batch_size: 256,
                    }
                },
                condition: None,
            },
        )
        .map_err(|e| CliError::Failed(e.to_string()))?;
    let stdout = io::stdout();
    let mut writer = SolutionWriter::new(
        &problem,
        BufWriter::new(stdout.lock()),
        args.format,
        !args.count,
    );
    let mut bar = Bar::new(args.quiet);
    let mut write_error = None;
    let mut options = Vec::new();
    let summary = runtime()?.block_on(async {
        let mut tick = tokio::time::interval(Duration::from_millis(200));
        loop {
            tokio::select! {
                event = job.next_event() => match event {
                    Event::Solutions(batch) => {
                        for solution in batch {
                            options.clear();
                            options.extend(solution.iter().map(|&o| o as usize));
                            if write_error.is_none() {
                                if let Err(e) = writer.write(&options) {
                                    write_error = Some(e);
                                    pool.cancel(&job, EndReason::Cancelled);
                                }
                            }
                        }
                    }
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
    finish(
        args,
        writer,
        write_error,
        Finish {
            stats: summary.stats,
            elapsed: start.elapsed(),
            node_limit: summary.reason == EndReason::NodeLimit,
        },
    )
}

fn status_error(url: &str, status: tonic::Status) -> CliError {
    match status.code() {
        tonic::Code::InvalidArgument => CliError::BadInput(status.message().to_string()),
        code => CliError::Failed(format!("{url}: {code:?}: {}", status.message())),
    }
}

pub fn run_remote(
    args: &SolveArgs,
    problem: &Problem,
    text: String,
    url: &str,
) -> Result<(), CliError> {
    let limit = solution_limit(args)?;
    let stdout = io::stdout();
    let mut writer = SolutionWriter::new(
        problem,
        BufWriter::new(stdout.lock()),
        args.format,
        !args.count,
    );
    let mut bar = Bar::new(args.quiet);
    let mut write_error = None;
    let start = Instant::now();
    let summary = runtime()?.block_on(async {
        let mut client = SolverServiceClient::connect(url.to_string())
            .await
            .map_err(|e| CliError::Failed(format!("cannot connect to {url}: {e}")))?
            .max_decoding_message_size(64 << 20)
            .max_encoding_message_size(64 << 20);
        let request = pb::EnumerateRequest {
            problem: Some(pb::Problem {
                source: Some(pb::problem::Source::Dlx(text)),
            }),
            limit: limit.unwrap_or(0),
            count_only: args.count,
            max_nodes: args.max_nodes.unwrap_or(0),
            progress_interval_seconds: 0.2,
            ..Default::default()
        };
        let mut stream = client
            .enumerate(request)
            .await
            .map_err(|s| status_error(url, s))?
            .into_inner();
        let mut options = Vec::new();
        while let Some(message) = stream.message().await.map_err(|s| status_error(url, s))? {
            use pb::enumerate_response::Event as E;
            match message.event {
                Some(E::Solutions(batch)) => {
                    for solution in batch.solutions {
                        options.clear();
                        options.extend(solution.option_indices.iter().map(|&o| o as usize));
                        if let Err(e) = writer.write(&options) {
                            write_error = Some(e);
                            // Dropping the stream cancels the job on the server.
                            return Ok(None);
                        }
                    }
                }
                Some(E::Progress(p)) => bar.update(p.solutions, p.nodes, p.fraction_done),
                Some(E::Summary(summary)) => return Ok(Some(summary)),
                None => {}
            }
        }
        Err(CliError::Failed(format!(
            "{url}: the stream ended without a summary"
        )))
    })?;
    bar.finish();
    let (stats, node_limit) = match summary {
        Some(summary) => {
            let s = summary.statistics.unwrap_or_default();
            (
                Stats {
                    nodes: s.nodes,
                    updates: s.updates,
                    cleansings: s.cleansings,
                    solutions: summary.solutions,
                    ..Stats::default()
                },
                summary.reason == pb::EndReason::NodeLimit as i32,
            )
        }
        None => (Stats::default(), false),
    };
    finish(
        args,
        writer,
        write_error,
        Finish {
            stats,
            elapsed: start.elapsed(),
            node_limit,
        },
    )
}
