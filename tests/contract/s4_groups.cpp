// CONTRACT.md §4, groups: what one group is for matmul (output rows, batch then row; output
// elements of matrix-vector products), axis reductions and fused expressions (retained
// coordinates), what runs as one group or is never partitioned, and results that are
// bitwise identical under every executor, partition and worker count — including the
// first-index tie rule of argmax/argmin.
// Which sentence each case checks: README.md in this folder.
#include <boost/asio/thread_pool.hpp>
#include <catch2/catch.hpp>
#include <atomic>
#include <cstdint>
#include <limits>
#include <mutex>
#include <string>
#include <vector>

#include "ct/asio.hpp"
#include "ct/ct.hpp"
#include "matmul/helpers.hpp"
#include "matmul/reference.hpp"
#include "support/executor_zoo.hpp"
#include "support/executors.hpp"
#include "support/reference.hpp"

using ct::dims;
using ct::index_t;
using ct_test::executor_zoo;
using mm_test::all_settings;
using mm_test::describe;
using mm_test::operand;
using mm_test::product;
using mm_test::products;
using mm_test::same_bits;

namespace {

using ct_test::expect_same_under_every_executor;

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


}  // namespace

// ---- what one group is

TEST_CASE("contract §4: matmul scheduling: groups are output rows / output elements in batch-then-row order",
          "[matmul][scheduling]") {
  ct_test::count_recorder rec;
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

TEST_CASE("contract §4: one group per retained coordinate; elementwise and whole reductions are serial",
          "[scheduling][fused]") {
  auto x = ct::random_uniform<float>({10, 3, 7}, 1);
  std::atomic<index_t> seen_count{-1};
  ct::executor_scope scope([&](index_t n, ct::range_callback cb) {
    seen_count = n;
    cb(0, n);
  });
  ct::eval(ct::sum(x, -1));
  CHECK(seen_count == 30);
  ct::eval(ct::softmax(x, 0));
  CHECK(seen_count == 21);
  ct::eval(ct::mean(x, {0, 2}));
  CHECK(seen_count == 3);
  seen_count = -1;
  ct::eval(ct::sum(x));           // whole tensor: one group
  ct::eval(ct::exp(x) + 1.0f);    // elementwise only
  ct::eval(ct::sum(x.slice(0, 0, 1).slice(1, 0, 1), -1));  // one retained coordinate
  CHECK(seen_count == -1);
}

// ---- bitwise identical under every executor, partition and worker count

TEST_CASE("contract §4: matmul scheduling: float results are bitwise identical under every executor",
          "[matmul][scheduling]") {
  check_determinism<float>();
}

TEST_CASE("contract §4: matmul scheduling: double results are bitwise identical under every executor",
          "[matmul][scheduling]") {
  check_determinism<double>();
}

TEST_CASE("contract §4: matmul scheduling: integer results are identical under every executor", "[matmul][scheduling]") {
  auto a = operand<std::int32_t>({2, 1, 33, 7}, 30), b = operand<std::int32_t>({3, 7, 40}, 31);
  const auto baseline = ct::matmul(a, b);
  ct::executor_scope bind(ct_test::three_worker_executor());
  CHECK(same_bits(ct::matmul(a, b), baseline));
  auto x = operand<std::int64_t>({257, 33}, 32), y = operand<std::int64_t>({33}, 33);
  const auto mv = ct::matmul(x, y);
  ct::executor_scope bind2(ct_test::random_partition_executor(4));
  CHECK(same_bits(ct::matmul(x, y), mv));
}

TEST_CASE("contract §4: reductions are bitwise identical under every executor", "[scheduling][fused]") {
  // Shapes that are not multiples of the tile (1024) or any vector width.
  auto x = ct::random_uniform<float>({37, 1037}, 21, -3.0f, 3.0f);
  auto d = ct::random_uniform<double>({19, 2051}, 22, -3.0, 3.0);
  expect_same_under_every_executor<float>([&] { return ct::eval(ct::sum(x, -1)); }, "sum f32");
  expect_same_under_every_executor<float>([&] { return ct::eval(ct::sum(x, 0)); }, "sum axis 0");
  expect_same_under_every_executor<double>([&] { return ct::eval(ct::sum(d, -1)); }, "sum f64");
  expect_same_under_every_executor<double>([&] { return ct::eval(ct::prod(ct::exp(d / 2051.0), -1)); }, "prod");
  expect_same_under_every_executor<float>([&] { return ct::eval(ct::mean(x, 1)); }, "mean");
  expect_same_under_every_executor<float>([&] { return ct::eval(ct::max(x, -1)); }, "max");
  expect_same_under_every_executor<float>([&] { return ct::eval(ct::min(x, -1)); }, "min");
  expect_same_under_every_executor<std::int64_t>([&] { return ct::eval(ct::argmax(x, -1)); }, "argmax");
  expect_same_under_every_executor<std::int64_t>([&] { return ct::eval(ct::argmin(d, -1)); }, "argmin");
  expect_same_under_every_executor<float>([&] { return ct::eval(ct::logsumexp(x, -1)); }, "logsumexp");
  expect_same_under_every_executor<bool>([&] { return ct::eval(ct::any(x > 2.99f, -1)); }, "any");
  expect_same_under_every_executor<bool>([&] { return ct::eval(ct::all(x > -2.99f, -1)); }, "all");
  expect_same_under_every_executor<float>([&] { return ct::eval(ct::softmax(x, -1)); }, "softmax");
  expect_same_under_every_executor<float>([&] { return ct::eval(ct::softmax(x, 0)); }, "softmax axis 0");
  expect_same_under_every_executor<double>([&] { return ct::eval(ct::layer_norm(d, -1, 1e-5)); }, "layer_norm");
  expect_same_under_every_executor<float>([&] { return ct::eval(ct::rms_norm(x, -1, 1e-6f)); }, "rms_norm");
  // Rows over 8 KiB: the exp(x - max) kernel prefetches the next group's row as it goes, and a
  // group whose row was fetched that way reads it without prefetching (where a range of groups
  // starts, the first group still fetches its own).
  auto xl = ct::random_uniform<float>({23, 3001}, 23, -3.0f, 3.0f);
  expect_same_under_every_executor<float>([&] { return ct::eval(ct::softmax(xl, -1)); }, "softmax long rows");
  expect_same_under_every_executor<float>([&] { return ct::eval(ct::logsumexp(xl, -1)); }, "logsumexp long rows");
  expect_same_under_every_executor<double>([&] { return ct::eval(ct::log_softmax(d, -1)); }, "log_softmax f64 long rows");
  // With such rows a callback's output pass also computes the next group's max (the first
  // group of each callback computes its own), so special values must give the same bits
  // either way: a NaN in a middle tile, a row of -inf, +inf in the last tile, a repeated max.
  auto xs = ct::random_uniform<float>({9, 3001}, 28, -3.0f, 3.0f);
  xs(2, 1500) = std::numeric_limits<float>::quiet_NaN();
  for (index_t c = 0; c < 3001; ++c) xs(4, c) = -std::numeric_limits<float>::infinity();
  xs(6, 3000) = std::numeric_limits<float>::infinity();
  xs(7, 10) = xs(7, 2900) = 5.0f;
  expect_same_under_every_executor<float>([&] { return ct::eval(ct::softmax(xs, -1)); }, "softmax long rows, special values");
  expect_same_under_every_executor<float>([&] { return ct::eval(ct::log_softmax(xs, -1)); }, "log_softmax long rows, special values");
  auto xm = ct::random_uniform<float>({9, 3001}, 29, -3.0f, 3.0f);  // a min in the first pass
  expect_same_under_every_executor<float>([&] { auto e = ct::exp(ct::min(xm, -1, true) - xm); return ct::eval(e / ct::sum(e, -1, true)); }, "softmax of -x via min");
  // Float layer norm with weight and bias ((x * u) * w + c in one kernel), a float product,
  // several reduced axes, reductions over axis 0 (column mode) and a transposed operand.
  auto w = ct::random_uniform<float>({1037}, 24, 0.5f, 1.5f), bias = ct::random_uniform<float>({1037}, 25, -1.0f, 1.0f);
  expect_same_under_every_executor<float>([&] { return ct::eval(ct::layer_norm(x, -1, 1e-5f, w, bias)); }, "layer_norm w b f32");
  expect_same_under_every_executor<float>([&] { return ct::eval(ct::prod(1.0f + x / 1037.0f, -1)); }, "prod f32");
  auto x3 = ct::random_uniform<float>({7, 33, 45}, 26, -3.0f, 3.0f);
  expect_same_under_every_executor<float>([&] { return ct::eval(ct::mean(x3, dims{0, 2})); }, "mean axes 0 2");
  expect_same_under_every_executor<float>([&] { return ct::eval(ct::max(x, 0)); }, "max axis 0");
  expect_same_under_every_executor<std::int64_t>([&] { return ct::eval(ct::argmax(x, 0)); }, "argmax axis 0");
  expect_same_under_every_executor<float>([&] { return ct::eval(ct::logsumexp(x, 0)); }, "logsumexp axis 0");
  auto xt = ct::random_uniform<float>({301, 67}, 27, -3.0f, 3.0f).transpose();
  expect_same_under_every_executor<float>([&] { return ct::eval(ct::softmax(xt, -1)); }, "softmax transposed");
}

TEST_CASE("contract §4: the first-index tie rule holds under every partition", "[executor][contract]") {
  auto rows = ct::zeros<float>({64, 3000});  // every element ties
  auto cols = ct::zeros<float>({3000, 64});
  auto ones = ct::ones<double>({37, 1100});
  std::vector<ct::executor> executors = {ct_test::serial_64_executor(), ct_test::random_partition_executor(7),
                                         ct_test::three_worker_executor(), ct_test::reverse_singles_executor()};
  for (auto& exec : executors) {
    ct::executor_scope scope(exec);
    CHECK(ct::equal(ct::eval(ct::argmax(rows, -1)), ct::zeros<std::int64_t>({64})));
    CHECK(ct::equal(ct::eval(ct::argmin(rows, -1)), ct::zeros<std::int64_t>({64})));
    CHECK(ct::equal(ct::eval(ct::argmax(cols, 0)), ct::zeros<std::int64_t>({64})));
    CHECK(ct::equal(ct::eval(ct::argmin(ones * -1.0, -1)), ct::zeros<std::int64_t>({37})));
  }
}
