//! The log and trace output of `xccd serve` and `xccd worker`: log lines on
//! stderr (text or JSON, filtered by RUST_LOG, default info) and, with an
//! OTLP endpoint (`--otlp-endpoint`, or the standard
//! `OTEL_EXPORTER_OTLP_*ENDPOINT` variables), the same spans exported as
//! OpenTelemetry traces. Without an endpoint no trace layer is installed.

use std::io::IsTerminal;

use clap::{Args, ValueEnum};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::Layer;
use xccd::service::telemetry::{self, Exporter};

use super::CliError;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

/// The flags of logs and traces, shared by `serve` and `worker`.
#[derive(Args, Debug)]
pub struct LogArgs {
    /// Log format on stderr (filter with RUST_LOG, default info).
    #[arg(long, env = "XCCD_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    /// Export traces (OpenTelemetry, OTLP over gRPC) to this collector,
    /// e.g. http://otel-collector:4317. Default: the standard
    /// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT;
    /// none set, no traces.
    #[arg(long, value_name = "URL")]
    pub otlp_endpoint: Option<String>,
}

/// Installs the process's subscriber: logs on stderr, and with an endpoint
/// the trace exporter (as `service`), returned to be kept until the process
/// ends (dropping it sends the last spans). Call inside the Tokio runtime
/// that outlives it.
pub fn init(args: &LogArgs, service: &str) -> Result<Option<Exporter>, CliError> {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    // Colour codes only for a person at a terminal: a file, a pipe or a
    // log collector gets plain text.
    let fmt = tracing_subscriber::fmt::layer()
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr);
    let logs = match args.log_format {
        LogFormat::Text => fmt.boxed(),
        LogFormat::Json => fmt.json().boxed(),
    };
    let exporter = telemetry::endpoint(args.otlp_endpoint.clone())
        .map(|url| Exporter::start(&url, service))
        .transpose()
        .map_err(CliError::BadInput)?;
    let registry = tracing_subscriber::registry().with(filter).with(logs);
    match &exporter {
        Some(exporter) => registry.with(exporter.layer()).init(),
        None => registry.init(),
    }
    Ok(exporter)
}
