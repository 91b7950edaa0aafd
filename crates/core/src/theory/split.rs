//! The energy of a tangent or gradient over n tokens, split into its token-mean part and the
//! fluctuation around it: `mean = ||T_bar||^2/d` and `fluct = sum_t ||T_t - T_bar||^2/(n d)`,
//! so that `mean + fluct` is the per-coordinate mean square. Per-token maps scale both parts
//! alike; uniform attention keeps only the mean part (see
//! [`crate::branch::BranchModel::jacobian_split`]).

use super::logsum::Mag;

/// A split energy.
///
/// # Examples
///
/// ```rust
/// use normscope_core::theory::logsum::Mag;
/// use normscope_core::theory::split::Energy;
/// let e = Energy::isotropic(4.0); // 1/4 of the energy in the token mean
/// assert_eq!((e.mean.value(), e.fluct.value()), (0.25, 0.75));
/// assert_eq!(e.total().value(), 1.0);
/// assert_eq!(e.scale(Mag::new(2.0)).total().value(), 2.0);
/// assert_eq!((e + Energy::zero()), e);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Energy {
    /// Token-mean part.
    pub mean: Mag,
    /// Fluctuation part.
    pub fluct: Mag,
}

impl Energy {
    /// An isotropic tangent with iid entries of unit variance: `1/n` of its energy is in the
    /// token mean.
    pub fn isotropic(n: f64) -> Self {
        Energy {
            mean: Mag::new(1.0 / n),
            fluct: Mag::new(1.0 - 1.0 / n),
        }
    }

    /// Zero.
    pub fn zero() -> Self {
        Energy {
            mean: Mag::zero(),
            fluct: Mag::zero(),
        }
    }

    /// Both parts times `s`.
    pub fn scale(self, s: Mag) -> Self {
        Energy {
            mean: self.mean * s,
            fluct: self.fluct * s,
        }
    }

    /// The parts times `(k_mean, k_fluct)`.
    pub fn transfer(self, k: (Mag, Mag)) -> Self {
        Energy {
            mean: self.mean * k.0,
            fluct: self.fluct * k.1,
        }
    }

    /// The split after a per-token map `J_t` of mean-square gain 1 that carries cross-token
    /// moments by `rho` relative to energies (`E<J_t g_t, J_s g_s> = rho <g_t, g_s>`,
    /// [`crate::branch::MeanFieldBranch::deriv_corr`]): with `p = mean + fluct` the per-token
    /// energy and `x = mean - fluct/(n - 1)` the cross moment of n tokens, the image has
    /// `(p, rho x)`, so its mean share is `(t (1 + (n-1) rho) + (1 - t)(1 - rho)) / n` for the
    /// mean share t before. Exact at `rho = 1`, and isotropic splits `(1/n, 1 - 1/n)` stay so.
    ///
    /// ```rust
    /// use normscope_core::theory::logsum::Mag;
    /// use normscope_core::theory::split::Energy;
    /// let e = Energy { mean: Mag::zero(), fluct: Mag::new(1.0) };
    /// let m = e.per_token(0.5, 4.0); // share (0 + 1 * 0.5) / 4
    /// assert_eq!((m.mean.value(), m.fluct.value()), (0.125, 0.875));
    /// assert_eq!(e.per_token(1.0, 4.0), e);
    /// ```
    pub fn per_token(self, rho: f64, n: f64) -> Self {
        let total = self.total();
        if rho.to_bits() == 1f64.to_bits() || total.value() == 0.0 && total.ln().is_infinite() {
            return self;
        }
        let t = self.mean.ratio(total);
        let share = ((t * (1.0 + (n - 1.0) * rho) + (1.0 - t) * (1.0 - rho)) / n).clamp(0.0, 1.0);
        Energy {
            mean: total * Mag::new(share),
            fluct: total * Mag::new(1.0 - share),
        }
    }

    /// The fluctuation alone (the mean removed).
    pub fn fluctuation(self) -> Self {
        Energy {
            mean: Mag::zero(),
            fluct: self.fluct,
        }
    }

    /// `mean + fluct`.
    pub fn total(self) -> Mag {
        self.mean + self.fluct
    }
}

impl std::ops::Add for Energy {
    type Output = Energy;
    /// Sum of both parts.
    fn add(self, o: Energy) -> Energy {
        Energy {
            mean: self.mean + o.mean,
            fluct: self.fluct + o.fluct,
        }
    }
}
