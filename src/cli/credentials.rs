//! Command-line options for TLS and the workers' token, shared by the
//! subcommands that talk to a server or serve one.

use std::path::{Path, PathBuf};

use clap::Args;
use std::sync::Arc;

use xccd::service::callers::ApiKeys;
use xccd::service::credentials::{ClientTls, ServerTls, WorkerToken};
use xccd::service::proto as pb;
use xccd::xcc::Engine;

use super::CliError;

/// TLS towards a server (`--server https://...`, `xccd worker`).
#[derive(Args, Debug, Default, Clone)]
pub struct ClientTlsArgs {
    /// The CA certificate (PEM) that signed the server's certificate, for
    /// an https:// server (default: the system's roots).
    #[arg(long, value_name = "FILE", env = "XCCD_CA_CERT")]
    pub ca_cert: Option<PathBuf>,
    /// This client's certificate chain (PEM), for servers that require one.
    #[arg(
        long,
        value_name = "FILE",
        env = "XCCD_CLIENT_CERT",
        requires = "client_key"
    )]
    pub client_cert: Option<PathBuf>,
    /// The key of --client-cert (PEM).
    #[arg(
        long,
        value_name = "FILE",
        env = "XCCD_CLIENT_KEY",
        requires = "client_cert"
    )]
    pub client_key: Option<PathBuf>,
}

/// Where a search runs when not on this thread: a pool of threads in this
/// process, or a server (with its TLS and API key).
#[derive(Args, Debug, Default, Clone)]
pub struct WhereArgs {
    /// Run on a pool of N worker threads, as the server does (solutions may
    /// then come in a different order from run to run).
    #[arg(long, value_name = "N", conflicts_with = "server")]
    pub threads: Option<usize>,
    /// Run on an xccd server (for example http://127.0.0.1:50051, or
    /// https://... with --ca-cert).
    #[arg(long, value_name = "URL", env = "XCCD_SERVER")]
    pub server: Option<String>,
    /// The search engine: `cells` (Knuth's SSXCC, sparse sets; SSMCC for
    /// multiplicities), `links` (DLX2/DLX3, dancing links) or `auto` (cells
    /// unless the problem's only constraints are exact multiplicities, no
    /// secondary items). Both find the same solutions; node counts and the
    /// order of solutions differ.
    #[arg(long, value_enum, default_value_t = EngineChoice::Auto)]
    pub engine: EngineChoice,
    #[command(flatten)]
    pub tls: ClientTlsArgs,
    #[command(flatten)]
    pub api_key: ApiKeyArgs,
}

/// The API key a client presents to a server that requires one.
#[derive(Args, Debug, Default, Clone)]
pub struct ApiKeyArgs {
    /// A file holding this client's API key (or set the key itself in
    /// XCCD_API_KEY).
    #[arg(long, value_name = "FILE", env = "XCCD_API_KEY_FILE")]
    pub api_key_file: Option<PathBuf>,
}

impl ApiKeyArgs {
    pub fn load(&self) -> Result<Option<String>, CliError> {
        let from_env = std::env::var("XCCD_API_KEY").ok().filter(|k| !k.is_empty());
        match (from_env, &self.api_key_file) {
            (Some(_), Some(_)) => Err(CliError::BadInput(
                "give the API key once: XCCD_API_KEY or --api-key-file".into(),
            )),
            (Some(key), None) => Ok(Some(key.trim().to_string())),
            (None, Some(path)) => std::fs::read_to_string(path)
                .map(|k| Some(k.trim().to_string()))
                .map_err(|e| CliError::BadInput(format!("--api-key-file {}: {e}", path.display()))),
            (None, None) => Ok(None),
        }
    }
}

impl ClientTlsArgs {
    pub fn load(&self) -> Result<ClientTls, CliError> {
        let identity = match (&self.client_cert, &self.client_key) {
            (Some(cert), Some(key)) => Some((
                read_pem(cert, "--client-cert")?,
                read_pem(key, "--client-key")?,
            )),
            _ => None,
        };
        Ok(ClientTls {
            ca: self
                .ca_cert
                .as_deref()
                .map(|p| read_pem(p, "--ca-cert"))
                .transpose()?,
            identity,
        })
    }
}

/// A server's TLS: `--tls-cert` and `--tls-key`, and the CA that must have
/// signed its clients' certificates.
pub fn server_tls(
    cert: Option<&Path>,
    key: Option<&Path>,
    client_ca: Option<&Path>,
) -> Result<Option<ServerTls>, CliError> {
    match (cert, key) {
        (Some(cert), Some(key)) => Ok(Some(ServerTls {
            cert: read_pem(cert, "--tls-cert")?,
            key: read_pem(key, "--tls-key")?,
            client_ca: client_ca
                .map(|p| read_pem(p, "--tls-client-ca"))
                .transpose()?,
        })),
        (None, None) if client_ca.is_none() => Ok(None),
        (None, None) => Err(CliError::BadInput(
            "--tls-client-ca needs --tls-cert and --tls-key".into(),
        )),
        _ => Err(CliError::BadInput(
            "--tls-cert and --tls-key go together".into(),
        )),
    }
}

/// The workers' token: the environment variable `XCCD_WORKER_TOKEN`, or the
/// file `--worker-token-file` names (not both).
pub fn worker_token(file: Option<&Path>) -> Result<Option<WorkerToken>, CliError> {
    let from_env = std::env::var("XCCD_WORKER_TOKEN")
        .ok()
        .filter(|t| !t.is_empty());
    let text = match (from_env, file) {
        (Some(_), Some(_)) => {
            return Err(CliError::BadInput(
                "give the worker token once: XCCD_WORKER_TOKEN or --worker-token-file".into(),
            ))
        }
        (Some(token), None) => token,
        (None, Some(path)) => std::fs::read_to_string(path).map_err(|e| {
            CliError::BadInput(format!("--worker-token-file {}: {e}", path.display()))
        })?,
        (None, None) => return Ok(None),
    };
    WorkerToken::new(&text)
        .map(Some)
        .map_err(CliError::BadInput)
}

/// The API keys in the file `path` (`--api-keys`).
pub fn api_keys(path: &Path) -> Result<Arc<ApiKeys>, CliError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| CliError::BadInput(format!("--api-keys {}: {e}", path.display())))?;
    ApiKeys::parse(&text)
        .map(Arc::new)
        .map_err(|e| CliError::BadInput(format!("--api-keys {}: {e}", path.display())))
}

/// The PEM file `path`, named by the option `what` in errors.
pub fn read_pem(path: &Path, what: &str) -> Result<Vec<u8>, CliError> {
    let bytes = std::fs::read(path)
        .map_err(|e| CliError::BadInput(format!("{what} {}: {e}", path.display())))?;
    if !bytes.windows(11).any(|w| w == b"-----BEGIN ") {
        return Err(CliError::BadInput(format!(
            "{what} {}: not a PEM file (no -----BEGIN line)",
            path.display()
        )));
    }
    Ok(bytes)
}

/// The most memory one search may take in this process: XCCD_MAX_SEARCH_MEMORY,
/// else the machine's default (as `xccd serve` computes it, for a thread
/// per core).
pub fn search_memory_limit() -> Result<u64, CliError> {
    match std::env::var("XCCD_MAX_SEARCH_MEMORY") {
        Ok(text) => xccd::service::memory::parse_size(&text)
            .map_err(|e| CliError::BadInput(format!("XCCD_MAX_SEARCH_MEMORY: {e}"))),
        Err(_) => {
            let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
            Ok(xccd::service::memory::MemoryLimits::for_machine(2 * cores + 2).per_run)
        }
    }
}

/// `--engine`: an engine, or `auto`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum EngineChoice {
    #[default]
    Auto,
    Links,
    Cells,
}

impl EngineChoice {
    /// The engine for `problem`; an error when it cannot search it, or
    /// when its working memory could pass what a search may take here
    /// (see [`search_memory_limit`]): `auto` then picks an engine that fits.
    pub fn resolve(self, problem: &xccd::xcc::Problem) -> Result<Engine, CliError> {
        let limit = search_memory_limit()?;
        let too_large = |need: xccd::xcc::memory::Need| {
            CliError::Failed(format!(
                "{need} (set XCCD_MAX_SEARCH_MEMORY to change the limit)"
            ))
        };
        let engine = match self {
            EngineChoice::Auto => {
                return xccd::xcc::memory::fitting(problem, limit).map_err(too_large)
            }
            EngineChoice::Links => Engine::Links,
            EngineChoice::Cells => Engine::Cells,
        };
        if !engine.supports(problem) {
            return Err(CliError::BadInput(format!(
                "--engine {}: {}",
                engine.name(),
                xccd::xcc::UnsupportedEngine { engine }
            )));
        }
        xccd::xcc::memory::check(problem, engine, limit)
            .map(|_| engine)
            .map_err(too_large)
    }

    /// The request field (`xccd.v1.Engine`).
    pub fn proto(self) -> i32 {
        match self {
            EngineChoice::Auto => pb::Engine::Unspecified as i32,
            EngineChoice::Links => pb::Engine::Links as i32,
            EngineChoice::Cells => pb::Engine::Cells as i32,
        }
    }
}
