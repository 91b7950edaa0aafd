//! Presets: one file per placement, each documenting its equation and its paper, plus the
//! registry that the CLI, the analyses and the tests iterate.
//!
//! Adding a preset is one new file plus one line in [`REGISTRY`]. Without writing Rust, a
//! placement file ([`mod@file`], `--placements FILE`) defines more: [`load`] checks it and adds its
//! presets to this process's registry, after the built-in ones, so [`find`] and [`build`] (and
//! everything that takes a preset name) accept them.

mod admin;
mod deepnorm;
pub mod file;
mod lns;
mod mixln;
mod post;
mod pre;
mod rezero;
mod sandwich;

use crate::spec::{BranchScale, NormKind, SkipScale, Slot, StackSpec};
use crate::{Error, Result};
use std::path::Path;
use std::sync::RwLock;

/// How a preset builds its stack.
///
/// # Examples
///
/// ```rust
/// use normscope_core::placement::{Builder, find, load_text};
/// assert!(matches!(find("pre")?.build, Builder::BuiltIn(_)));
/// let text = "[[placement]]\nname = \"builder-doc\"\n[[placement.segment]]\ninput = \"layer\"\n";
/// let loaded = load_text(text, "doc.toml")?;
/// assert!(matches!(loaded[0].build, Builder::File(_)));
/// assert_eq!(loaded[0].stack(3)?.depth, 3);
/// # Ok::<(), normscope_core::Error>(())
/// ```
#[derive(Clone, Copy)]
pub enum Builder {
    /// A built-in preset's function of the depth L (L >= 1).
    BuiltIn(fn(usize) -> StackSpec),
    /// A placement file's definition.
    File(&'static file::Placement),
}

/// A named placement of normalization.
///
/// # Examples
///
/// ```rust
/// use normscope_core::placement::find;
/// use normscope_core::spec::Slot;
/// let p = find("POST-LN")?; // names and aliases ignore ASCII case
/// assert_eq!((p.name, p.label), ("post", "Post-LN"));
/// assert_eq!(p.aliases, &["post-ln", "postnorm"]);
/// assert!(p.file().is_none()); // built in
/// let spec = p.stack(3)?;
/// assert_eq!((spec.depth, spec.final_norm), (3, Slot::Identity));
/// # Ok::<(), normscope_core::Error>(())
/// ```
pub struct Preset {
    /// Canonical name used in tables and on the command line.
    pub name: &'static str,
    /// Other accepted names.
    pub aliases: &'static [&'static str],
    /// How papers name it in legends and tables (e.g. `Post-LN`).
    pub label: &'static str,
    /// The block equation.
    pub equation: &'static str,
    /// The paper it comes from.
    pub source: &'static str,
    /// Builds the stack.
    pub build: Builder,
    /// The presets of an encoder-decoder's encoder and decoder stacks, where they are not this
    /// one (`None`: both are this preset).
    pub halves: Option<(&'static Preset, &'static Preset)>,
}

/// A preset prints as its canonical name (`Debug` quotes it, as a name's `Debug` would).
impl std::fmt::Display for Preset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

impl std::fmt::Debug for Preset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self.name, f)
    }
}

/// Presets are equal when their canonical names are (names are unique in the registry).
impl PartialEq for Preset {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

/// A preset equals its canonical name (not an alias: `POST == *"post"`, `POST != *"post-ln"`),
/// so a configuration's resolved presets compare with the names it lists.
///
/// ```rust
/// use normscope_core::placement::{POST, PRE};
/// assert!(*POST == *"post" && *POST != *"post-ln");
/// assert_eq!(vec![PRE, POST], ["pre", "post"]);
/// ```
impl PartialEq<str> for Preset {
    fn eq(&self, other: &str) -> bool {
        self.name == other
    }
}

impl Eq for Preset {}

/// A preset serializes as its canonical name, so a configuration holding resolved presets
/// records the names it was given.
impl serde::Serialize for Preset {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(self.name)
    }
}

/// A resolved preset deserializes from a name or alias ([`find`]: built-in, or loaded from a
/// placement file before the configuration is read), so a configuration holds the preset
/// itself and no engine looks a name up again; it serializes back as the canonical name.
///
/// # Examples
///
/// ```rust
/// use normscope_core::placement::Preset;
/// let p: Vec<&'static Preset> = serde_json::from_str(r#"["Post-LN", "pre"]"#).unwrap();
/// assert_eq!((p[0].name, p[0].label, p[1].name), ("post", "Post-LN", "pre"));
/// assert_eq!(serde_json::to_string(&p).unwrap(), r#"["post","pre"]"#);
/// let e = serde_json::from_str::<&'static Preset>(r#""nope""#).unwrap_err();
/// assert!(e.to_string().contains("unknown preset"), "{e}");
/// ```
impl<'de> serde::Deserialize<'de> for &'static Preset {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        find(&name).map_err(serde::de::Error::custom)
    }
}

impl Preset {
    /// The stack at depth L >= 1, named and labelled after the preset (with its placement
    /// file, if any), before overrides.
    pub fn stack(&self, depth: usize) -> Result<StackSpec> {
        let mut spec = match self.build {
            Builder::BuiltIn(f) => f(depth),
            Builder::File(p) => p.build(depth)?,
        };
        spec.preset = self.name.to_string();
        spec.label = self.label.to_string();
        spec.file = self.file().map(|f| f.path.clone());
        Ok(spec)
    }

    /// The stack at depth L >= 1 with overrides `ov` applied: [`build`] for a preset already
    /// resolved, without a lookup by name.
    ///
    /// A placement file's stack that equals a built-in preset's stack at this depth (with the
    /// same overrides) records that preset in [`StackSpec::seed_as`], so Monte Carlo draws the
    /// same networks for it: a file that reproduces a preset reproduces its numbers.
    ///
    /// # Examples
    ///
    /// ```rust
    /// use normscope_core::placement::{find, Overrides};
    /// let ov = Overrides { beta: Some(0.5), ..Overrides::default() };
    /// let spec = find("pre")?.stack_with(4, &ov)?;
    /// assert_eq!((spec.preset.as_str(), spec.depth, spec.beta), ("pre", 4, Some(0.5)));
    /// assert!(find("pre")?.stack_with(0, &ov).is_err());
    /// # Ok::<(), normscope_core::Error>(())
    /// ```
    pub fn stack_with(&self, depth: usize, ov: &Overrides) -> Result<StackSpec> {
        if depth == 0 {
            return Err(Error::invalid("--depth", 0, "an integer >= 1"));
        }
        let spec = apply(self.stack(depth)?, ov);
        let Some(f) = self.file() else {
            return Ok(spec);
        };
        let same = |b: &StackSpec| {
            StackSpec {
                preset: spec.preset.clone(),
                label: spec.label.clone(),
                file: spec.file.clone(),
                ..b.clone()
            } == spec
        };
        // The preset the file says it reproduces first, then every built-in in order.
        let named = f.reproduces;
        for b in named.into_iter().chain(REGISTRY) {
            if same(&apply(b.stack(depth)?, ov)) {
                return Ok(StackSpec {
                    seed_as: Some(b.name.to_string()),
                    ..spec
                });
            }
        }
        Ok(spec)
    }

    /// The presets of an encoder-decoder's encoder and decoder stacks: [`Self::halves`]
    /// (DeepNet's encoder-decoder constants), or this preset for both.
    ///
    /// # Examples
    ///
    /// ```rust
    /// use normscope_core::placement::find;
    /// let (enc, dec) = find("deepnorm")?.encoder_decoder();
    /// assert_eq!((enc.name, dec.name), ("deepnorm-ed-enc", "deepnorm-ed-dec"));
    /// let (enc, dec) = find("pre")?.encoder_decoder();
    /// assert_eq!((enc.name, dec.name), ("pre", "pre"));
    /// # Ok::<(), normscope_core::Error>(())
    /// ```
    pub fn encoder_decoder(&'static self) -> (&'static Preset, &'static Preset) {
        self.halves.unwrap_or((self, self))
    }

    /// Refuses `--norm norm` (`field`, given explicitly) for this preset: a placement file
    /// that names its norms keeps its own kind, so `norm` must be that kind or `identity` (which
    /// removes them). The one check of the flag against a preset; [`norm_under`] applies the
    /// same rule when the stack is built.
    pub fn check_norm(&self, norm: NormKind, field: &'static str) -> Result<()> {
        match self.file() {
            Some(f) if f.has_norm && !norm.is_identity() && f.norm != norm => Err(Error::invalid(
                field,
                norm,
                format!(
                    "{} or identity for preset {} (its placement file {} names its norms {}; a \
                     file's norm kind is its own)",
                    f.norm, f.name, f.path, f.norm
                ),
            )),
            _ => Ok(()),
        }
    }

    /// The placement-file definition, if the preset comes from one.
    pub fn file(&self) -> Option<&'static file::Placement> {
        match self.build {
            Builder::BuiltIn(_) => None,
            Builder::File(p) => Some(p),
        }
    }
}

/// Pre-LN, `x + F(Norm(x))` (Xiong et al. 2020): the built-in preset as a value, for code
/// that names it without a lookup.
///
/// ```rust
/// assert_eq!(normscope_core::placement::PRE, normscope_core::placement::find("pre-ln")?);
/// # Ok::<(), normscope_core::Error>(())
/// ```
pub const PRE: &Preset = &pre::PRESET;

/// Post-LN, `Norm(x + F(x))` (Vaswani et al. 2017): the built-in preset as a value.
///
/// ```rust
/// assert_eq!(normscope_core::placement::POST.label, "Post-LN");
/// ```
pub const POST: &Preset = &post::PRESET;

/// DeepNorm, `Norm(alpha x + F(x))` (Wang et al. 2022): the built-in preset as a value.
///
/// ```rust
/// assert_eq!(normscope_core::placement::DEEPNORM.name, "deepnorm");
/// ```
pub const DEEPNORM: &Preset = &deepnorm::PRESET;

/// Every preset, in the order tables list them.
pub const REGISTRY: &[Preset] = &[
    pre::PRESET,
    post::PRESET,
    deepnorm::PRESET,
    deepnorm::ENCDEC_ENCODER,
    deepnorm::ENCDEC_DECODER,
    sandwich::PRESET,
    lns::PRESET,
    admin::PRESET,
    mixln::PRESET,
    rezero::PRESET,
];

/// Presets loaded from placement files in this process ([`load`]), in load order. They live
/// as long as the process (a command loads its files once).
static LOADED: RwLock<Vec<&'static Preset>> = RwLock::new(Vec::new());

/// The presets loaded from placement files so far.
pub fn loaded() -> Vec<&'static Preset> {
    LOADED.read().map(|v| v.clone()).unwrap_or_default()
}

/// Every preset: the built-in ones, then those loaded from placement files.
pub fn all() -> Vec<&'static Preset> {
    REGISTRY.iter().chain(loaded()).collect()
}

/// Comma-separated list of valid names (for error messages).
pub(crate) fn valid_names() -> String {
    all()
        .iter()
        .map(|p| {
            if p.aliases.is_empty() {
                p.name.to_string()
            } else {
                format!("{} (also {})", p.name, p.aliases.join(", "))
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn matches(p: &Preset, name: &str) -> bool {
    p.name.eq_ignore_ascii_case(name) || p.aliases.iter().any(|a| a.eq_ignore_ascii_case(name))
}

/// A built-in preset by name or alias, ignoring ASCII case.
pub(crate) fn find_builtin(name: &str) -> Result<&'static Preset> {
    REGISTRY
        .iter()
        .find(|p| matches(p, name))
        .ok_or_else(|| Error::Unknown {
            kind: "preset",
            name: name.to_string(),
            valid: valid_names(),
        })
}

/// Looks a preset up by name or alias, ignoring ASCII case (`Pre`, `POST`, `DeepNorm`): the
/// built-in ones, then those loaded from placement files.
pub fn find(name: &str) -> Result<&'static Preset> {
    find_builtin(name).or_else(|e| loaded().into_iter().find(|p| matches(p, name)).ok_or(e))
}

/// Reads placement file `path` ([`mod@file`]), checks it, and adds its presets to the registry;
/// returns them in file order. Loading a file again (or another file with the same
/// definitions) is a no-op; a name that a different definition already took is an error.
pub fn load(path: &Path) -> Result<Vec<&'static Preset>> {
    let (text, defs) = file::read_text(path)?;
    let presets = install(defs)?;
    let entry = (path.display().to_string(), sha256_hex(text.as_bytes()));
    let mut files = FILES.write().unwrap_or_else(|e| e.into_inner());
    if !files.contains(&entry) {
        files.push(entry);
    }
    Ok(presets)
}

/// The placement files [`load`] has read, in order: the path as given and the sha256 (hex) of
/// the text read. A row names a file's preset by its name only; a standalone output's
/// provenance records these, so two files that define one name differently are told apart.
///
/// # Examples
///
/// ```rust
/// use normscope_core::placement::{load, loaded_files};
/// let path = std::env::temp_dir().join(format!("loaded-files-{}.toml", std::process::id()));
/// std::fs::write(&path, "[[placement]]\nname = \"doc-lf\"\n\n[[placement.segment]]\ninput = \"layer\"\n").unwrap();
/// load(&path).unwrap();
/// let (p, hash) = loaded_files().into_iter().last().unwrap();
/// assert_eq!(p, path.display().to_string());
/// assert_eq!(hash.len(), 64);
/// # std::fs::remove_file(&path).unwrap();
/// ```
pub fn loaded_files() -> Vec<(String, String)> {
    FILES.read().map(|v| v.clone()).unwrap_or_default()
}

static FILES: RwLock<Vec<(String, String)>> = RwLock::new(Vec::new());

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    format!("{:x}", sha2::Sha256::digest(bytes))
}

/// Like [`load`], for a placement file's text; `path` names it in messages and in
/// `normscope presets`.
pub fn load_text(text: &str, path: &str) -> Result<Vec<&'static Preset>> {
    install(file::parse(text, path)?)
}

fn install(defs: Vec<file::Placement>) -> Result<Vec<&'static Preset>> {
    let mut reg = LOADED.write().unwrap_or_else(|e| e.into_inner());
    let mut out = Vec::new();
    for def in defs {
        if let Some(p) = reg.iter().find(|p| matches(p, &def.name)) {
            match p.file() {
                Some(old) if *old == def => {
                    out.push(*p);
                    continue;
                }
                _ => {
                    return Err(Error::Config {
                        path: def.path.clone(),
                        message: format!(
                            "[[placement]] \"{}\": `name` is already defined differently by {}",
                            def.name,
                            p.file().map_or("another file", |o| o.path.as_str())
                        ),
                    });
                }
            }
        }
        let def: &'static file::Placement = Box::leak(Box::new(def));
        let leak = |s: &str| -> &'static str { Box::leak(s.to_string().into_boxed_str()) };
        let preset: &'static Preset = Box::leak(Box::new(Preset {
            name: leak(&def.name),
            aliases: &[],
            label: leak(&def.label),
            equation: leak(&def.equation),
            source: leak(format!("{} ({})", def.source, def.path).trim_start()),
            build: Builder::File(def),
            halves: None,
        }));
        reg.push(preset);
        out.push(preset);
    }
    Ok(out)
}

/// Loads every file of `paths` ([`load`]).
pub fn load_all<P: AsRef<Path>>(paths: &[P]) -> Result<()> {
    for p in paths {
        load(p.as_ref())?;
    }
    Ok(())
}

/// User overrides applied on top of a preset (`--alpha`, `--beta`, `--lambda`, `--final-norm`).
///
/// # Examples
///
/// ```rust
/// use normscope_core::placement::{build, Overrides};
/// use normscope_core::spec::{BranchScale, Slot};
/// let ov = Overrides { lambda: Some(0.25), beta: Some(0.5), final_norm: Some(false), ..Overrides::default() };
/// let spec = build("pre", 4, &ov)?;
/// assert_eq!(spec.block(4).lambda, BranchScale::Lambda(0.25));
/// assert_eq!(spec.beta, Some(0.5));
/// assert_eq!(spec.final_norm, Slot::Identity); // Pre-LN's own is Norm
/// assert_eq!(Overrides::default().alpha, None);
/// # Ok::<(), normscope_core::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Overrides {
    /// Replaces every block's skip scale by the symbol alpha with this value.
    pub alpha: Option<f64>,
    /// Sets DeepNet's branch-weight scale beta.
    pub beta: Option<f64>,
    /// Replaces every block's branch multiplier by the symbol lambda with this value.
    pub lambda: Option<f64>,
    /// Forces the final norm on (`Some(true)`) or off (`Some(false)`).
    pub final_norm: Option<bool>,
}

/// Builds preset `name` at depth `depth` and applies `ov`: [`find`] then
/// [`Preset::stack_with`], for a name being parsed (the engines take resolved presets).
pub fn build(name: &str, depth: usize, ov: &Overrides) -> Result<StackSpec> {
    if depth == 0 {
        return Err(Error::invalid("--depth", 0, "an integer >= 1"));
    }
    find(name)?.stack_with(depth, ov)
}

/// The norm kind of `spec` (from [`build`]) under `--norm asked`: a built-in preset's norms
/// are `asked`; a placement file's keep the kind its file names, unless `asked` is `identity`
/// (no norms at all). [`Preset::check_norm`] refuses an explicit flag this would override.
pub fn norm_under(spec: &StackSpec, asked: NormKind) -> NormKind {
    if spec.file.is_some() && !asked.is_identity() {
        spec.norm
    } else {
        asked
    }
}

fn apply(mut spec: StackSpec, ov: &Overrides) -> StackSpec {
    if let Some(a) = ov.alpha {
        spec.map_blocks(|mut b| {
            b.skip = SkipScale::Alpha(a);
            b
        });
    }
    if let Some(l) = ov.lambda {
        spec.map_blocks(|mut b| {
            b.lambda = BranchScale::Lambda(l);
            b
        });
    }
    if let Some(b) = ov.beta {
        spec.beta = Some(b);
    }
    if let Some(f) = ov.final_norm {
        spec.final_norm = if f { Slot::Norm } else { Slot::Identity };
    }
    spec
}

/// A tab-separated table of the presets: name, aliases, equation, source
/// (`normscope presets`).
pub fn table() -> String {
    let mut s = String::from("preset\taliases\tequation\tsource\n");
    for p in all() {
        s.push_str(&format!(
            "{}\t{}\t{}\t{}\n",
            p.name,
            p.aliases.join(","),
            p.equation,
            p.source
        ));
    }
    s
}

/// [`table`]'s rows as a DataFrame with its columns (`preset`, `aliases`, `equation`,
/// `source`): the Python package's `presets()`.
///
/// # Examples
///
/// ```rust
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use normscope_core::placement;
///
/// let df = placement::frame()?;
/// assert_eq!(df.column("preset")?.str()?.get(0), Some("pre"));
/// assert!(placement::table().starts_with("preset\taliases\tequation\tsource\npre\t"));
/// # Ok(())
/// # }
/// ```
pub fn frame() -> Result<polars::prelude::DataFrame> {
    use polars::prelude::{Column, DataFrame};
    let p = all();
    let col = |name: &str, f: &dyn Fn(&Preset) -> String| {
        Column::new(name.into(), p.iter().map(|x| f(x)).collect::<Vec<_>>())
    };
    Ok(DataFrame::new_infer_height(vec![
        col("preset", &|x| x.name.to_string()),
        col("aliases", &|x| x.aliases.join(",")),
        col("equation", &|x| x.equation.to_string()),
        col("source", &|x| x.source.to_string()),
    ])?)
}
