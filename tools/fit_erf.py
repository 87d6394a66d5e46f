#!/usr/bin/env python3
"""tools/fit_erf.py — derives the coefficients of erf/erfc (src/kernels/erf_table.hpp).

    python3 tools/fit_erf.py              # rewrites src/kernels/erf_table.hpp, prints the fit errors
    python3 tools/fit_erf.py --check      # also compares the C library's erfcl with mpmath
    python3 tools/fit_erf.py --reference  # prints mpmath values of erfc for the tests' tail table

Needs mpmath (Debian: apt-get install python3-mpmath). Deterministic: the same mpmath gives the
same file.

Two approximations, both fitted here by interpolation at Chebyshev nodes in 60-digit arithmetic
(near-minimax for these smooth functions), then rounded to the lane type:

1. Near zero: erf(x) = x + x*q(x^2), q(z) = erf(sqrt z)/sqrt z - 1, a polynomial in z on
   [0, 1] (monomial form, degree 6 for float, 12 for double). erf uses it for |x| < 1, erfc
   (as 1 - erf, with 1 - x held exactly in two parts) for |x| < 1/2.

2. Away from zero: erfc(a) = exp(-a^2) * g(a), g(a) = erfc(a) exp(a^2), a >= 1/2. g is smooth
   and slowly varying (0.62 at 1/2, about 1/(a sqrt(pi)) for large a). [1/2, 2^K) is cut into
   intervals of equal width inside each binade, 2^B per binade (float B = 2: 18 intervals up to
   12; double B = 1: 12 intervals up to 32), so the interval index is read from the exponent
   and the top B mantissa bits of a. In each interval g is a polynomial in u = a - mid (exact),
   degree 6 (float) / 17 (double). The constant term is stored as hi + lo: rounding it to one
   word alone costs up to half an ulp of g.

The tables hold one coefficient of every interval per row (padded to 32 floats / 16 doubles),
so the simd code fetches a coefficient for all lanes with one two-register permute on AVX-512.
"""
import math
import os
import struct
import sys

import mpmath as mp

mp.mp.dps = 60


def f32(v):
    return struct.unpack("f", struct.pack("f", float(v)))[0]


def f64(v):
    return float(v)


def q(z):
    if z == 0:
        return 2 / mp.sqrt(mp.pi) - 1
    s = mp.sqrt(z)
    return mp.erf(s) / s - 1


def g(a):
    return mp.erfc(a) * mp.exp(a * a)


def cheb_nodes(lo, hi, n):
    mid, h = (lo + hi) / 2, (hi - lo) / 2
    return [mid + h * mp.cos(mp.pi * (k + mp.mpf(1) / 2) / n) for k in range(n)]


def interpolate(f, lo, hi, deg, origin):
    """Coefficients c_j of sum c_j (x - origin)^j interpolating f at deg+1 Chebyshev nodes."""
    xs = cheb_nodes(lo, hi, deg + 1)
    scale = max(abs(hi - origin), abs(lo - origin))  # well-conditioned solve in (x-origin)/scale
    A = mp.matrix([[((x - origin) / scale) ** j for j in range(deg + 1)] for x in xs])
    c = mp.lu_solve(A, mp.matrix([f(x) for x in xs]))
    return [c[j] / scale ** j for j in range(deg + 1)]


def horner(cs, u):
    p = mp.mpf(0)
    for c in reversed(cs):
        p = p * u + c
    return p


class Config:
    def __init__(self, name, rnd, ctype, suffix, digits, q_deg, g_deg, bits, top, lanes):
        self.name, self.rnd, self.ctype, self.suffix = name, rnd, ctype, suffix
        self.digits, self.q_deg, self.g_deg, self.bits, self.top, self.lanes = digits, q_deg, g_deg, bits, top, lanes

    def intervals(self):
        out, lo = [], mp.mpf(1) / 2
        while lo < self.top:
            w = mp.mpf(2) ** mp.floor(mp.log(lo, 2)) / 2 ** self.bits
            out.append((lo, lo + w))
            lo += w
        return out


FLOAT = Config("float", f32, "float", "f", 24, q_deg=6, g_deg=6, bits=2, top=12, lanes=32)
DOUBLE = Config("double", f64, "double", "", 53, q_deg=12, g_deg=17, bits=1, top=32, lanes=16)


def fit_q(cfg):
    cs = interpolate(q, mp.mpf(0), mp.mpf(1), cfg.q_deg, mp.mpf(0))
    rounded = [cfg.rnd(c) for c in cs]
    err = max(abs(horner([mp.mpf(c) for c in rounded], z) - q(z)) / (1 + q(z))
              for z in [mp.mpf(k) / 400 for k in range(401)])
    return rounded, err


def fit_g(cfg):
    rows = [[] for _ in range(cfg.g_deg + 2)]  # c0 hi, c0 lo, c1 .. c_deg
    mids, worst = [], []
    for lo, hi in cfg.intervals():
        mid = (lo + hi) / 2
        cs = interpolate(g, lo, hi, cfg.g_deg, mid)
        c0_hi = cfg.rnd(cs[0])
        c0_lo = cfg.rnd(cs[0] - c0_hi)
        rest = [cfg.rnd(c) for c in cs[1:]]
        exact = [mp.mpf(c0_hi) + mp.mpf(c0_lo)] + [mp.mpf(c) for c in rest]
        err = max(abs(horner(exact, a - mid) / g(a) - 1)
                  for a in [lo + (hi - lo) * k / 200 for k in range(201)])
        worst.append((float(lo), float(hi), err))
        for j, c in enumerate([c0_hi, c0_lo] + rest):
            rows[j].append(c)
        mids.append(mid)
    return rows, worst


def literal(cfg, v):
    if v == 0:
        return "0" + (".0f" if cfg.suffix else ".0")
    mant, exp = float(v).hex().split("p")
    return mant.rstrip("0").rstrip(".") + "p" + exp + cfg.suffix


def emit(cfg, q_cs, rows):
    n = len(rows[0])
    lines = []
    lines.append(f"/// {cfg.name}: q(z) = erf(sqrt z)/sqrt z - 1 on [0, 1], degree {cfg.q_deg}, constant term first.")
    lines.append(f"inline constexpr {cfg.ctype} erf_q_{cfg.name}[{len(q_cs)}] = {{")
    lines.append("    " + ", ".join(literal(cfg, c) for c in q_cs) + "};")
    lines.append(f"/// {cfg.name}: g(a) = erfc(a) exp(a^2) on {n} intervals from 1/2 ({2 ** cfg.bits} per binade),")
    lines.append(f"/// a polynomial of degree {cfg.g_deg} in u = a - mid: row 0 the constant term's high part,")
    lines.append(f"/// row 1 its low part, row j+1 the coefficient of u^j. Rows padded to {cfg.lanes} entries.")
    lines.append(f"alignas(64) inline constexpr {cfg.ctype} erfc_g_{cfg.name}[{len(rows)}][{cfg.lanes}] = {{")
    for row in rows:
        vals = [literal(cfg, c) for c in row] + [literal(cfg, 0)] * (cfg.lanes - n)
        per = 4 if cfg.ctype == "double" else 6
        chunks = [", ".join(vals[i:i + per]) for i in range(0, len(vals), per)]
        lines.append("    {" + (",\n     ".join(chunks)) + "},")
    lines.append("};")
    return "\n".join(lines)


HEADER = """// src/kernels/erf_table.hpp — coefficients of erf and erfc (simd_erf-inl.h, scalar_erf.hpp).
//
// GENERATED by tools/fit_erf.py (interpolation at Chebyshev nodes in 60-digit mpmath, rounded to
// the lane type); re-run it instead of editing. The method is described there and in
// docs/kernels.md. Fit errors (approximation with the rounded coefficients, before evaluation
// rounding), as relative errors:
{errors}
#pragma once

namespace ct::detail::kernels {{

/// Where the simd code switches formulas, and the table's geometry (see tools/fit_erf.py).
inline constexpr int erfc_g_bits_float = {fbits}, erfc_g_bits_double = {dbits};  // intervals per binade: 2^bits
inline constexpr int erfc_g_degree_float = {fdeg}, erfc_g_degree_double = {ddeg};
inline constexpr int erf_q_degree_float = {fqdeg}, erf_q_degree_double = {dqdeg};

{body}

}}  // namespace ct::detail::kernels
"""


def check_erfcl():
    """The tests' reference is the C library's long double erfl/erfcl: compare it with mpmath."""
    import ctypes
    libm = ctypes.CDLL("libm.so.6")
    for fn in ("erfl", "erfcl"):
        getattr(libm, fn).restype = ctypes.c_longdouble
        getattr(libm, fn).argtypes = [ctypes.c_longdouble]
    worst = {"erfl": 0, "erfcl": 0}
    for k in range(1, 6000):
        x = mp.mpf(k) / 200 - 2  # -2 .. 28
        for fn, ref in (("erfl", mp.erf), ("erfcl", mp.erfc)):
            got = mp.mpf(getattr(libm, fn)(ctypes.c_longdouble(float(x))))
            want = ref(mp.mpf(float(x)))
            if abs(want) < mp.mpf(2) ** -1000:  # ctypes hands the result over as a double
                continue
            e = abs(got / want - 1) / mp.mpf(2) ** -53  # in units of 2^-53 (double ulps, roughly)
            worst[fn] = max(worst[fn], e)
    for fn, e in worst.items():
        print(f"C library {fn} vs mpmath on [-2, 28] (results above 2^-1000): max relative error {float(e):.2f} x 2^-53"
              " (the double it is returned as rounds once)")


def reference_table():
    """erfc at points of the tail, for tests/kernels/test_erf.cpp (long double literals): every
    1/4 from 1/2 to 26.5, and the last normal results of float and double."""
    xs = [k / 4 for k in range(2, 107)] + [9.125, 9.1875, 26.53125, 26.5390625]
    cells = [f"{{{x!r}, {mp.nstr(mp.erfc(mp.mpf(x)), 24, min_fixed=1, max_fixed=0)}L}}," for x in xs]
    for i in range(0, len(cells), 2):
        print("      " + " ".join(f"{c:<40}" for c in cells[i:i + 2]).rstrip())


def main():
    if "--reference" in sys.argv:
        reference_table()
        return
    errors, bodies = [], []
    for cfg in (FLOAT, DOUBLE):
        q_cs, q_err = fit_q(cfg)
        rows, worst = fit_g(cfg)
        g_err = max(e for _, _, e in worst)
        ulp = mp.mpf(2) ** -(cfg.digits - 1)
        print(f"{cfg.name}: q degree {cfg.q_deg} error {float(q_err / ulp):.3f} ulp(1); "
              f"g degree {cfg.g_deg} on {len(worst)} intervals, max relative error {float(g_err / ulp):.3f} x 2^-{cfg.digits - 1}")
        for lo, hi, e in worst:
            print(f"    [{lo:g}, {hi:g}): {float(e / ulp):.4f}")
        errors.append(f"//   {cfg.name}: q {float(q_err):.2e} (degree {cfg.q_deg}); g {float(g_err):.2e} "
                      f"(degree {cfg.g_deg}, {len(worst)} intervals)")
        bodies.append(emit(cfg, q_cs, rows))
    text = HEADER.format(errors="\n".join(errors), fbits=FLOAT.bits, dbits=DOUBLE.bits, fdeg=FLOAT.g_deg,
                         ddeg=DOUBLE.g_deg, fqdeg=FLOAT.q_deg, dqdeg=DOUBLE.q_deg, body="\n\n".join(bodies))
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src", "kernels", "erf_table.hpp")
    with open(out, "w") as f:
        f.write(text)
    print("wrote", os.path.normpath(out))
    if "--check" in sys.argv:
        check_erfcl()


if __name__ == "__main__":
    main()
