//! The closed-form (infinite-width, mean-field) engine, docs/theory.md, "The mean-field closed form".
//!
//! At init, fresh independent zero-mean weights make every cross term vanish in expectation,
//! and a LayerNorm acts as the scalar `1/sqrt(q)` of its input's second moment q (its centering
//! and the removal of the radial direction are O(1/d)); the other norms' maps replace it
//! (`theory::norm_map`: DyT's Gaussian integrals, and InstanceNorm's and BatchNorm's map over
//! n columns, whose Jacobian removes the columns' mean, carried by `Column`). Per block l, with
//! `q = q_{l-1}`:
//!
//! ```text
//! q_u   = q (N_in = id) | 1 (N_in = Norm) | 1/l (LayerNorm Scaling)      branch input
//! m_l   = E||F_l(u)||^2/d, kappa_l                                         from the pair kernel
//! q_br  = m_l (N_br = id) | 1 (N_br = Norm)
//! s_l   = alpha_l^2 q + lambda_l^2 q_br                                    second moment of the sum
//! c_l   = (alpha_l^2 q c_{l-1} + lambda_l^2 q_br kappa_l) / s_l            token correlation
//! q_l   = s_l (N_out = id) | 1 (N_out = Norm)
//! C_{l,j} = n_l alpha_l C_{l-1,j} (j < l),  C_{l,l} = n_l lambda_l / sqrt(m_l)^[N_br = Norm]
//!       with n_l = 1/sqrt(s_l) if N_out = Norm, else 1
//! a_l^2 = n_l^2 alpha_l^2                                                  skip path gain
//! b_l^2 = n_l^2 lambda_l^2 (1/m_l)^[N_br] g_b(q_u) (1/(q l^[LNS]))^[N_in]   branch path gain
//! r_L   = 1/q_L (final Norm) | 1,   r_{l-1} = (a_l^2 + b_l^2) r_l           grad_sq
//! ```
//!
//! The last line holds for per-token branches. Gradients and tangents are carried as a split
//! energy ([`super::split::Energy`]: token mean and fluctuation), because uniform attention
//! passes only the mean part: `r_{l-1} = a_l^2 r_l + (b_mean^2 r_l.mean, b_fluct^2 r_l.fluct)`,
//! starting from `(1/n, 1 - 1/n)` for an isotropic output gradient. The same split drives the
//! path-length law ([`super::paths::SplitPaths`]) and `output_change`.
//!
//! Every product over depth is a sum of logs; `C_{l,j}` comes from double-double prefix sums.

use super::layered::{Keep, Layered};
use super::logsum::{Mag, PrefixSum, ln0};
use super::norm_map::slot_map;
use super::split::Energy;
use crate::branch::{BranchKind, BranchModel};
use crate::spec::{InputScale, NormMap, SkipScale, StackSpec};
use crate::{Error, Result};
use std::ops::{Add, Div, Mul};

/// Input law: per-coordinate second moment q0 and pairwise token correlation c0.
///
/// # Examples
///
/// ```rust
/// use normscope_core::model::RawModel;
/// use normscope_core::theory::Inputs;
/// assert_eq!(Inputs::default(), Inputs { q0: 1.0, c0: 0.0 });
/// let model = RawModel { q0: 2.0, c0: 0.5, ..RawModel::default() }.check()?;
/// assert_eq!(model.inputs, Inputs { q0: 2.0, c0: 0.5 });
/// # Ok::<(), normscope_core::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Inputs {
    /// `q0 = E||x_0||^2 / d > 0`.
    pub q0: f64,
    /// Correlation of two tokens (or two inputs), in [-1, 1].
    pub c0: f64,
}

impl Default for Inputs {
    fn default() -> Self {
        Inputs { q0: 1.0, c0: 0.0 }
    }
}

/// The branch evaluated at one input.
struct BranchAt {
    out: Mag,
    kappa: f64,
    backward_gain: f64,
    split: (f64, f64),
    last_input: Mag,
    perturbation: Mag,
}

fn branch_at(model: &BranchModel, q: Mag, c: f64, layer: usize) -> Result<BranchAt> {
    if model.scale_free() {
        let (out, kappa) = model.forward(1.0, c);
        Ok(BranchAt {
            out: Mag::new(out).mul(q),
            kappa,
            backward_gain: model.backward_gain(1.0),
            split: model.jacobian_split(1.0),
            last_input: Mag::new(model.last_input_sq(1.0, c)).mul(q),
            perturbation: Mag::new(model.perturbation_sq(1.0, c)).mul(q),
        })
    } else {
        let qv = q.value();
        if !qv.is_finite() {
            let size = if q.ln().is_finite() {
                format!("e^{:.1}", q.ln())
            } else {
                "beyond f64".to_string()
            };
            return Err(Error::Overflow(format!(
                "the branch input's second moment at block {layer} is {size}; the {} branch is not scale-free, so its moments need it as a number (lower --depth, --gain or --q0, or use a norm)",
                model.kind.name()
            )));
        }
        let (out, kappa) = model.forward(qv, c);
        let at = BranchAt {
            out: Mag::new(out),
            kappa,
            backward_gain: model.backward_gain(qv),
            split: model.jacobian_split(qv),
            last_input: Mag::new(model.last_input_sq(qv, c)),
            perturbation: Mag::new(model.perturbation_sq(qv, c)),
        };
        let numbers = [
            out,
            kappa,
            at.backward_gain,
            at.split.0,
            at.split.1,
            at.last_input.value(),
            at.perturbation.value(),
        ];
        if numbers.iter().any(|x| !x.is_finite()) {
            return Err(Error::Overflow(format!(
                "the {} branch's moments at block {layer} (input second moment {qv:e}) are beyond f64 (lower --depth, --gain or --q0, or use a norm)",
                model.kind.name()
            )));
        }
        Ok(at)
    }
}

/// One block's Jacobian on a split energy: `a^2 e + (b_mean^2 e.mean, b_fluct^2 e.fluct)`,
/// with the gains as magnitudes (beyond f64's range too).
fn jacobian_step(a2: Mag, split: (Mag, Mag), e: Energy) -> Energy {
    e.scale(a2) + e.transfer(split)
}

/// Below this share of `K(a,a) + K(b,b)`, the merge error's numerator
/// `K(a,a) + K(b,b) - 2 K(a,b)` has lost more than 20 of its 53 bits to cancellation: the
/// linear branch then takes the difference route ([`Ctx::merge_linear`]).
const MERGE_CANCELLATION: f64 = 1.0 / (1u64 << 20) as f64;

/// `(a_l^2, b_mean^2, b_fluct^2)` divided by one power of two, the binary exponent of the
/// largest: every ratio is kept bit for bit (the path law and its mean depend only on ratios,
/// docs/theory.md, "The metrics"), and no gain beyond f64's range (a^2 = 1/(1 + g) at g = 1.7e308)
/// rounds to 0 or a subnormal on its own. Also whether a nonzero branch gain is below
/// f64's normal range relative to the largest (its share of the paths is lost).
fn path_gains(a2: Mag, split: (Mag, Mag)) -> ((f64, f64, f64), bool) {
    let top = [a2, split.0, split.1]
        .iter()
        .filter(|m| m.ln() > f64::NEG_INFINITY)
        .map(|m| m.exponent())
        .max()
        .unwrap_or(0);
    let scaled = (
        a2.over_pow2(top),
        split.0.over_pow2(top),
        split.1.over_pow2(top),
    );
    let lost = |m: Mag, v: f64| m.ln() > f64::NEG_INFINITY && v < f64::MIN_POSITIVE;
    let tiny = lost(split.0, scaled.1) || lost(split.1, scaled.2);
    (scaled, tiny)
}

/// What the forward recursion carries from block to block.
#[derive(Clone, Copy, Debug)]
struct State {
    /// `q_l`.
    q: Mag,
    /// `c_l`.
    corr: f64,
    /// Admin's `omega^2` for the next block.
    admin_omega_sq: Mag,
    /// The output change's split energy `O_l` (before the final norm).
    o: Energy,
}

/// Everything block l contributes, computed from the state after block l-1.
#[derive(Clone, Copy, Debug)]
struct Local {
    q: Mag,
    corr: f64,
    m: Mag,
    ln_coef_new: f64,
    skip_prefix: f64,
    a2: Mag,
    branch_gain: Mag,
    split: (Mag, Mag),
    /// The branch part of the sum `lambda^2 q_br`, the sum `s_l`, and `n_l^2`.
    br_part: Mag,
    s: Mag,
    n_sq: Mag,
    to_stream: Mag,
    last_in: Mag,
    rel_update: f64,
    cos_prev: f64,
    output_change: Mag,
    /// The block's Jacobian on a gradient's split under a column norm, which the scalar gains
    /// above do not carry.
    column: Option<Column>,
}

/// One block's Jacobian on a split energy under InstanceNorm or BatchNorm
/// ([`super::norm_map`]): `N_out` and `N_in` remove the columns' mean and scale the
/// fluctuation; the per-token branch carries the cross-column moment by `rho`
/// ([`Energy::per_token`]), which moves energy between the mean and the fluctuation.
#[derive(Clone, Copy, Debug)]
struct Column {
    /// Whether `N_out`'s map removes the columns' mean ([`super::norm_map::SlotMap`]).
    out_kills: bool,
    /// `N_out`'s gain on the fluctuation (1 without it).
    n_sq: Mag,
    /// `alpha_l^2`.
    skip: Mag,
    /// `lambda_l^2` times `N_br`'s gain and the branch's `g_b`.
    branch: Mag,
    /// The branch's cross-token share at its input correlation.
    rho: f64,
    /// Whether `N_in`'s map removes the columns' mean.
    in_kills: bool,
    /// `N_in`'s gain on the fluctuation (with the input scale).
    in_jac: Mag,
    /// Columns n.
    n: f64,
}

impl Column {
    /// `J_l^T e` for the gradient's split e at x_l.
    fn apply(&self, e: Energy) -> Energy {
        let e = if self.out_kills { e.fluctuation() } else { e }.scale(self.n_sq);
        let b = e.scale(self.branch).per_token(self.rho, self.n);
        let b = if self.in_kills { b.fluctuation() } else { b }.scale(self.in_jac);
        e.scale(self.skip) + b
    }
}

/// The fixed inputs of the recursion.
struct Ctx<'a> {
    spec: &'a StackSpec,
    model: &'a BranchModel,
}

impl Ctx<'_> {
    /// The final norm's mean-square Jacobian gain at a stream of second moment q and column
    /// correlation c ([`slot_map`]: `1/q` for LayerNorm), or 1.
    fn fin(&self, q: Mag, c: f64) -> Result<Mag> {
        if self.spec.final_norm.is_norm() {
            // Only a column norm's gain depends on c (DyT's map at c = 0 skips its pair
            // moment).
            let c = if self.columns() { c } else { 0.0 };
            Ok(slot_map(self.spec.norm, q, c, self.model.tokens, self.spec.depth)?.gain)
        } else {
            Ok(Mag::one())
        }
    }

    /// Whether the norm averages each channel over the columns (InstanceNorm, BatchNorm), so
    /// that gradients are carried by [`Column`].
    fn columns(&self) -> bool {
        self.spec.norm.is_column_norm()
    }

    /// Block l of the recursion (module docs): the state after it and its contributions.
    fn step(&self, l: usize, st: State) -> Result<(State, Local)> {
        let (spec, model) = (self.spec, self.model);
        let b = spec.block(l);
        let qp = st.q;
        let cp = st.corr;
        let in_scale = match b.in_scale {
            InputScale::One => Mag::one(),
            InputScale::InvSqrtLayer => Mag::new(1.0 / l as f64),
        };
        let norm = spec.norm;
        let n = model.tokens;
        // The branch input N_in(x) (scaled): its second moment, correlation and the
        // mean-square gain of the map from x (slot_map; for LayerNorm 1, c and 1/q).
        let (qu, cu, in_jac, in_kills) = if b.n_in.is_norm() {
            let m = slot_map(norm, qp, cp, n, l)?;
            // LayerNorm's gain as it was always rounded, in_scale / q (one rounding).
            let in_jac = match norm.closed_form_map() {
                NormMap::Tanh | NormMap::Columns => m.gain.mul(in_scale),
                // `slot_map` refuses a stack without norms before this.
                NormMap::Sphere | NormMap::Absent => in_scale.div(qp),
            };
            (m.q.mul(in_scale), m.corr, in_jac, m.kills_mean)
        } else {
            (qp.mul(in_scale), cp, Mag::one(), false)
        };
        let br = branch_at(model, qu, cu, l)?;
        let zero_branch = br.out.value() == 0.0;
        // Second moment of N_br(F(u)), its token correlation and the mean-square gain of
        // N_br's Jacobian.
        let (q_br, kappa, br_jac) = match (b.n_br.is_norm(), zero_branch) {
            (true, false) => {
                let m = slot_map(norm, br.out, br.kappa, n, l)?;
                (m.q, m.corr, m.gain)
            }
            (true, true) => (Mag::zero(), br.kappa, Mag::zero()),
            (false, _) => (br.out, br.kappa, Mag::one()),
        };
        let alpha_sq = match b.skip {
            SkipScale::One => Mag::one(),
            // Squared as magnitudes: alpha = 1e-155 or lambda = 1e155 square beyond f64.
            SkipScale::Alpha(a) => Mag::new(a).mul(Mag::new(a)),
            SkipScale::AdminOmega => st.admin_omega_sq,
        };
        let lambda = b.lambda.value();
        let lambda_sq = Mag::new(lambda).mul(Mag::new(lambda));
        let skip_part = alpha_sq.mul(qp);
        let br_part = lambda_sq.mul(q_br);
        let s = skip_part.add(br_part);
        // Zero only when both parts are exactly zero; a tiny s (alpha = 1e-8 over many
        // blocks) lives on in log space.
        if s.ln() == f64::NEG_INFINITY {
            return Err(Error::Undefined(format!(
                "x_{l} is identically zero (skip scale 0 and no branch contribution at block {l})"
            )));
        }
        let c = skip_part.ratio(s) * cp + br_part.ratio(s) * kappa;
        // n^2: the mean-square gain of N_out's Jacobian (1/s_l for LayerNorm), or 1; the
        // stream's second moment and correlation after N_out.
        let (ql, c, n_sq, out_kills) = if b.n_out.is_norm() {
            let m = slot_map(norm, s, c, n, l)?;
            (m.q, m.corr, m.gain, m.kills_mean)
        } else {
            (s, c, Mag::one(), false)
        };
        let ln_nbr = if b.n_br.is_norm() && !zero_branch {
            -0.5 * br.out.ln()
        } else {
            0.0
        };
        let a2 = n_sq.mul(alpha_sq);
        // Mean-square gain from the raw branch output B_l to x_l.
        let to = n_sq.mul(lambda_sq).mul(br_jac);
        let factor = to.mul(in_jac);
        let split = (
            factor.mul(Mag::new(br.split.0)),
            factor.mul(Mag::new(br.split.1)),
        );
        // Share of a branch perturbation's energy in the token mean.
        let pert_mean_share = if model.mixes_tokens() {
            1.0
        } else {
            1.0 / model.tokens + (1.0 - 1.0 / model.tokens) * br.kappa.max(0.0)
        };
        // ||x_l - x_{l-1}||^2 / ||x_{l-1}||^2 = (n alpha - 1)^2 + n^2 lambda^2 q_br / q.
        let k = a2.value().sqrt();
        let ru = (k - 1.0).powi(2) + n_sq.mul(br_part).ratio(qp);
        // Output change: O_l = J_l O_{l-1} + pert_l gain(B_l -> x_l) (split by the
        // perturbation's token correlation), then the final Norm's 1/q_l.
        let p = br.perturbation.mul(to);
        let o = jacobian_step(a2, split, st.o)
            + Energy {
                mean: p.mul(Mag::new(pert_mean_share)),
                fluct: p.mul(Mag::new(1.0 - pert_mean_share)),
            };
        // Admin's profiling (Transformer-Clinic): omega_{l+1}^2 = Var(omega_l x_{l-1}) + Var of
        // what the branch adds, i.e. the second moment s_l of the sum before N_out.
        let admin_omega_sq = if b.skip == SkipScale::AdminOmega {
            s
        } else {
            st.admin_omega_sq
        };
        let column = if self.columns() {
            Some(Column {
                out_kills,
                n_sq,
                skip: alpha_sq,
                branch: lambda_sq.mul(br_jac).mul(Mag::new(br.backward_gain)),
                rho: model.deriv_corr(qu.value(), cu).ok_or_else(|| {
                    Error::Unsupported(format!(
                        "the closed form with --norm {norm} and the {} branch: its Jacobian on \
                         a gradient's cross-column moment is not derived",
                        model.kind.name()
                    ))
                })?,
                in_kills,
                in_jac,
                n,
            })
        } else {
            None
        };
        let local = Local {
            q: ql,
            corr: c.clamp(-1.0, 1.0),
            m: br.out,
            ln_coef_new: 0.5 * n_sq.ln() + ln0(lambda) + ln_nbr,
            skip_prefix: 0.5 * (n_sq.ln() + alpha_sq.ln()),
            a2,
            branch_gain: factor.mul(Mag::new(br.backward_gain)),
            split,
            br_part,
            s,
            n_sq,
            to_stream: to,
            last_in: br.last_input,
            rel_update: ru.sqrt(),
            // cos = n alpha q / sqrt(q_l q).
            cos_prev: (a2.mul(qp).ratio(ql)).sqrt().min(1.0),
            output_change: o.total().mul(self.fin(ql, c)?),
            column,
        };
        let next = State {
            q: ql,
            corr: local.corr,
            admin_omega_sq,
            o,
        };
        Ok((next, local))
    }

    /// `||F_{l+1}(N(x_l)) - F_{l+1}(N(x_{l-1}))||^2 / ||F_{l+1}(N(x_l))||^2` with N block
    /// l+1's branch input, from the pair kernel of `F_{l+1}` at the moments of the two inputs:
    /// `E<x_l, x_{l-1}>/d = n_l alpha_l q_{l-1}` for the same token and
    /// `n_l alpha_l q_{l-1} c_{l-1}` across tokens (the branch term is uncorrelated with
    /// x_{l-1}). `prev` is the state after block l-1, `local` block l's contributions.
    ///
    /// `(K(a,a) + K(b,b) - 2 K(a,b)) / K(a,a)` in plain f64 while its terms are finite and
    /// cancel by less than [`MERGE_CANCELLATION`]; else the linear branch's difference route
    /// ([`Self::merge_linear`]), or for the other scale-free branches the same kernels at
    /// rescaled moments ([`Self::merge_rescaled`]). A value beyond f64 is returned as such
    /// (its magnitude is exact), for the caller to write as missing.
    fn merge(&self, l: usize, prev: &State, local: &Local) -> Result<Mag> {
        let (spec, model) = (self.spec, self.model);
        let next = spec.block(l + 1);
        let in_scale = match next.in_scale {
            InputScale::One => 1.0,
            InputScale::InvSqrtLayer => 1.0 / (l + 1) as f64,
        };
        // Cross moment of x_l and x_{l-1}, same token, relative to q_l: cos * sqrt(q_{l-1}/q_l).
        let ratio = prev.q.ratio(local.q);
        let cos = local.cos_prev;
        let (qa, qb, m) = if next.n_in.is_norm() {
            (1.0, 1.0, cos)
        } else {
            (1.0, ratio, cos * ratio.sqrt())
        };
        let (qa, qb, m) = (qa * in_scale, qb * in_scale, m * in_scale);
        let scale_free = model.scale_free() || next.n_in.is_norm();
        // Moments are relative to q_l; scale back where the branch is not scale-free.
        let scale = if scale_free { 1.0 } else { local.q.value() };
        if !scale.is_finite() {
            return Err(Error::Overflow(format!(
                "merge_error at layer {l}: stream second moment beyond f64"
            )));
        }
        let (qa, qb, m) = (qa * scale, qb * scale, m * scale);
        let (ca, cb) = (local.corr, prev.corr);
        let kaa = model.pair(qa, qa, qa, qa * ca).0;
        let kbb = model.pair(qb, qb, qb, qb * cb).0;
        let kab = model.pair(qa, qb, m, m * cb).0;
        if kaa <= 0.0 && (model.last == 0.0 || model.first == 0.0) {
            return Ok(Mag::new(f64::NAN));
        }
        let num = kaa + kbb - 2.0 * kab;
        let plain = [kaa, kbb, kab, num].iter().all(|x| x.is_finite()) && kaa.is_normal();
        if plain && num >= MERGE_CANCELLATION * (kaa + kbb) {
            return Ok(Mag::new((num / kaa).max(0.0)));
        }
        if model.kind == BranchKind::Linear {
            return Ok(self.merge_linear(next.n_in.is_norm(), prev, local));
        }
        if plain {
            return Ok(Mag::new((num / kaa).max(0.0)));
        }
        let moments = if model.scale_free() {
            None
        } else {
            Some((qa, qb, m))
        };
        Ok(self.merge_rescaled(prev, local, next.n_in.is_norm(), moments))
    }

    /// The merge error of a linear branch, `E||N(x_l) - N(x_{l-1})||^2 / E||N(x_l)||^2` (the
    /// gain cancels), without cancellation: behind a norm `2 (1 - cos)` with
    /// `1 - cos = (lambda^2 q_br / s_l) / (1 + cos)` (as `1 - cos^2 = lambda^2 q_br / s_l`),
    /// else `E||x_l - x_{l-1}||^2 / q_l` from the recursion's magnitudes.
    fn merge_linear(&self, norm_in: bool, prev: &State, local: &Local) -> Mag {
        if norm_in {
            Mag::new(2.0)
                .mul(local.br_part.div(local.s))
                .div(Mag::new(1.0 + local.cos_prev))
        } else {
            // x_l - x_{l-1} = (k - 1) x_{l-1} + n lambda N_br(F(u)), the terms uncorrelated.
            (skip_gap(local.a2).mul(prev.q) + local.n_sq.mul(local.br_part)).div(local.q)
        }
    }

    /// The merge error from the kernels with the last matrix's gain 1 (every kernel is linear
    /// in it, and it cancels in the ratio). A scale-free branch (`moments` None) also takes
    /// `first = 1` (its kernel is `first last K_1`) and the moments scaled by
    /// `sqrt(q_l / q_{l-1})` (its kernel is homogeneous of degree 1): the two inputs' moments
    /// are `r^-1, r` with `r = sqrt(q_{l-1} / q_l)`, both in range while the result can be.
    /// Other branches keep their `(q_a, q_b, m_same)`. NaN when a kernel is still not finite.
    fn merge_rescaled(
        &self,
        prev: &State,
        local: &Local,
        norm_in: bool,
        moments: Option<(f64, f64, f64)>,
    ) -> Mag {
        let mut unit = BranchModel {
            last: 1.0,
            ..self.model.clone()
        };
        let (qa, qb, m) = moments.unwrap_or_else(|| {
            unit.first = 1.0;
            let r = if norm_in {
                Mag::one()
            } else {
                prev.q.div(local.q).sqrt()
            };
            (Mag::one().div(r).value(), r.value(), local.cos_prev)
        });
        let (ca, cb) = (local.corr, prev.corr);
        let kaa = unit.pair(qa, qa, qa, qa * ca).0;
        let kbb = unit.pair(qb, qb, qb, qb * cb).0;
        let kab = unit.pair(qa, qb, m, m * cb).0;
        let num = kaa + kbb - 2.0 * kab;
        if !(num.is_finite() && kaa.is_normal()) {
            return Mag::new(f64::NAN);
        }
        Mag::new(num.max(0.0)).div(Mag::new(kaa))
    }
}

/// `(k - 1)^2` for the skip path's gain `k = sqrt(a^2)`, as a magnitude: `k^2` where k is
/// beyond 2^53 (k - 1 rounds to k), 1 where it is below f64's normal range.
fn skip_gap(a2: Mag) -> Mag {
    let k = a2.sqrt();
    let kv = k.value();
    if kv.is_normal() && kv < 2f64.powi(53) {
        let d = Mag::new((kv - 1.0).abs());
        d.mul(d)
    } else if kv >= 1.0 {
        a2
    } else {
        Mag::one()
    }
}

/// All per-layer sequences of the closed form for one stack, at the layers its [`Keep`]
/// selects.
///
/// Sequences indexed by layer `l = 0..=L` hold a layer-0 value; those indexed by block
/// `l = 1..=L` hold `NaN` (or zero) at index 0. Indexing a layer that was not kept panics.
///
/// # Examples
///
/// Pre-LN with a linear Xavier branch: `q_l = q0 + l`, with the skip gain `a_l^2 = 1`:
///
/// ```rust
/// use normscope_core::closed_form::ClosedForm;
/// use normscope_core::model::RawModel;
/// use normscope_core::theory::Keep;
/// let model = RawModel { depth: 4, ..RawModel::default() }.check()?;
/// let mf = ClosedForm::new(&model).mean_field(&model.stack(normscope_core::placement::find("pre")?)?, &Keep::all())?;
/// assert_eq!(mf.depth, 4);
/// let q: Vec<f64> = (0..=4).map(|l| mf.q[l].value()).collect();
/// assert_eq!(q, vec![1.0, 2.0, 3.0, 4.0, 5.0]);
/// assert_eq!(mf.skip_gain[1].value(), 1.0);
/// # Ok::<(), normscope_core::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct MeanField {
    /// Depth L.
    pub depth: usize,
    /// `q_l`, l = 0..=L.
    pub q: Layered<Mag>,
    /// `c_l`, l = 0..=L.
    pub corr: Layered<f64>,
    /// `m_j`, the per-coordinate second moment of source j (`m_0 = q0`), j = 0..=L.
    pub m: Layered<Mag>,
    /// `ln C_{j,j}`, j = 0..=L (`C_{0,0} = 1`).
    pub ln_coef_new: Layered<f64>,
    /// Prefix sums of `ln(n_l alpha_l)`: `ln C_{l,j} = ln C_{j,j} + P_l - P_j` (every layer
    /// when [`Keep::sources`], else empty).
    pub skip_prefix: PrefixSum,
    /// `a_l^2`, l = 1..=L.
    pub skip_gain: Layered<Mag>,
    /// `b_l^2`, l = 1..=L: the branch path's gain for a tangent with independent tokens.
    pub branch_gain: Layered<Mag>,
    /// `(a_l^2, b_mean^2, b_fluct^2)` over one power of two (the binary exponent of the
    /// largest), l = 1..=L: the skip gain and the branch path's gains on the token-mean part
    /// and the fluctuation of a tangent (equal for per-token branches), whose ratios the path
    /// law reads.
    pub path_gains: Layered<(f64, f64, f64)>,
    /// Whether block l's branch share of the paths is positive but below f64's normal range
    /// relative to the largest gain, l = 1..=L (with [`Self::path_gains`]).
    pub path_tiny: Layered<bool>,
    /// Tokens n.
    pub tokens: f64,
    /// `r_l`, the mean-square gradient at x_l, l = 0..=L (if [`Keep::backward`]).
    pub grad: Layered<Mag>,
    /// `E||d loss / d W_last||_F^2 / d^2` of block l, l = 1..=L (if [`Keep::backward`]).
    pub weight_grad: Layered<Mag>,
    /// `||x_l - x_{l-1}|| / ||x_{l-1}||` (root of the ratio of mean squares), l = 1..=L.
    pub rel_update: Layered<f64>,
    /// `cos(x_l, x_{l-1})`, l = 1..=L.
    pub cos_prev: Layered<f64>,
    /// The seeds' merge error for `F_{l+1}`, l = 1..=L-1 (if [`Keep::merge`]).
    pub merge_error: Layered<Mag>,
    /// Output change per squared relative weight perturbation, l = 0..=L.
    pub output_change: Layered<Mag>,
}

impl MeanField {
    /// Runs the recursion for `spec` with branch `model` and input law `inputs`, keeping every
    /// sequence at every layer.
    pub fn new(spec: &StackSpec, model: &BranchModel, inputs: Inputs) -> Result<Self> {
        Self::run(spec, model, inputs, &Keep::all())
    }

    /// Runs the recursion keeping what `keep` selects. The forward recursion streams over
    /// depth; the backward pass (gradients from the output, a product over the blocks above)
    /// recomputes the forward recursion segment by segment from checkpoints every
    /// `ceil(sqrt(L + 1))` blocks, so memory is O(sqrt L) plus the kept layers, and every value
    /// is computed by the same operations in the same order as with everything kept.
    pub fn run(spec: &StackSpec, model: &BranchModel, inputs: Inputs, keep: &Keep) -> Result<Self> {
        let depth = spec.depth;
        let nan = f64::NAN;
        let len = depth + 1;
        let q0 = Mag::new(inputs.q0);
        let mut mf = MeanField {
            depth,
            q: keep.storage(false, len, q0),
            corr: keep.storage(false, len, inputs.c0),
            m: keep.storage(keep.sources, len, q0),
            ln_coef_new: keep.storage(keep.sources, len, 0.0),
            skip_prefix: PrefixSum::new(if keep.sources { depth } else { 0 }),
            skip_gain: keep.storage(false, len, Mag::new(nan)),
            branch_gain: keep.storage(false, len, Mag::new(nan)),
            path_gains: keep.storage(keep.gains, len, (nan, nan, nan)),
            path_tiny: keep.storage(keep.gains, len, false),
            tokens: model.tokens,
            grad: keep.storage(false, len, Mag::one()),
            weight_grad: keep.storage(false, len, Mag::zero()),
            rel_update: keep.storage(false, len, nan),
            cos_prev: keep.storage(false, len, nan),
            merge_error: keep.storage(false, len, Mag::new(nan)),
            output_change: keep.storage(false, len, Mag::zero()),
        };
        let ctx = Ctx { spec, model };
        let start = State {
            q: q0,
            corr: inputs.c0,
            admin_omega_sq: Mag::one(),
            o: Energy::zero(),
        };
        if keep.has(0) {
            mf.q.set(0, q0);
            mf.corr.set(0, inputs.c0);
            mf.output_change.set(0, Mag::zero());
        }
        if keep.sources || keep.has(0) {
            mf.m.set(0, q0);
            mf.ln_coef_new.set(0, 0.0);
        }
        let every = (len as f64).sqrt().ceil().max(1.0) as usize;
        let mut checkpoints = vec![start];
        let mut st = start;
        for l in 1..=depth {
            let (next, loc) = ctx.step(l, st)?;
            if keep.has(l) {
                mf.q.set(l, loc.q);
                mf.corr.set(l, loc.corr);
                mf.branch_gain.set(l, loc.branch_gain);
                mf.skip_gain.set(l, loc.a2);
                mf.rel_update.set(l, loc.rel_update);
                mf.cos_prev.set(l, loc.cos_prev);
                mf.output_change.set(l, loc.output_change);
                if keep.merge && l < depth {
                    mf.merge_error.set(l, ctx.merge(l, &st, &loc)?);
                }
            }
            if keep.sources || keep.has(l) {
                mf.m.set(l, loc.m);
                mf.ln_coef_new.set(l, loc.ln_coef_new);
            }
            if keep.sources {
                mf.skip_prefix.push(loc.skip_prefix);
            }
            if keep.gains {
                let (gains, tiny) = path_gains(loc.a2, loc.split);
                mf.path_gains.set(l, gains);
                mf.path_tiny.set(l, tiny);
            }
            st = next;
            if keep.backward && l % every == 0 && l < depth {
                checkpoints.push(st);
            }
        }
        if keep.backward {
            mf.backward(&ctx, &checkpoints, every, (st.q, st.corr), keep)?;
        }
        Ok(mf)
    }

    /// Backward from an isotropic output gradient, split into token mean and fluctuation:
    /// `r_L = (1/n, 1 - 1/n) / q_L` with a final Norm, then
    /// `r_{l-1} = a_l^2 r_l + (b_mean^2 r_l.mean, b_fluct^2 r_l.fluct)`; each segment of
    /// `every` blocks is recomputed from its checkpoint (the state before it).
    fn backward(
        &mut self,
        ctx: &Ctx,
        checkpoints: &[State],
        every: usize,
        (q_last, c_last): (Mag, f64),
        keep: &Keep,
    ) -> Result<()> {
        let depth = self.depth;
        let n = ctx.model.tokens;
        let mut r = Energy::isotropic(n);
        if ctx.columns() && ctx.spec.final_norm.is_norm() {
            r = r.fluctuation();
        }
        let mut r = r.scale(ctx.fin(q_last, c_last)?);
        if keep.has(depth) {
            self.grad.set(depth, r.total());
        }
        for (i, &from) in checkpoints.iter().enumerate().rev() {
            let first = i * every + 1;
            let last = ((i + 1) * every).min(depth);
            let mut locals = Vec::with_capacity(last + 1 - first);
            let mut st = from;
            for l in first..=last {
                let (next, loc) = ctx.step(l, st)?;
                locals.push(loc);
                st = next;
            }
            for (l, loc) in (first..last + 1).zip(&locals).rev() {
                let delta = r.scale(loc.to_stream);
                // E||dL/dW||^2/(n d^2): per-token branches sum token outer products with
                // uncorrelated gradients; attention's last matrix sees one input for all
                // tokens, so its gradient is n (mean of delta) a^T.
                if keep.has(l) {
                    let wg = if ctx.model.mixes_tokens() {
                        delta.mean.mul(Mag::new(n)).mul(loc.last_in)
                    } else {
                        delta.total().mul(loc.last_in)
                    };
                    self.weight_grad.set(l, wg);
                }
                r = match &loc.column {
                    Some(col) => col.apply(r),
                    None => jacobian_step(loc.a2, loc.split, r),
                };
                if keep.has(l - 1) {
                    self.grad.set(l - 1, r.total());
                }
            }
        }
        Ok(())
    }

    /// `ln C_{l,j}`.
    pub(crate) fn ln_coef(&self, l: usize, j: usize) -> f64 {
        self.ln_coef_new[j] + self.skip_prefix.diff(l, j)
    }

    /// `C_{l,j}`.
    pub fn coef(&self, l: usize, j: usize) -> f64 {
        self.ln_coef(l, j).exp()
    }

    /// Share of `E||x_l||^2` carried by source j: `C_{l,j}^2 m_j / q_l`.
    pub fn branch_weight(&self, l: usize, j: usize) -> f64 {
        self.ln_branch_weight(l, j).exp()
    }

    /// `ln` of [`Self::branch_weight`], exact where the weight is below f64's range.
    pub(crate) fn ln_branch_weight(&self, l: usize, j: usize) -> f64 {
        2.0 * self.ln_coef(l, j) + self.m[j].ln() - self.q[l].ln()
    }

    /// Skip gain and split branch gains of block l, `(a^2, b_mean^2, b_fluct^2)` over one
    /// power of two ([`Self::path_gains`]: only their ratios are meaningful), checking that the
    /// block's Jacobian is not zero.
    pub fn transfer(&self, l: usize) -> Result<(f64, f64, f64)> {
        let (a2, bm, bf) = self.path_gains[l];
        if a2 + bm + bf > 0.0 {
            Ok((a2, bm, bf))
        } else {
            Err(Error::Undefined(format!(
                "path_len/eff_depth: block {l}'s Jacobian gains are a^2 = b^2 = 0 (a zero skip scale and branch)"
            )))
        }
    }
}
