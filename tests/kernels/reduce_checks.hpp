// tests/kernels/reduce_checks.hpp — checks of the lane-wise sum/product and of max/min with
// index against naive restatements of their definitions, feeding random cuts under every
// setting. Used by test_reduce.cpp and, once per simd target, by test_targets.cpp.
#pragma once
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>

#include "kernel_test_util.hpp"

namespace ct_test_kernels {

/// The header's definition, restated naively: lane k%32 accumulates element k in double, then a
/// pairwise tree (0+1)+(2+3)… level by level.
template <class T, bool product>
double naive_lanes(const std::vector<T>& x) {
  std::vector<double> lane(32, product ? 1.0 : 0.0);
  for (size_t i = 0; i < x.size(); ++i)
    lane[i % 32] = product ? lane[i % 32] * double(x[i]) : lane[i % 32] + double(x[i]);
  while (lane.size() > 1) {
    std::vector<double> next;
    for (size_t i = 0; i < lane.size(); i += 2)
      next.push_back(product ? lane[i] * lane[i + 1] : lane[i] + lane[i + 1]);
    lane = next;
  }
  return lane[0];
}

/// Calls feed(chunk, len, pos) for consecutive random cuts of x (some of length 0, at most
/// max_cut long), each copied to a misaligned buffer so kernels see arbitrary alignment.
template <class T, class Feed>
void for_each_cut(const std::vector<T>& x, rng& r, index_t max_cut, Feed feed) {
  index_t pos = 0;
  const index_t n = static_cast<index_t>(x.size());
  while (pos < n) {
    const index_t len = std::min(n - pos, r.below(max_cut + 1));
    offset_buffer<T> chunk(len);
    for (index_t i = 0; i < len; ++i) chunk[i] = x[static_cast<size_t>(pos + i)];
    feed(chunk.data(), len, pos);
    pos += len;
  }
}

/// Feeds x to a fresh accumulator in random cuts (some of length 0) and returns the result.
/// streamed: sums use the kernels' prefetching variant (the same results).
template <class T, bool product>
double feed_in_cuts(const std::vector<T>& x, const ct::settings& s, rng& r, index_t max_cut, bool streamed = false) {
  k::lane_accumulator acc;
  product ? k::prod_init(acc) : k::sum_init(acc);
  for_each_cut(x, r, max_cut, [&](const T* chunk, index_t len, index_t pos) {
    product ? k::prod_accumulate(acc, chunk, len, s) : k::sum_accumulate(acc, chunk, len, s, streamed ? k::stream_ahead(s) : 0);
    REQUIRE(acc.count == pos + len);
  });
  return product ? k::prod_result(acc) : k::sum_result(acc);
}

template <class T, bool product>
inline void check_lanes() {
  rng r(product ? 11 : 12);
  for (index_t n : tile_lengths()) {
    std::vector<T> x(static_cast<size_t>(n));
    // Products near 1 stay finite; sums mix magnitudes so that order matters.
    for (auto& v : x)
      v = product ? static_cast<T>(r.uniform(0.9, 1.1)) : static_cast<T>(r.uniform(-1, 1) * std::exp(r.uniform(-20, 20)));
    const double want = naive_lanes<T, product>(x);
    for (const auto& s : all_settings())
      for (index_t max_cut : {index_t(1), index_t(5), index_t(40), index_t(300), index_t(5000)}) {
        const double got = feed_in_cuts<T, product>(x, s, r, max_cut);
        INFO(describe(s) << " n=" << n << " max_cut=" << max_cut << " got " << got << " want " << want);
        REQUIRE(same_bits(got, want));
        if (!product) REQUIRE(same_bits(feed_in_cuts<T, product>(x, s, r, max_cut, true), want));
      }
  }
}


template <class T, bool is_max>
k::extreme_state<T> naive_extreme(const std::vector<T>& x, index_t first_index) {
  k::extreme_state<T> st{T(0), -1};
  for (size_t i = 0; i < x.size(); ++i) {
    const T v = x[i];
    const index_t idx = first_index + static_cast<index_t>(i);
    if (st.index < 0) {
      st = {v, idx};
    } else if (std::isnan(st.value)) {
      break;
    } else if (std::isnan(v) || (is_max ? v > st.value : v < st.value)) {
      st = {v, idx};
    }
  }
  return st;
}

template <class T, bool is_max>
k::extreme_state<T> extreme_in_cuts(const std::vector<T>& x, index_t first_index, const ct::settings& s,
                                    rng& r, index_t max_cut, bool with_index = true, bool streamed = false) {
  k::extreme_state<T> st;
  k::extreme_init(st);
  for_each_cut(x, r, max_cut, [&](const T* chunk, index_t len, index_t pos) {
    if (is_max)
      k::max_accumulate(st, chunk, len, first_index + pos, s, with_index, streamed ? k::stream_ahead(s) : 0);
    else
      k::min_accumulate(st, chunk, len, first_index + pos, s, with_index, streamed ? k::stream_ahead(s) : 0);
  });
  return st;
}

template <class T, bool is_max>
inline void check_extreme() {
  const T nan = std::numeric_limits<T>::quiet_NaN();
  const T inf = std::numeric_limits<T>::infinity();
  rng r(is_max ? 3 : 4);
  for (index_t n : tile_lengths()) {
    for (int pattern = 0; pattern < 7; ++pattern) {
      std::vector<T> x(static_cast<size_t>(n));
      for (auto& v : x) {
        switch (pattern) {
          case 0: v = static_cast<T>(r.uniform(-1e3, 1e3)); break;
          case 1: v = static_cast<T>(r.below(5)) - T(2); break;  // many ties
          case 2: v = r.below(2) ? T(0) : -T(0); break;           // ties between +0 and -0
          case 3: v = r.below(40) ? static_cast<T>(r.uniform(-1, 1)) : (r.below(2) ? inf : -inf); break;
          case 6:  // the extreme is a zero of either sign among values on the other side
            v = r.below(8) ? (is_max ? T(-1) : T(1)) * static_cast<T>(r.uniform(0.5, 2)) : (r.below(2) ? T(0) : -T(0));
            break;
          default: v = r.below(50) ? static_cast<T>(r.uniform(-1, 1)) : nan; break;  // 4, 5: NaNs
        }
      }
      if (pattern == 5 && n > 0) x.back() = nan;  // a NaN only at the very end
      const index_t first = 1000 * pattern;
      const auto want = naive_extreme<T, is_max>(x, first);
      for (const auto& s : all_settings())
        for (index_t max_cut : {index_t(1), index_t(9), index_t(70), index_t(5000)}) {
          const auto got = extreme_in_cuts<T, is_max>(x, first, s, r, max_cut);
          INFO(describe(s) << " n=" << n << " pattern " << pattern << " cut " << max_cut << " got (" << got.value
                           << ", " << got.index << ") want (" << want.value << ", " << want.index << ")");
          REQUIRE(got.index == want.index);
          REQUIRE(same_bits(got.value, want.value));
          // Value only (max/min rather than argmax/argmin): the same value, zeros' signs included.
          const auto value = extreme_in_cuts<T, is_max>(x, first, s, r, max_cut, false);
          REQUIRE(same_bits(value.value, want.value));
          REQUIRE((value.index >= 0) == (want.index >= 0));
          // The prefetching (streamed) variants: the same results.
          const auto streamed = extreme_in_cuts<T, is_max>(x, first, s, r, max_cut, true, true);
          REQUIRE(streamed.index == want.index);
          REQUIRE(same_bits(streamed.value, want.value));
          REQUIRE(same_bits(extreme_in_cuts<T, is_max>(x, first, s, r, max_cut, false, true).value, want.value));
        }
    }
  }
}

/// unary_sum (a unary function feeding a lane-wise sum) against the two separate calls: the
/// same results and lanes bitwise, fed in random cuts so every lane phase starts a call, with
/// and without storing the results. Returns whether the current target has the fused kernel.
template <class T>
bool check_unary_sum() {
  rng r(sizeof(T) == 4 ? 31 : 32);
  bool found = false;
  for (const auto& s : all_settings()) {
    REQUIRE(k::resolve_unary_sum<T>(k::unary_op::exp, true, s) == nullptr);  // square only
    for (bool store : {true, false}) {
      const auto fused = k::resolve_unary_sum<T>(k::unary_op::square, store, s);
      const auto plain = k::resolve_unary<T>(k::unary_op::square, s);
      if (s.backend == ct::backend::scalar) REQUIRE(fused == nullptr);
      if (fused == nullptr) continue;
      REQUIRE(plain != nullptr);
      found = true;
      for (index_t n : tile_lengths()) {
        std::vector<T> x(static_cast<size_t>(n));
        for (auto& v : x) v = static_cast<T>(r.uniform(-1, 1) * std::exp(r.uniform(-30, 30)));
        for (index_t max_cut : {index_t(1), index_t(7), index_t(45), index_t(300), index_t(5000)}) {
          k::lane_accumulator a, b;
          k::sum_init(a);
          k::sum_init(b);
          std::vector<T> ya(x.size()), yb(x.size());
          for_each_cut(x, r, max_cut, [&](const T* chunk, index_t len, index_t pos) {
            k::unary_sum(fused, plain, chunk, store ? yb.data() + pos : nullptr, len, b);
            k::unary(k::unary_op::square, chunk, ya.data() + pos, len, s);
            k::sum_accumulate(a, ya.data() + pos, len, s);
          });
          INFO(describe(s) << " store " << store << " n=" << n << " max_cut=" << max_cut);
          REQUIRE(a.count == b.count);
          for (int l = 0; l < k::reduce_lanes; ++l) REQUIRE(same_bits(a.lane[l], b.lane[l]));
          if (store)
            for (size_t i = 0; i < x.size(); ++i) REQUIRE(same_bits(ya[i], yb[i]));
        }
      }
    }
    // x - u written and its square summed in one pass (layer norm's variance).
    REQUIRE(k::resolve_sub_unary_sum<T>(k::unary_op::exp, s) == nullptr);
    const auto fused = k::resolve_sub_unary_sum<T>(k::unary_op::square, s);
    if (s.backend == ct::backend::scalar) REQUIRE(fused == nullptr);
    if (fused == nullptr) continue;
    const auto sub = k::resolve_binary<T>(k::binary_op::sub, false, true, s);
    const auto square = k::resolve_unary<T>(k::unary_op::square, s);
    for (index_t n : tile_lengths()) {
      std::vector<T> x(static_cast<size_t>(n));
      for (auto& v : x) v = static_cast<T>(r.uniform(-3, 3) * std::exp(r.uniform(-20, 20)));
      const T u[1] = {static_cast<T>(r.uniform(-2, 2))};
      for (index_t max_cut : {index_t(1), index_t(7), index_t(45), index_t(5000)}) {
        k::lane_accumulator a, b;
        k::sum_init(a);
        k::sum_init(b);
        std::vector<T> da(x.size()), db(x.size()), sq(x.size());
        for_each_cut(x, r, max_cut, [&](const T* chunk, index_t len, index_t pos) {
          k::sub_unary_sum(fused, sub, square, chunk, u, db.data() + pos, len, b);
          k::binary(k::binary_op::sub, chunk, false, u, true, da.data() + pos, len, s);
          k::unary(k::unary_op::square, da.data() + pos, sq.data() + pos, len, s);
          k::sum_accumulate(a, sq.data() + pos, len, s);
        });
        INFO(describe(s) << " x - u, n=" << n << " max_cut=" << max_cut);
        REQUIRE(a.count == b.count);
        for (int l = 0; l < k::reduce_lanes; ++l) REQUIRE(same_bits(a.lane[l], b.lane[l]));
        for (size_t i = 0; i < x.size(); ++i) REQUIRE(same_bits(da[i], db[i]));
      }
    }
  }
  return found;
}

}  // namespace ct_test_kernels
