//! The flags of one run of analyses, shared by `normscope reproduce` and the analysis
//! binaries (`analyses/bin/`), so both accept the same flags with the same help and build the
//! same [`Request`].

use super::Request;
use normscope_core::Result;
use std::path::PathBuf;

/// `--out-dir`, `--quick`, `--config`, `--seed`, `--print-config` and `--shard`: what
/// `normscope reproduce` and every analysis binary take (`reproduce` adds `--only` and
/// `--list`).
///
/// # Examples
///
/// ```rust
/// use clap::Parser;
/// use normscope_analyses::commands::args::RunArgs;
/// #[derive(Parser)]
/// struct Cli {
///     #[command(flatten)]
///     run: RunArgs,
/// }
/// let cli = Cli::parse_from(["warmup", "--quick", "--seed", "7", "--shard", "1/4"]);
/// let req = cli.run.request(vec!["warmup".into()], None)?;
/// assert!(req.quick);
/// assert_eq!(req.seed, Some(7));
/// assert_eq!(req.only, ["warmup"]);
/// assert_eq!(req.root, std::path::Path::new("."));
/// assert_eq!(req.shard.map(|s| (s.index, s.count)), Some((1, 4)));
/// # Ok::<(), normscope_core::Error>(())
/// ```
#[derive(Clone, Debug, Default, clap::Args)]
pub struct RunArgs {
    /// Write DIR/data/... and DIR/figures/... instead of the current directory's.
    #[arg(long, default_value = ".")]
    pub out_dir: PathBuf,
    /// Reduced Monte Carlo (smaller width, fewer networks and depths) for CI: under a minute.
    #[arg(long)]
    pub quick: bool,
    /// TOML file with one table per analysis id overriding its defaults, e.g.
    /// `[effective-depth]` then `mc_depths = [4, 16]`; unknown tables and keys are rejected.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Base seed of every analysis's Monte Carlo runs (replaces the defaults and the
    /// --config file's values; recorded in each manifest).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Print the resolved configuration of the selected analyses as TOML (the defaults with
    /// --quick, --config and --seed applied), ready to edit and pass to --config; runs nothing.
    #[arg(long)]
    pub print_config: bool,
    /// Run only shard I of N (0-based, e.g. 0/4) of the one analysis given with --only: its
    /// share of the work units, written to --out-dir with a shard.json for `normscope merge`.
    #[arg(long, value_name = "I/N", allow_hyphen_values = true)]
    pub shard: Option<String>,
}

impl RunArgs {
    /// The [`Request`] for the analyses `only` (all if empty), recording `invocation` in the
    /// manifests (`None`: this process's command line). A malformed `--shard` is refused here.
    pub fn request(self, only: Vec<String>, invocation: Option<String>) -> Result<Request> {
        Ok(Request {
            root: self.out_dir,
            only,
            quick: self.quick,
            config: self.config,
            seed: self.seed,
            print_config: self.print_config,
            shard: self.shard.as_deref().map(str::parse).transpose()?,
            invocation,
        })
    }
}
