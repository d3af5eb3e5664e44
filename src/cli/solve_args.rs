//! The flags of `xccd solve`, which every way of running it reads (this
//! thread, the pool, a server, the memoized count, the cheapest search,
//! preprocessing), and what they ask for. No searching and no printing here.

use clap::{Args, ValueEnum};

use super::credentials::WhereArgs;
use super::CliError;

#[derive(Args, Debug)]
pub struct SolveArgs {
    /// DLX file to read, or `-` for standard input.
    #[arg(default_value = "-")]
    pub input: String,
    /// Print every solution (the default is the first one only).
    #[arg(long, conflicts_with = "limit")]
    pub all: bool,
    /// Print at most N solutions.
    #[arg(long, value_name = "N")]
    pub limit: Option<u64>,
    /// Print only the number of solutions (all of them, or up to --limit).
    #[arg(long)]
    pub count: bool,
    /// How to print solutions.
    #[arg(long, value_enum, default_value_t = Format::Knuth)]
    pub format: Format,
    /// Give up after this many search-tree nodes.
    #[arg(long, value_name = "N")]
    pub max_nodes: Option<u64>,
    /// Print the number of nodes on each level of the search tree (stderr).
    #[arg(long)]
    pub profile: bool,
    /// Print Knuth's progress line on stderr about every SECONDS seconds.
    #[arg(long, value_name = "SECONDS")]
    pub progress: Option<f64>,
    /// Do not print the final statistics line on stderr.
    #[arg(long, short)]
    pub quiet: bool,
    /// Count by memoized search (Knuth's DLX6): states of the search met
    /// again are looked up, not searched again, and all solutions come out
    /// as a ZDD. Orders of magnitude faster where subproblems repeat
    /// (tilings, latin squares); answers --count, --zdd and --sample only.
    #[arg(long, conflicts_with_all = ["all", "limit", "max_nodes", "profile"])]
    pub memo: bool,
    /// With --memo: write the ZDD of all solutions to FILE, in the text
    /// format of Knuth's ZDD programs (what DLX6 `m1` prints).
    #[arg(long, value_name = "FILE", requires = "memo")]
    pub zdd: Option<std::path::PathBuf>,
    /// With --memo: print N solutions drawn uniformly at random (with
    /// replacement) from all solutions, in --format.
    #[arg(long, value_name = "N", requires = "memo")]
    pub sample: Option<u64>,
    /// With --memo --count: DLX6's search to the end, even where its cache
    /// does not pay (without it, a count whose cache is judged, in stages
    /// from its 256th node, to cost more than 1.2 times the plain count is
    /// finished by the plain search; --zdd and --sample always search to
    /// the end).
    #[arg(long, requires = "memo")]
    pub faithful: bool,
    /// The seed of --sample: the same seed draws the same solutions.
    #[arg(long, value_name = "S", default_value_t = 0, requires = "sample")]
    pub seed: u64,
    /// Reduce the problem first, as Knuth's DLX-PRE does (`xccd
    /// preprocess`), and search the reduced one: the same solutions (and
    /// counts, and cheapest costs), named by the input's options. Works with
    /// every search: --memo, --cheapest, --threads, and --server (the
    /// server preprocesses, the API's `preprocess`: the input is what is
    /// sent).
    #[arg(long)]
    pub preprocess: bool,
    /// Find the K cheapest solutions of a problem whose options have costs
    /// (`|n` on an option line, Knuth's DLX5), printed with their costs in
    /// the order they were found (`--format indices`: `COST: i j ...`;
    /// json adds "cost").
    #[arg(long, value_name = "K", conflicts_with_all = ["all", "limit", "count", "memo", "max_nodes", "profile", "progress"])]
    pub cheapest: Option<usize>,
    /// With --cheapest: DLX5's `h`, how many usable options of an item the
    /// branching choice counts before it takes the list's length instead
    /// (DLX5's default 10).
    #[arg(long, value_name = "N", requires = "cheapest")]
    pub lenthresh: Option<usize>,
    /// With --cheapest: DLX5's `z`. Every option has exactly N primary
    /// items besides its --zchars ones (warned about otherwise): a node
    /// whose active items' least costs cannot beat the cutoff is cut off.
    /// Wrong answers if the problem is not so; not with --preprocess, which
    /// removes items.
    #[arg(
        long,
        value_name = "N",
        requires = "cheapest",
        conflicts_with = "preprocess"
    )]
    pub zgiven: Option<u32>,
    /// With --cheapest: DLX5's `Z`, up to 7 characters; every option has
    /// exactly one primary item whose name begins with each (warned about
    /// otherwise), and the same lower bound as --zgiven applies.
    #[arg(
        long,
        value_name = "CHARS",
        requires = "cheapest",
        conflicts_with = "preprocess"
    )]
    pub zchars: Option<String>,
    #[command(flatten)]
    pub at: WhereArgs,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// `N:` then one line per option, its items as `name` or `name:color`.
    Knuth,
    /// One line per solution: the chosen option indices (0-based, input order).
    Indices,
    /// One JSON object per line: {"solution": N, "options": [...]}.
    Json,
}

/// How many solutions to look for: `--limit N`, every one with `--all` or
/// `--count`, else the first.
pub fn solution_limit(all: bool, count: bool, limit: Option<u64>) -> Result<Option<u64>, CliError> {
    let limit = match (all, count, limit) {
        (_, _, Some(n)) => Some(n),
        (true, _, None) | (_, true, None) => None,
        (false, false, None) => Some(1),
    };
    if limit == Some(0) {
        return Err(CliError::BadInput("--limit must be at least 1".into()));
    }
    Ok(limit)
}
