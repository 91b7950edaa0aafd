//! Optimizers (SGD with momentum, Adam, AdamW) and global-norm gradient clipping, with
//! PyTorch 2.x's semantics and order of floating-point operations, so a float64 training run
//! can be compared with PyTorch's step by step.
//!
//! Every parameter is a matrix `p` with its gradient `g`; `t` counts updates (1 on the first).
//! The formulas are those of PyTorch's single-tensor (`foreach=False`, `fused=False`) paths,
//! the ones it takes for CPU tensors: `_single_tensor_sgd` in `torch/optim/sgd.py`,
//! `_single_tensor_adam` in `torch/optim/adam.py` and `_single_tensor_adamw` in
//! `torch/optim/adamw.py` (PyTorch 2.x). Each line of an optimizer's equations is one PyTorch
//! tensor operation, evaluated left to right as its ATen CPU kernel does.
//!
//! One file per optimizer, each with its name, its hyperparameters (declared once with
//! `hyperparameters!`, which derives the resolved struct, its defaults, its range checks, its
//! flags and their JSON), its per-parameter state and its step, and its equations in the module
//! documentation:
//!
//! - [`sgd`]: `torch.optim.SGD` with momentum (Sutskever et al. 2013 in PyTorch's form);
//! - [`adam`]: `torch.optim.Adam` (Kingma and Ba 2015, arXiv:1412.6980);
//! - [`adamw`]: `torch.optim.AdamW` (Loshchilov and Hutter 2019, arXiv:1711.05101), Adam's
//!   hyperparameters and update after a decoupled weight decay;
//! - [`clip`]: global-norm clipping (`torch.nn.utils.clip_grad_norm_`).
//!
//! This file holds the [`Algorithm`] trait the optimizers implement, the registry
//! ([`OptimizerKind`], [`OptimizerFlags`], made by one `optimizers!` invocation: the only list
//! of optimizers) and the [`Optimizer`] that drives a registered optimizer's state over a run.
//!
//! **Where it may differ from PyTorch in the last bit.** ATen's vectorized CPU kernels fuse
//! some multiply-adds: `lerp_` computes `fmadd(w, g - m, m)` and `add_(x, alpha)` computes
//! `fmadd(x, alpha, p)` (`at::vec::fmadd`, one rounding on AVX2/AVX-512 builds), and a C++
//! compiler may contract others. Here every operation is rounded separately, so a coordinate
//! can differ by an ulp per operation and step: relative drift of order 1e-15 per step, far
//! below a 1e-9 comparison over tens of steps. PyTorch's `beta ** step` and
//! `bias_correction2 ** 0.5` call the C library's `pow`; here `beta.powf(t)` calls the same
//! `pow`, and `sqrt` (correctly rounded) stands for `pow(x, 0.5)` (glibc's `pow` is within
//! 0.52 ulp, almost always the same double).
//!
//! **Float type.** [`Optimizer`] is generic over the parameters' float type `T` ([`Real`], f64
//! by default). Its state (momentum buffers, Adam's `m` and `v`) is kept in `T` and every
//! per-entry operation runs in `T`, the hyperparameters and Python-float scalars
//! (`step_size`, `sqrt(bc2)`, `eps`, `1 - beta`) rounded once to `T`: what PyTorch does for
//! float32 parameters. The clipping norm is accumulated in f64 in both types.

use std::fmt::Debug;

use nalgebra::DMatrix;
use normscope_numeric::gemm::Real;
use serde_json::{Map, Value};

use crate::{Error, Result};

/// Declares an optimizer's hyperparameters once. From one entry per hyperparameter (its doc,
/// its field, its default, its flag, its range check and its help line) it makes:
///
/// - the resolved struct `$Name` (an `f64` field per hyperparameter, after an optional `base`
///   field holding another optimizer's hyperparameters, whose flags it shares), with
///   `Default` (PyTorch's defaults);
/// - the flags struct `$Flags` (an `Option<f64>` per hyperparameter of its own, `None` when not
///   given): with the `cli` feature, `clap::Args` with the help line and the flag's name (the
///   field `$flag`, `--adam-eps` for `adam_eps`; a compile-time check ties it to `$long`, the
///   name errors give);
/// - [`Hyperparameters`]: the flags it accepts, the flags given, the resolution (a flag given
///   replaces the default), the range checks (the error names the flag) and the JSON fields
///   (the field's name as key).
macro_rules! hyperparameters {
    (
        $(#[$sdoc:meta])*
        pub struct $Name:ident $({ $(#[$bdoc:meta])* $base:ident: $Base:ty })?;
        $(#[$fdoc:meta])*
        pub struct $Flags:ident;
        $(
            $(#[$doc:meta])*
            $field:ident = $default:expr, flag $flag:ident $long:literal, check $check:path,
                help $help:tt;
        )*
    ) => {
        $(#[$sdoc])*
        #[derive(Clone, Copy, Debug, PartialEq)]
        pub struct $Name {
            $($(#[$bdoc])* pub $base: $Base,)?
            $($(#[$doc])* pub $field: f64,)*
        }

        impl Default for $Name {
            /// PyTorch's defaults.
            fn default() -> Self {
                $Name {
                    $($base: <$Base>::default(),)?
                    $($field: $default,)*
                }
            }
        }

        $(#[$fdoc])*
        #[derive(Clone, Copy, Debug, Default, PartialEq)]
        #[cfg_attr(feature = "cli", derive(clap::Args))]
        pub struct $Flags {
            $(
                #[doc = $help]
                #[cfg_attr(
                    feature = "cli",
                    arg(long, value_parser = $crate::input::literal_f64, allow_hyphen_values = true)
                )]
                pub $flag: Option<f64>,
            )*
        }

        $(const _: () = assert!(
            $crate::train::optim::names_flag($long, stringify!($flag)),
            "the flag's error name is not --<field with - for _>"
        );)*

        impl $crate::train::optim::Hyperparameters for $Name {
            type Flags = $Flags;

            fn flags() -> Vec<&'static str> {
                #[allow(unused_mut)]
                let mut flags: Vec<&'static str> = [$($long),*].to_vec();
                $(flags.splice(0..0, <$Base as $crate::train::optim::Hyperparameters>::flags());)?
                flags
            }

            fn given(own: &$Flags) -> Vec<&'static str> {
                let given: Vec<Option<&'static str>> = vec![$(own.$flag.map(|_| $long)),*];
                given.into_iter().flatten().collect()
            }

            #[allow(unused_variables)]
            fn resolve(all: &$crate::train::optim::OptimizerFlags) -> Self {
                let own = <Self as $crate::train::optim::Registered>::own(all);
                let default = Self::default();
                $Name {
                    $($base: <$Base as $crate::train::optim::Hyperparameters>::resolve(all),)?
                    $($field: own.$flag.unwrap_or(default.$field),)*
                }
            }

            fn check(&self) -> $crate::Result<()> {
                $($crate::train::optim::Hyperparameters::check(&self.$base)?;)?
                $($check($long, self.$field)?;)*
                Ok(())
            }

            #[allow(unused_variables)]
            fn settings(&self, out: &mut Vec<(&'static str, f64)>) {
                $($crate::train::optim::Hyperparameters::settings(&self.$base, out);)?
                $(out.push(($long, f64::from(self.$field)));)*
            }

            #[allow(unused_variables)]
            fn json(&self, map: &mut serde_json::Map<String, serde_json::Value>) {
                $($crate::train::optim::Hyperparameters::json(&self.$base, map);)?
                $(map.insert(stringify!($field).to_string(), serde_json::json!(self.$field));)*
            }
        }
    };
}

pub mod adam;
pub mod adamw;
pub mod clip;
pub mod sgd;

pub use adam::{Adam, AdamFlags, AdamState};
pub use adamw::{AdamW, AdamWFlags};
pub use clip::{CLIP_NORM_EPS, clip_global_norm, clip_global_norm_as};
pub use sgd::{Sgd, SgdFlags, SgdState};

/// The registry: one line per optimizer, `Variant(module::Type),` with its doc. It makes
/// [`OptimizerKind`] (a variant per optimizer), [`OptimizerFlags`] (every optimizer's own
/// flags, in this order: the order of `--help` and of the refusals), [`OptimizerKind::NAMES`]
/// and every dispatch over optimizers, so nothing else lists them.
macro_rules! optimizers {
    ($($(#[$doc:meta])* $Variant:ident($module:ident::$Type:ident),)*) => {
        /// An optimizer and its hyperparameters (all but the learning rate, which a
        /// [`super::schedule::Schedule`] supplies per step): one variant per registered
        /// optimizer.
        ///
        /// # Examples
        ///
        /// ```rust
        /// use normscope_core::train::optim::{Adam, OptimizerFlags, OptimizerKind, Sgd, SgdFlags};
        /// assert_eq!(OptimizerKind::NAMES, ["sgd", "adam", "adamw"]);
        /// let adam = OptimizerKind::parse("ADAM")?;
        /// assert_eq!((adam, adam.name()), (OptimizerKind::Adam(Adam::default()), "adam"));
        /// let flags = OptimizerFlags { sgd: SgdFlags { momentum: Some(0.9) }, ..Default::default() };
        /// let sgd = OptimizerKind::resolve("sgd", &flags)?;
        /// assert_eq!(sgd, OptimizerKind::Sgd(Sgd { momentum: 0.9 }));
        /// // Adam has no --momentum: the flag is refused, named.
        /// let e = OptimizerKind::resolve("adam", &flags).unwrap_err().to_string();
        /// assert!(e.contains("--momentum"), "{e}");
        /// # Ok::<(), normscope_core::Error>(())
        /// ```
        #[derive(Clone, Copy, Debug, PartialEq)]
        pub enum OptimizerKind {
            $($(#[$doc])* $Variant($module::$Type),)*
        }

        /// The hyperparameter flags of every optimizer (`--momentum`, `--beta1`, ...), each
        /// `None` unless given: the command line's (`clap::Args` with the `cli` feature,
        /// flattened into `normscope train`'s) and [`super::config::RawTrain`]'s. Each
        /// optimizer declares its own (AdamW adds `--weight-decay` to Adam's).
        ///
        /// # Examples
        ///
        /// One field per registered optimizer, named after its module; nothing given by
        /// default, so every optimizer resolves to PyTorch's defaults.
        ///
        /// ```rust
        /// use normscope_core::train::optim::{AdamW, OptimizerFlags, OptimizerKind};
        /// let none = OptimizerFlags::default();
        /// assert_eq!((none.sgd.momentum, none.adam.beta1, none.adamw.weight_decay), (None, None, None));
        /// let w = OptimizerKind::resolve("adamw", &none)?;
        /// assert_eq!(w, OptimizerKind::AdamW(AdamW::default()));
        /// # Ok::<(), normscope_core::Error>(())
        /// ```
        #[derive(Clone, Copy, Debug, Default, PartialEq)]
        #[cfg_attr(feature = "cli", derive(clap::Args))]
        pub struct OptimizerFlags {
            $(
                #[doc = concat!("The flags [`", stringify!($Type), "`] declares.")]
                #[cfg_attr(feature = "cli", command(flatten))]
                pub $module: <$module::$Type as Hyperparameters>::Flags,
            )*
        }

        $(impl Registered for $module::$Type {
            fn own(all: &OptimizerFlags) -> &Self::Flags {
                &all.$module
            }
        })*

        impl OptimizerKind {
            /// The valid names, in the registry's order.
            pub const NAMES: &'static [&'static str] = &[$(<$module::$Type as Algorithm>::NAME),*];

            /// The name [`OptimizerKind::parse`] accepts ([`Algorithm::NAME`]).
            pub fn name(&self) -> &'static str {
                match self {
                    $(OptimizerKind::$Variant(_) => <$module::$Type as Algorithm>::NAME,)*
                }
            }

            /// Parses a name, ignoring ASCII case, with PyTorch's defaults (each optimizer's
            /// `Default`). An unknown name is an [`Error::Unknown`] listing
            /// [`OptimizerKind::NAMES`].
            pub fn parse(name: &str) -> Result<Self> {
                let lower = name.to_ascii_lowercase();
                $(if lower == <$module::$Type as Algorithm>::NAME {
                    return Ok(OptimizerKind::$Variant(<$module::$Type>::default()));
                })*
                Err(Error::Unknown {
                    kind: "optimizer",
                    name: name.to_string(),
                    valid: Self::NAMES.join(", "),
                })
            }

            /// The optimizer `name` ([`OptimizerKind::parse`]) with the hyperparameters of
            /// `flags` that are given (the others at their defaults), checked
            /// ([`OptimizerKind::check`]); a flag given to an optimizer that does not have it
            /// is refused, naming the flag (the first in [`OptimizerFlags`]'s order).
            pub fn resolve(name: &str, flags: &OptimizerFlags) -> Result<Self> {
                let kind = match Self::parse(name)? {
                    $(OptimizerKind::$Variant(_) => {
                        OptimizerKind::$Variant(<$module::$Type as Hyperparameters>::resolve(flags))
                    })*
                };
                kind.check()?;
                let accepted = kind.flags();
                let given = [$(<$module::$Type as Hyperparameters>::given(&flags.$module)),*];
                if let Some(flag) = given.iter().flatten().find(|f| !accepted.contains(f)) {
                    return Err(Error::invalid(
                        flag,
                        "set",
                        format!(
                            "only with an optimizer that has it (--optimizer {} does not)",
                            kind.name()
                        ),
                    ));
                }
                Ok(kind)
            }

            /// Checks the hyperparameters' ranges ([`Hyperparameters::check`]; NaN fails every
            /// check): the error names the flag (`--momentum`, `--beta1`, `--beta2`,
            /// `--adam-eps`, not `--eps`, the norms' epsilon, or `--weight-decay`).
            pub fn check(&self) -> Result<()> {
                match self {
                    $(OptimizerKind::$Variant(h) => Hyperparameters::check(h),)*
                }
            }

            /// Its hyperparameters with their flags ([`Hyperparameters::settings`]), e.g.
            /// `[("--beta1", 0.9), ("--beta2", 0.999), ("--adam-eps", 1e-8)]` for Adam.
            pub fn settings(&self) -> Vec<(&'static str, f64)> {
                let mut out = Vec::new();
                match self {
                    $(OptimizerKind::$Variant(h) => Hyperparameters::settings(h, &mut out),)*
                }
                out
            }

            /// Every optimizer's flags, each once, in the registry's order (the training
            /// log's hyperparameter columns).
            pub fn all_flags() -> Vec<&'static str> {
                let mut all: Vec<&'static str> = Vec::new();
                $(for f in <$module::$Type as Hyperparameters>::flags() {
                    if !all.contains(&f) {
                        all.push(f);
                    }
                })*
                all
            }

            /// The flags this optimizer accepts ([`Hyperparameters::flags`]).
            pub fn flags(&self) -> Vec<&'static str> {
                match self {
                    $(OptimizerKind::$Variant(_) => {
                        <$module::$Type as Hyperparameters>::flags()
                    })*
                }
            }

            /// The eps added to the update's denominator ([`Algorithm::denominator_eps`]):
            /// Adam's and AdamW's, `None` for SGD.
            pub fn denominator_eps(&self) -> Option<f64> {
                match self {
                    $(OptimizerKind::$Variant(h) => h.denominator_eps(),)*
                }
            }

            /// The JSON of the model dump: `{"name", <each hyperparameter by field name>}`,
            /// e.g. `{"name": "adam", "beta1", "beta2", "eps"}`.
            pub fn json(&self) -> Value {
                let mut map = Map::new();
                map.insert("name".to_string(), Value::from(self.name()));
                match self {
                    $(OptimizerKind::$Variant(h) => Hyperparameters::json(h, &mut map),)*
                }
                Value::Object(map)
            }
        }

        /// A registered optimizer's hyperparameters with its state in float type `T`.
        #[derive(Clone, Debug)]
        enum Running<T: Real> {
            $($Variant($module::$Type, <$module::$Type as Algorithm>::State<T>),)*
        }

        impl<T: Real> Running<T> {
            fn new(kind: OptimizerKind, shapes: &[(usize, usize)]) -> Self {
                match kind {
                    $(OptimizerKind::$Variant(h) => Running::$Variant(h, h.state(shapes)),)*
                }
            }

            fn kind(&self) -> OptimizerKind {
                match self {
                    $(Running::$Variant(h, _) => OptimizerKind::$Variant(*h),)*
                }
            }

            fn step(
                &mut self,
                params: &mut [&mut DMatrix<T>],
                grads: &[DMatrix<T>],
                decay: &[bool],
                lr: f64,
                t: u64,
            ) {
                match self {
                    $(Running::$Variant(h, s) => h.step(s, params, grads, decay, lr, t),)*
                }
            }

            fn second_moment(&self, i: usize) -> Option<(&DMatrix<T>, f64)> {
                match self {
                    $(Running::$Variant(h, s) => {
                        <$module::$Type as Algorithm>::second_moment(s, i)
                            .zip(h.second_moment_decay())
                    })*
                }
            }
        }
    };
}

optimizers! {
    /// `torch.optim.SGD(lr, momentum, dampening=0, nesterov=False, weight_decay=0)`.
    Sgd(sgd::Sgd),
    /// `torch.optim.Adam(lr, betas=(beta1, beta2), eps, weight_decay=0, amsgrad=False)`.
    Adam(adam::Adam),
    /// `torch.optim.AdamW(lr, betas=(beta1, beta2), eps, weight_decay)`: decoupled decay
    /// `p <- p (1 - lr wd)` before the Adam update.
    AdamW(adamw::AdamW),
}

/// An optimizer's hyperparameters, declared once with `hyperparameters!` (which implements
/// this trait): what the configuration and the command line need of them.
///
/// # Examples
///
/// AdamW's: Adam's flags then its own; `--beta2 0.95` resolved over the defaults, and the
/// JSON the model dump records (keys sorted).
///
/// ```rust
/// use normscope_core::train::optim::{Adam, AdamW, Hyperparameters, OptimizerFlags};
///
/// assert_eq!(AdamW::flags(), ["--beta1", "--beta2", "--adam-eps", "--weight-decay"]);
/// let mut flags = OptimizerFlags::default();
/// flags.adam.beta2 = Some(0.95);
/// assert_eq!(Adam::given(&flags.adam), ["--beta2"]);
/// let adamw = AdamW::resolve(&flags);
/// adamw.check()?;
/// let mut json = serde_json::Map::new();
/// adamw.json(&mut json);
/// assert_eq!(
///     serde_json::Value::Object(json).to_string(),
///     r#"{"beta1":0.9,"beta2":0.95,"eps":1e-8,"weight_decay":0.01}"#
/// );
/// # Ok::<(), normscope_core::Error>(())
/// ```
pub trait Hyperparameters: Copy + Debug + Default + PartialEq {
    /// The flags of the hyperparameters this optimizer declares itself (not those of its
    /// `base`): one `Option<f64>` each, a field of [`OptimizerFlags`].
    type Flags: Copy + Debug + Default + PartialEq;

    /// Every flag this optimizer accepts (`--beta1`, ...), its base's first.
    fn flags() -> Vec<&'static str>;

    /// The flags of `own` that are given (`Some`), in declaration order.
    fn given(own: &Self::Flags) -> Vec<&'static str>;

    /// The hyperparameters: each flag of `all` this optimizer accepts replaces its default.
    fn resolve(all: &OptimizerFlags) -> Self;

    /// Checks every hyperparameter's range, its base's first: the error names the flag.
    fn check(&self) -> Result<()>;

    /// Appends each hyperparameter with its flag (`("--beta1", 0.9)`), its base's first, in
    /// [`Hyperparameters::flags`]' order.
    fn settings(&self, out: &mut Vec<(&'static str, f64)>);

    /// Adds each hyperparameter to `map` under its field's name.
    fn json(&self, map: &mut Map<String, Value>);
}

/// Where an optimizer's own flags are in [`OptimizerFlags`] (implemented by the registry).
pub(crate) trait Registered: Hyperparameters {
    /// This optimizer's field of `all`.
    fn own(all: &OptimizerFlags) -> &Self::Flags;
}

/// An optimizer: its name, its per-parameter state and its update, on top of its
/// [`Hyperparameters`] (the implementing struct). One file per optimizer implements it; a
/// line in the registry (`optimizers!` in this file) makes it selectable.
///
/// # Examples
///
/// One step of any optimizer on a 1x1 parameter, through the trait alone:
///
/// ```rust
/// use nalgebra::DMatrix;
/// use normscope_core::train::optim::{Adam, Algorithm, Sgd};
///
/// fn one_step<A: Algorithm>(a: A, p: f64, g: f64, lr: f64) -> f64 {
///     let mut state = a.state::<f64>(&[(1, 1)]);
///     let mut p = DMatrix::from_element(1, 1, p);
///     a.step(&mut state, &mut [&mut p], &[DMatrix::from_element(1, 1, g)], &[true], lr, 1);
///     p[0]
/// }
/// assert_eq!(one_step(Sgd::default(), 1.0, 0.5, 0.25), 0.875); // p - lr g
/// assert_eq!(one_step(Adam::default(), 1.0, 0.0, 0.25), 1.0); // m = 0: no move
/// assert_eq!((Sgd::NAME, Adam::NAME), ("sgd", "adam"));
/// assert_eq!(Sgd::default().denominator_eps(), None);
/// assert_eq!(Adam::default().second_moment_decay(), Some(0.999));
/// ```
pub trait Algorithm: Hyperparameters {
    /// The name `--optimizer` accepts (lower case).
    const NAME: &'static str;

    /// The per-parameter state in float type `T` (momentum buffers, Adam's moments).
    type State<T: Real>: Clone + Debug;

    /// The state before the first step, for parameters of the given `(rows, cols)` shapes.
    fn state<T: Real>(&self, shapes: &[(usize, usize)]) -> Self::State<T>;

    /// One update of every parameter at learning rate `lr` and step `t` (1 on the first),
    /// with PyTorch's semantics (the optimizer's module documentation). `decay[i]` says
    /// whether a decoupled weight decay applies to parameter `i`. The shapes are those of
    /// [`Algorithm::state`] (the caller checks them).
    fn step<T: Real>(
        &self,
        state: &mut Self::State<T>,
        params: &mut [&mut DMatrix<T>],
        grads: &[DMatrix<T>],
        decay: &[bool],
        lr: f64,
        t: u64,
    );

    /// The second-moment estimate `v` of parameter `i` in `state`, not bias-corrected (Adam's
    /// `exp_avg_sq`), if the optimizer keeps one.
    fn second_moment<T: Real>(state: &Self::State<T>, i: usize) -> Option<&DMatrix<T>>;

    /// The decay `beta2` of the second moment (its bias correction is `1 - beta2^t`), if the
    /// optimizer keeps one.
    fn second_moment_decay(&self) -> Option<f64>;

    /// The eps added to the update's denominator (`sqrt(v_hat) + eps`), if the update has one.
    fn denominator_eps(&self) -> Option<f64>;
}

/// Whether `long` is `--` then `field` with `-` for `_` (`--adam-eps` for `adam_eps`): the
/// flag clap derives from a flags field, which `hyperparameters!` checks at compile time.
pub const fn names_flag(long: &str, field: &str) -> bool {
    let (long, field) = (long.as_bytes(), field.as_bytes());
    if long.len() != field.len() + 2 || long[0] != b'-' || long[1] != b'-' {
        return false;
    }
    let mut i = 0;
    while i < field.len() {
        let want = if field[i] == b'_' { b'-' } else { field[i] };
        if long[i + 2] != want {
            return false;
        }
        i += 1;
    }
    true
}

/// Refuses `x` outside `[0, 1)` (momentum, betas), naming `flag`.
pub(crate) fn unit_interval(flag: &'static str, x: f64) -> Result<()> {
    if (0.0..1.0).contains(&x) {
        Ok(())
    } else {
        Err(Error::invalid(flag, x, "a number in [0, 1)"))
    }
}

/// Refuses `x` unless finite and `> 0` (eps), naming `flag`.
pub(crate) fn finite_positive(flag: &'static str, x: f64) -> Result<()> {
    if x.is_finite() && x > 0.0 {
        Ok(())
    } else {
        Err(Error::invalid(flag, x, "a finite number > 0"))
    }
}

/// Refuses `x` unless finite and `>= 0` (weight decay), naming `flag`.
pub(crate) fn finite_nonnegative(flag: &'static str, x: f64) -> Result<()> {
    if x.is_finite() && x >= 0.0 {
        Ok(())
    } else {
        Err(Error::invalid(flag, x, "a finite number >= 0"))
    }
}

/// An optimizer over a fixed list of matrix parameters, with its per-parameter state
/// (momentum buffers, or Adam's `m` and `v`) and its step count. The update equations and
/// their PyTorch sources are in each optimizer's module documentation ([`sgd`], [`adam`],
/// [`adamw`]).
///
/// # Examples
///
/// Plain SGD over two updates, `p - 2 lr g` (every product exact):
///
/// ```rust
/// use nalgebra::DMatrix;
/// use normscope_core::train::optim::{Optimizer, OptimizerKind};
///
/// let sgd = OptimizerKind::parse("sgd")?;
/// let mut opt = Optimizer::new(sgd, &[(1, 2)], &[true]);
/// let mut p = DMatrix::from_row_slice(1, 2, &[1.0, -1.0]);
/// let g = DMatrix::from_row_slice(1, 2, &[0.5, -0.25]);
/// opt.step(&mut [&mut p], std::slice::from_ref(&g), 0.5);
/// opt.step(&mut [&mut p], std::slice::from_ref(&g), 0.5);
/// assert_eq!(p.as_slice(), [0.5, -0.75]);
/// assert_eq!((opt.steps(), opt.kind()), (2, sgd));
/// assert!(opt.second_moment(0).is_none()); // SGD keeps no second moment
/// # Ok::<(), normscope_core::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Optimizer<T: Real = f64> {
    running: Running<T>,
    shapes: Vec<(usize, usize)>,
    decay: Vec<bool>,
    steps: u64,
}

impl Optimizer {
    /// An optimizer for parameters of the given shapes, state zero and step count 0.
    /// `shapes[i]` is parameter `i`'s `(rows, cols)`; `decay[i]` says whether AdamW's decoupled
    /// weight decay applies to parameter `i` (the model passes true for weight matrices, false
    /// for norm gains, biases and scalars; SGD and Adam ignore it). The hyperparameters are
    /// expected to have passed [`OptimizerKind::check`].
    ///
    /// # Panics
    ///
    /// If `shapes` and `decay` differ in length.
    ///
    /// In f64; [`Optimizer::new_as`] for another float type.
    pub fn new(kind: OptimizerKind, shapes: &[(usize, usize)], decay: &[bool]) -> Self {
        Self::new_as(kind, shapes, decay)
    }
}

impl<T: Real> Optimizer<T> {
    /// [`Optimizer::new`] for parameters of float type `T` (state in `T`).
    pub fn new_as(kind: OptimizerKind, shapes: &[(usize, usize)], decay: &[bool]) -> Self {
        assert_eq!(
            shapes.len(),
            decay.len(),
            "one decay flag per parameter shape"
        );
        Optimizer {
            running: Running::new(kind, shapes),
            shapes: shapes.to_vec(),
            decay: decay.to_vec(),
            steps: 0,
        }
    }

    /// One update of every parameter at learning rate `lr`, with PyTorch's semantics (the
    /// equations are in each optimizer's module documentation). The step count is incremented
    /// first, so Adam's bias corrections use `t = 1` on the first step and SGD's momentum buffer
    /// starts as the first gradient.
    ///
    /// # Panics
    ///
    /// If `params` or `grads` do not have one matrix of the constructor's shape per parameter.
    pub fn step(&mut self, params: &mut [&mut DMatrix<T>], grads: &[DMatrix<T>], lr: f64) {
        assert_eq!(params.len(), self.shapes.len(), "one matrix per parameter");
        assert_eq!(grads.len(), self.shapes.len(), "one gradient per parameter");
        for (i, &shape) in self.shapes.iter().enumerate() {
            assert_eq!(params[i].shape(), shape, "parameter {i}'s shape");
            assert_eq!(grads[i].shape(), shape, "gradient {i}'s shape");
        }
        self.steps += 1;
        self.running
            .step(params, grads, &self.decay, lr, self.steps);
    }

    /// The number of updates made so far.
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// Adam's (or AdamW's) second-moment estimate `v` of parameter `i`, not bias-corrected
    /// (`exp_avg_sq` in PyTorch's state); `None` for SGD. Zero before the first step.
    ///
    /// # Panics
    ///
    /// If `i` is not a parameter index.
    pub fn second_moment(&self, i: usize) -> Option<&DMatrix<T>> {
        self.running.second_moment(i).map(|(v, _)| v)
    }

    /// The optimizer and its hyperparameters.
    pub fn kind(&self) -> OptimizerKind {
        self.running.kind()
    }
}

/// What the optimizers' unit tests share.
#[cfg(test)]
pub(crate) mod test_support {
    use super::OptimizerKind;

    /// Adam with PyTorch's defaults.
    pub(crate) fn adam() -> OptimizerKind {
        OptimizerKind::parse("adam").unwrap()
    }

    /// `a` within `tol` of `b`, relative to `|b|` (absolute below 1).
    pub(crate) fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol * b.abs().max(1.0)
    }
}

/// The intervention test of claim 7: one block's gradient rescaled (docs/training.md).
#[cfg(test)]
mod gradient_scale;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_ignoring_case_with_pytorch_defaults() {
        for kind in ["sgd", "adam", "adamw"] {
            assert_eq!(OptimizerKind::parse(kind).unwrap().name(), kind);
            assert!(OptimizerKind::NAMES.contains(&kind));
        }
        assert_eq!(OptimizerKind::NAMES.join(", "), "sgd, adam, adamw");
        assert_eq!(
            OptimizerKind::parse("AdamW").unwrap(),
            OptimizerKind::AdamW(AdamW {
                adam: Adam {
                    beta1: 0.9,
                    beta2: 0.999,
                    eps: 1e-8,
                },
                weight_decay: 0.01
            })
        );
        assert_eq!(
            OptimizerKind::parse("SGD").unwrap(),
            OptimizerKind::Sgd(Sgd { momentum: 0.0 })
        );
        assert_eq!(
            OptimizerKind::parse("ADAM").unwrap(),
            OptimizerKind::Adam(Adam::default())
        );
        let err = OptimizerKind::parse("adamax").unwrap_err();
        assert!(matches!(
            err,
            Error::Unknown {
                kind: "optimizer",
                ..
            }
        ));
        let message = err.to_string();
        assert!(message.contains("adamax") && message.contains("sgd, adam, adamw"));
    }

    #[test]
    fn check_names_the_flag_out_of_range() {
        for kind in OptimizerKind::NAMES {
            OptimizerKind::parse(kind).unwrap().check().unwrap();
        }
        let flag = |kind: OptimizerKind| match kind.check() {
            Err(Error::InvalidParam { field, .. }) => field,
            other => panic!("{kind:?} gave {other:?}"),
        };
        let sgd = |momentum| OptimizerKind::Sgd(Sgd { momentum });
        assert_eq!(flag(sgd(1.0)), "--momentum");
        assert_eq!(flag(sgd(-0.1)), "--momentum");
        let adam = |beta1, beta2, eps| Adam { beta1, beta2, eps };
        let kind = |a| OptimizerKind::Adam(a);
        assert_eq!(flag(kind(adam(f64::NAN, 0.999, 1e-8))), "--beta1");
        assert_eq!(flag(kind(adam(0.9, 1.0, 1e-8))), "--beta2");
        assert_eq!(flag(kind(adam(0.9, 0.999, 0.0))), "--adam-eps");
        assert_eq!(flag(kind(adam(0.9, 0.999, f64::INFINITY))), "--adam-eps");
        let adamw = |weight_decay| {
            OptimizerKind::AdamW(AdamW {
                adam: Adam::default(),
                weight_decay,
            })
        };
        assert_eq!(flag(adamw(-0.01)), "--weight-decay");
        assert_eq!(flag(adamw(f64::NAN)), "--weight-decay");
        // AdamW checks Adam's hyperparameters first.
        let bad_adam = OptimizerKind::AdamW(AdamW {
            adam: adam(0.9, 0.999, 0.0),
            weight_decay: -1.0,
        });
        assert_eq!(flag(bad_adam), "--adam-eps");
        adamw(0.0).check().unwrap();
        sgd(0.0).check().unwrap();
    }

    #[test]
    fn flags_resolve_and_foreign_flags_are_refused_by_name() {
        let mut flags = OptimizerFlags::default();
        assert_eq!(
            OptimizerKind::resolve("adamw", &flags).unwrap(),
            OptimizerKind::parse("adamw").unwrap()
        );
        flags.adam.beta1 = Some(0.5);
        flags.adamw.weight_decay = Some(0.0);
        assert_eq!(
            OptimizerKind::resolve("AdamW", &flags).unwrap(),
            OptimizerKind::AdamW(AdamW {
                adam: Adam {
                    beta1: 0.5,
                    ..Adam::default()
                },
                weight_decay: 0.0
            })
        );
        let refused = |name: &str, flags: &OptimizerFlags| match OptimizerKind::resolve(name, flags)
        {
            Err(Error::InvalidParam { field, .. }) => field,
            other => panic!("{name} gave {other:?}"),
        };
        assert_eq!(refused("adam", &flags), "--weight-decay");
        assert_eq!(refused("sgd", &flags), "--beta1");
        flags.sgd.momentum = Some(0.9);
        // The first refused flag in the registry's order.
        assert_eq!(refused("adam", &flags), "--momentum");
        assert_eq!(refused("adamw", &flags), "--momentum");
        // Ranges are checked before refusals, as the flags apply.
        flags.sgd.momentum = Some(2.0);
        assert_eq!(refused("sgd", &flags), "--momentum");
        let message = OptimizerKind::resolve("adam", &flags)
            .unwrap_err()
            .to_string();
        assert!(message.contains("--optimizer adam does not"), "{message}");
        // Every declared flag is accepted by some optimizer, once.
        let mut all: Vec<&str> = OptimizerKind::NAMES
            .iter()
            .flat_map(|n| OptimizerKind::parse(n).unwrap().flags())
            .collect();
        all.sort_unstable();
        assert_eq!(
            all,
            [
                "--adam-eps",
                "--adam-eps",
                "--beta1",
                "--beta1",
                "--beta2",
                "--beta2",
                "--momentum",
                "--weight-decay"
            ]
        );
    }

    #[test]
    fn json_names_the_optimizer_and_its_hyperparameters() {
        let json = |name: &str| OptimizerKind::parse(name).unwrap().json().to_string();
        assert_eq!(json("sgd"), r#"{"momentum":0.0,"name":"sgd"}"#);
        assert_eq!(
            json("adam"),
            r#"{"beta1":0.9,"beta2":0.999,"eps":1e-8,"name":"adam"}"#
        );
        assert_eq!(
            json("adamw"),
            r#"{"beta1":0.9,"beta2":0.999,"eps":1e-8,"name":"adamw","weight_decay":0.01}"#
        );
    }

    #[test]
    fn denominator_eps_is_adams() {
        let eps = |name: &str| OptimizerKind::parse(name).unwrap().denominator_eps();
        assert_eq!(eps("sgd"), None);
        assert_eq!(eps("adam"), Some(1e-8));
        assert_eq!(eps("adamw"), Some(1e-8));
    }

    #[test]
    fn flag_names_follow_fields() {
        assert!(names_flag("--adam-eps", "adam_eps"));
        assert!(names_flag("--beta1", "beta1"));
        assert!(!names_flag("--adam_eps", "adam_eps"));
        assert!(!names_flag("-beta1", "beta1"));
        assert!(!names_flag("--beta", "beta1"));
    }
}
