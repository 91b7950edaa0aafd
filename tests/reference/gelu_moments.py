"""High-precision reference values for GELU's Gaussian moments.

Regenerate with `python3 tests/reference/gelu_moments.py > tests/reference/gelu_moments.csv`
(mpmath 1.3, 40 significant digits). Every value is an adaptive tanh-sinh quadrature of the
defining integral, independent of the closed forms in crates/core/src/branch/activation.rs:
  second = E[gelu(X)^2],  deriv = E[gelu'(X)^2],  X ~ N(0, v);
  pair   = E[gelu(X) gelu(Y)], Var X = a, Var Y = b, Cov = c = rho sqrt(a b), computed as
           E_x[gelu(x) E[gelu(Y) | x]] with E[Y Phi(Y)] = mu Phi(mu/t) + s^2 phi(mu/t)/t
           (Y ~ N(mu, s^2), t = sqrt(1 + s^2); Stein's lemma), the outer integral split at the
           points where GELU bends (|x| = 1, 3, 8) so its accuracy does not depend on a.
The inputs are written with 17 significant digits (they round-trip to the f64 the test uses),
and c is computed here from those f64 values exactly as the test computes it.
"""
import math

import mpmath as mp

mp.mp.dps = 40
Phi, phi = mp.ncdf, mp.npdf


def gelu(x):
    return x * Phi(x)


def gelu_prime(x):
    return Phi(x) + x * phi(x)


def breaks(sd):
    return sorted({-mp.inf, -12, -6, -2, 0, 2, 6, 12, mp.inf} | {k / sd for k in (-8, -3, -1, 1, 3, 8)})


def expect(f, v):
    s = mp.sqrt(v)
    return mp.quad(lambda z: f(s * z) * phi(z), breaks(s))


def pair(a, b, c):
    sa = mp.sqrt(a)
    slope, s2 = c / a, max(b - c * c / a, 0)
    t = mp.sqrt(1 + s2)

    def g(z):
        x = sa * z
        mu = slope * x
        return gelu(x) * (mu * Phi(mu / t) + s2 * phi(mu / t) / t) * phi(z)

    return mp.quad(g, breaks(sa))


def f64(x):
    return mp.mpf(float(x))


print("kind,a,b,rho,value")
VS = [1e-3, 1e-2, 0.1, 0.5, 1, 2, 8, 16, 32, 100, 1e3, 1e4]
for v in VS:
    print(f"second,{v!r},{v!r},1,{mp.nstr(expect(lambda x: gelu(x) ** 2, f64(v)), 25)}")
    print(f"deriv,{v!r},{v!r},1,{mp.nstr(expect(lambda x: gelu_prime(x) ** 2, f64(v)), 25)}")
RHOS = [-1, -0.999, -0.9, -0.5, 0, 0.3, 0.9, 0.999, 1]
PAIRS = [(v, v) for v in VS] + [(1e-3, 1e4), (100, 0.01), (2, 0.5), (1e4, 30), (0.1, 8)]
for a, b in PAIRS:
    for rho in RHOS:
        c = float(rho) * math.sqrt(float(a) * float(b))  # the f64 the test computes
        print(f"pair,{a!r},{b!r},{rho!r},{mp.nstr(pair(f64(a), f64(b), f64(c)), 25)}")
