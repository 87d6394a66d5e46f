// src/kernels/fp_contract_off.hpp — include FIRST in every kernel source (before any header).
//
// fma_policy::separate promises two roundings for a*b+c, but g++ contracts a multiply feeding
// an add into one FMA by default (-ffp-contract=fast, also under -std=c++20) wherever the
// target has FMA — as inside Highway's AVX2/AVX-512 code. The optimize pragma switches that off
// for everything that follows in the translation unit, headers included, so inlining sees
// uniform options. Clang contracts within one source expression (-ffp-contract=on): the
// kernels try not to write one (a product is its own statement or a separate hn::Mul), but a
// double lane += x * x slipped through once (the layer-norm row kernel's tail, found in
// review), so clang gets its pragma too, for the rest of the translation unit.
#pragma once
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif
