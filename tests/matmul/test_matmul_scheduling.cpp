// ct::matmul under executors: groups per CONTRACT §4, bitwise identical results for every
// executor / partition / worker count, the documented accumulation orders, and the FMA
// policy really being honoured.
#include <boost/asio/thread_pool.hpp>
#include <catch2/catch.hpp>
#include <cmath>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "ct/asio.hpp"
#include "matmul/reference.hpp"
#include "support/executors.hpp"

#if defined(__clang__)
// The oracles below spell out the separate policy; clang must not fuse them.
#pragma clang fp contract(off)
#endif

using ct::index_t;
using mm_test::operand;
using mm_test::same_bits;
using mm_test::all_settings;
using mm_test::describe;

namespace {

// One product to run under many executors: a @ b into a fresh tensor, or into a strided
// destination (every other column of a bigger tensor) when strided_out names its shape.
template <class T>
struct product {
  std::string name;
  ct::tensor<T> a, b;
  ct::dims strided_out{};
  ct::tensor<T> run() const {
    if (strided_out.empty()) return ct::matmul(a, b);
    ct::dims host_shape = strided_out;
    host_shape[host_shape.size() - 1] *= 2;
    auto host = ct::full<T>(host_shape, T(-7));
    auto out = host.slice(host_shape.size() - 1, 1, std::nullopt, 2);
    ct::matmul(a, b, out);
    return out;
  }
};

template <class T>
std::vector<product<T>> products() {
  std::vector<product<T>> p;
  // Rows beyond MC, depth beyond KC (partial sums carried between k blocks), N not a
  // multiple of the micro-tile.
  p.push_back({"[257,33]@[33,40]", operand<T>({257, 33}, 1), operand<T>({33, 40}, 2)});
  p.push_back({"[33,257]@[257,33]", operand<T>({33, 257}, 3), operand<T>({257, 33}, 4)});
  p.push_back({"[7,33]@[33,7] strided out", operand<T>({7, 33}, 5), operand<T>({33, 7}, 6), ct::dims{7, 7}});
  p.push_back({"transposed [40,257]^T@[40,33]", operand<T>({40, 257}, 7).transpose(), operand<T>({40, 33}, 8)});
  p.push_back({"batched [2,1,33,7]@[3,7,40]", operand<T>({2, 1, 33, 7}, 9), operand<T>({3, 7, 40}, 10)});
  p.push_back({"batched [5,33,7]@[7,9] strided out", operand<T>({5, 33, 7}, 11), operand<T>({7, 9}, 12), ct::dims{5, 33, 9}});
  p.push_back({"matvec [257,300]@[300]", operand<T>({257, 300}, 13), operand<T>({300}, 14)});
  p.push_back({"matvec transposed [300,33]^T@[300]", operand<T>({300, 33}, 15).transpose(), operand<T>({300}, 16)});
  p.push_back({"vecmat [300]@[300,257]", operand<T>({300}, 17), operand<T>({300, 257}, 18)});
  p.push_back({"vecmat [33]@[257,33]^T", operand<T>({33}, 19), operand<T>({257, 33}, 20).transpose()});
  p.push_back({"batched vecmat [33]@[3,33,7]", operand<T>({33}, 21), operand<T>({3, 33, 7}, 22)});
  p.push_back({"dot [1000]@[1000]", operand<T>({1000}, 23), operand<T>({1000}, 24)});
  return p;
}

struct named_executor {
  std::string name;
  ct::executor exec;
};

template <class T>
void check_determinism() {
  boost::asio::thread_pool pool(6);
  std::vector<named_executor> executors = {
      {"serial_64", ct_test::serial_64_executor()},
      {"three_worker", ct_test::three_worker_executor()},
      {"asio 1", ct::asio_executor(pool, 1)},
      {"asio 2", ct::asio_executor(pool, 2)},
      {"asio 3", ct::asio_executor(pool, 3)},
      {"asio 7", ct::asio_executor(pool, 7)},
      {"random 1", ct_test::random_partition_executor(1)},
      {"random 2", ct_test::random_partition_executor(2)},
      {"checked random 3", ct::checked_executor(ct_test::random_partition_executor(3))},
  };
  for (const ct::settings& s : all_settings) {
    ct::settings_scope scope(s);
    for (const product<T>& p : products<T>()) {
      const ct::tensor<T> baseline = p.run();  // no executor bound
      for (const named_executor& e : executors) {
        ct::executor_scope bind(e.exec);
        const ct::tensor<T> got = p.run();
        INFO(ct::dtype_name<T>() << " " << p.name << " under " << e.name << ", " << describe(s));
        CHECK(same_bits(got, baseline));
      }
    }
  }
  pool.join();
}

// ---- oracles for the documented accumulation orders (docs/matmul.md) ----

// Matrix products: c = 0; c = muladd(a_k, b_k, c) for k = 0, 1, …
template <class T>
T sequential_dot(const ct::tensor<T>& x, const ct::tensor<T>& y, bool fused) {
  T c = 0;
  for (index_t p = 0; p < x.shape(0); ++p) {
    if (fused) {
      c = std::fma(x(p), y(p), c);
    } else {
      volatile T prod = x(p) * y(p);  // rounded on its own: no contraction possible
      c = c + prod;
    }
  }
  return c;
}

// Matrix-vector products and dot: element k into lane k % L (L = 128 / sizeof(T)), lanes
// folded pairwise: lane l += lane l + w for w = L/2, …, 1.
template <class T>
T lane_dot(const ct::tensor<T>& x, const ct::tensor<T>& y, bool fused) {
  constexpr index_t L = 128 / sizeof(T);
  T lanes[L] = {};
  for (index_t p = 0; p < x.shape(0); ++p) {
    T& c = lanes[p % L];
    if (fused) {
      c = std::fma(x(p), y(p), c);
    } else {
      volatile T prod = x(p) * y(p);
      c = c + prod;
    }
  }
  for (index_t w = L / 2; w >= 1; w /= 2)
    for (index_t l = 0; l < w; ++l) lanes[l] = lanes[l] + lanes[l + w];
  return lanes[0];
}

// Recording executor that also keeps the group count it was asked for.
struct count_recorder {
  std::mutex m;
  std::vector<index_t> counts;
  ct::executor get() {
    return [this](index_t n, ct::range_callback cb) {
      {
        std::lock_guard<std::mutex> lock(m);
        counts.push_back(n);
      }
      cb(0, n);
    };
  }
};

}  // namespace

TEST_CASE("matmul scheduling: float results are bitwise identical under every executor",
          "[matmul][scheduling]") {
  check_determinism<float>();
}

TEST_CASE("matmul scheduling: double results are bitwise identical under every executor",
          "[matmul][scheduling]") {
  check_determinism<double>();
}

TEST_CASE("matmul scheduling: integer results are identical under every executor", "[matmul][scheduling]") {
  auto a = operand<std::int32_t>({2, 1, 33, 7}, 30), b = operand<std::int32_t>({3, 7, 40}, 31);
  const auto baseline = ct::matmul(a, b);
  ct::executor_scope bind(ct_test::three_worker_executor());
  CHECK(same_bits(ct::matmul(a, b), baseline));
  auto x = operand<std::int64_t>({257, 33}, 32), y = operand<std::int64_t>({33}, 33);
  const auto mv = ct::matmul(x, y);
  ct::executor_scope bind2(ct_test::random_partition_executor(4));
  CHECK(same_bits(ct::matmul(x, y), mv));
}

TEST_CASE("matmul scheduling: groups are output rows / output elements in batch-then-row order",
          "[matmul][scheduling]") {
  count_recorder rec;
  ct::executor_scope bind(rec.get());
  ct::matmul(ct::ones<float>({2, 3, 5, 4}), ct::ones<float>({4, 6}));  // 2*3 batches x 5 rows
  ct::matmul(ct::ones<float>({3, 5, 4}), ct::ones<float>({4}));        // matrix x vector: 3*5 elements
  ct::matmul(ct::ones<float>({4}), ct::ones<float>({3, 4, 6}));        // vector x matrix: 3*6 elements
  ct::matmul(ct::ones<double>({7, 4}), ct::ones<double>({4, 1}));      // 7 rows
  CHECK(rec.counts == std::vector<index_t>{30, 15, 18, 7});

  // Each group is one row: a partition that hands out single groups in reverse order still
  // fills every row, and only that row.
  ct::executor reverse_singles = [](index_t n, ct::range_callback cb) {
    for (index_t g = n - 1; g >= 0; --g) cb(g, g + 1);
  };
  ct::executor_scope bind2(reverse_singles);
  auto a = operand<float>({2, 3, 33}, 40), b = operand<float>({33, 5}, 41);
  ct::tensor<float> want;
  {
    ct::executor_scope none(ct::executor{});
    want = ct::matmul(a, b);
  }
  CHECK(same_bits(ct::matmul(a, b), want));
}

// Groups are numbered batch first, then row (matrix products) or element (matrix-vector): an
// executor that has run only the first three groups has filled exactly batch 0.
TEST_CASE("contract §4: matmul groups go batch by batch, then row (or element)", "[matmul][scheduling]") {
  auto check_first_batch = [](auto make, const ct::dims& shape) {
    auto out = ct::full<float>(shape, -1.0f);
    bool checked = false;
    ct::executor_scope scope([&](index_t n, ct::range_callback cb) {
      REQUIRE(n == 6);
      cb(0, 3);
      // Batch 0 complete, batch 1 untouched.
      auto b0 = out.select(0, 0), b1 = out.select(0, 1);
      CHECK(ct::eval(ct::all(b0 != -1.0f)).item());
      CHECK(ct::eval(ct::all(b1 == -1.0f)).item());
      checked = true;
      cb(3, 6);
    });
    make(out);
    CHECK(checked);
    CHECK(ct::eval(ct::all(out != -1.0f)).item());
  };
  auto a = operand<float>({2, 3, 7}, 50), b = operand<float>({2, 7, 4}, 51), v = operand<float>({7}, 52);
  check_first_batch([&](const ct::tensor<float>& out) { ct::matmul(a, b, out); }, {2, 3, 4});  // rows
  check_first_batch([&](const ct::tensor<float>& out) { ct::matmul(a, v, out); }, {2, 3});     // elements
}

TEST_CASE("matmul scheduling: one-group products never call the executor", "[matmul][scheduling]") {
  int calls = 0;
  ct::executor_scope bind([&calls](index_t n, ct::range_callback cb) {
    ++calls;
    cb(0, n);
  });
  auto row = operand<float>({1, 257}, 50), m = operand<float>({257, 33}, 51), v = operand<float>({257}, 52);
  const auto r1 = ct::matmul(row, m);                          // one output row
  const auto r2 = ct::matmul(row.unsqueeze(0), m);             // batch 1, one row
  const auto r3 = ct::matmul(row, v);                          // matrix x vector with one row
  const auto r4 = ct::matmul(v, m.slice(1, 0, 1));             // vector x matrix with one column
  const auto r5 = ct::matmul(v, v);                            // vector x vector
  const float d = ct::dot(v, v);
  CHECK(calls == 0);
  // And they are right.
  CHECK(mm_test::count_bad(r1, mm_test::naive_matmul(row, m)) == 0);
  CHECK(mm_test::count_bad(r2, mm_test::naive_matmul(row.unsqueeze(0), m)) == 0);
  CHECK(mm_test::count_bad(r3, mm_test::naive_matmul(row, v)) == 0);
  CHECK(mm_test::count_bad(r4, mm_test::naive_matmul(v, m.slice(1, 0, 1))) == 0);
  CHECK(r5.item() == d);
  ct::matmul(operand<float>({2, 257}, 53), m);  // two rows: now the executor is used
  CHECK(calls == 1);
}

TEST_CASE("matmul scheduling: each backend follows the documented accumulation order exactly",
          "[matmul][scheduling]") {
  // Exact oracles, not tolerances: matrix and vector-matrix products are sequential in k,
  // matrix-vector products and dot use the fixed lanes. Both backends must match them
  // bitwise, which also shows the FMA policy reaches the kernels inside callbacks.
  auto a = operand<float>({33, 300}, 60), b = operand<float>({300, 40}, 61), x = operand<float>({300}, 62);
  auto ad = operand<double>({9, 300}, 63), bd = operand<double>({300, 7}, 64), xd = operand<double>({300}, 65);
  ct::executor_scope bind(ct_test::three_worker_executor());
  for (const ct::settings& s : all_settings) {
    ct::settings_scope scope(s);
    const bool fused = s.fma == ct::fma_policy::fused;
    INFO(describe(s));
    const auto c = ct::matmul(a, b), cv = ct::matmul(a, x), vc = ct::matmul(x, b);
    const auto cd = ct::matmul(ad, bd), cvd = ct::matmul(ad, xd);
    index_t wrong = 0;
    for (index_t i = 0; i < 33; ++i)
      for (index_t j = 0; j < 40; ++j) wrong += c(i, j) != sequential_dot(a.select(0, i), b.select(1, j), fused);
    for (index_t i = 0; i < 33; ++i) wrong += cv(i) != lane_dot(a.select(0, i), x, fused);
    for (index_t j = 0; j < 40; ++j) wrong += vc(j) != sequential_dot(x, b.select(1, j), fused);
    for (index_t i = 0; i < 9; ++i) {
      for (index_t j = 0; j < 7; ++j) wrong += cd(i, j) != sequential_dot(ad.select(0, i), bd.select(1, j), fused);
      wrong += cvd(i) != lane_dot(ad.select(0, i), xd, fused);
    }
    wrong += ct::dot(x, x) != lane_dot(x, x, fused);
    CHECK(wrong == 0);
  }
}

TEST_CASE("matmul scheduling: fused and separate multiply-add really differ", "[matmul][scheduling]") {
  // With 300-term sums of random values, one rounding versus two must show up somewhere;
  // if it did not, the policy would not be reaching the kernels.
  auto a = operand<float>({33, 300}, 70), b = operand<float>({300, 40}, 71), x = operand<float>({300}, 72);
  for (ct::backend be : {ct::backend::simd, ct::backend::scalar}) {
    ct::backend_scope use(be);
    ct::executor_scope bind(ct_test::three_worker_executor());
    ct::tensor<float> fused_c, fused_v, sep_c, sep_v;
    {
      ct::fma_scope f(ct::fma_policy::fused);
      fused_c = ct::matmul(a, b);
      fused_v = ct::matmul(a, x);
    }
    {
      ct::fma_scope f(ct::fma_policy::separate);
      sep_c = ct::matmul(a, b);
      sep_v = ct::matmul(a, x);
    }
    CHECK_FALSE(same_bits(fused_c, sep_c));
    CHECK_FALSE(same_bits(fused_v, sep_v));
  }
}

TEST_CASE("matmul scheduling: scalar and simd backends agree bitwise", "[matmul][scheduling]") {
  // A property of ct's kernels (docs/matmul.md), not of the contract: both backends use the
  // same orders, so only the FMA policy changes bits.
  for (const product<double>& p : products<double>()) {
    for (ct::fma_policy f : {ct::fma_policy::fused, ct::fma_policy::separate}) {
      ct::fma_scope fs(f);
      ct::tensor<double> simd, scalar;
      {
        ct::backend_scope b(ct::backend::simd);
        simd = p.run();
      }
      {
        ct::backend_scope b(ct::backend::scalar);
        scalar = p.run();
      }
      INFO(p.name);
      CHECK(same_bits(simd, scalar));
    }
  }
}
