// The built-in CBLAS selector (ct/select/cblas.hpp) against ct's own GEMM and a double
// reference. Compiled when tests/meson.build found OpenBLAS (CT_TEST_HAVE_CBLAS).
#ifdef CT_TEST_HAVE_CBLAS
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "ct/ct.hpp"
#include "ct/select/cblas.hpp"
#include "support/executor_zoo.hpp"
#include "support/executors.hpp"
#include "support/reference.hpp"

using ct::index_t;

namespace {

/// max |y - ref| / (sum_p |a_ip||b_pj|) over the result: the error relative to the size of
/// the terms, which a correctly computed product keeps below a few k·eps.
template <class T>
double scaled_error(const ct::tensor<T>& a, const ct::tensor<T>& b, const ct::tensor<T>& y) {
  const index_t m = a.shape()[0], k = a.shape()[1], n = b.shape()[1];
  double worst = 0;
  for (index_t i = 0; i < m; ++i)
    for (index_t j = 0; j < n; ++j) {
      double s = 0, mag = 0;
      for (index_t p = 0; p < k; ++p) {
        s += static_cast<double>(a(i, p)) * static_cast<double>(b(p, j));
        mag += std::fabs(static_cast<double>(a(i, p)) * static_cast<double>(b(p, j)));
      }
      worst = std::max(worst, std::fabs(static_cast<double>(y(i, j)) - s) / std::max(mag, 1e-300));
    }
  return worst;
}

}  // namespace

TEMPLATE_TEST_CASE("cblas_selector: large products go to the BLAS, partitioned through the bound executor",
                   "[selectors][matmul]", float, double) {
  using T = TestType;
  auto a = ct::random_uniform<T>({150, 97}, 1, T(-1), T(1));
  auto b = ct::random_uniform<T>({97, 70}, 2, T(-1), T(1));
  const auto ours = ct::matmul(a, b);
  ct::cblas_options o;
  o.rows_per_group = 32;
  std::atomic<int> asked{0};
  ct::selector blas = ct::cblas_selector(o);
  ct::selector_scope scope(ct::operation::matmul, [&](const ct::call_info& c) {
    ++asked;
    return blas(c);
  });
  ct_test::recording_executor rec;
  ct::tensor<T> y;
  {
    ct::executor_scope e(rec.get(1));
    y = ct::matmul(a, b);
  }
  CHECK(asked == 1);
  CHECK(rec.calls == 1);
  CHECK(rec.ranges.size() == 5);  // ceil(150 / 32) groups, each given alone
  const double eps = std::numeric_limits<T>::epsilon();
  CHECK(scaled_error(a, b, y) < 4 * 97 * eps);
  CHECK(scaled_error(a, b, ours) < 4 * 97 * eps);
  // Transposed views are passed to the BLAS as transposes, not copied.
  auto at = ct::eval(a.permute({1, 0}) + T(0)).permute({1, 0});  // [150, 97] with strides {1, 150}
  auto bt = ct::eval(b.permute({1, 0}) + T(0)).permute({1, 0});
  auto yt = ct::matmul(at, bt);
  CHECK(scaled_error(a, b, yt) < 4 * 97 * eps);
  // The same bits under every executor (fixed groups of rows).
  ct_test::executor_zoo zoo;
  for (auto& [name, exec] : zoo.all()) {
    ct::executor_scope e(exec);
    INFO(name);
    CHECK(ct_test::bitwise_equal(ct::matmul(a, b), y));
  }
}

TEST_CASE("cblas_selector: declines what it does not take; ct computes those", "[selectors][matmul]") {
  ct::selector_scope scope(ct::operation::matmul, ct::cblas_selector());
  auto small = ct::random_uniform<float>({8, 8}, 3, -1.0f, 1.0f);
  auto batched = ct::random_uniform<float>({2, 70, 70}, 4, -1.0f, 1.0f);
  auto big = ct::random_uniform<float>({100, 100}, 5, -1.0f, 1.0f);
  auto i32 = ct::tensor<std::int32_t>({100, 100});
  auto v = ct::random_uniform<float>({100}, 6, -1.0f, 1.0f);
  auto strided = big.slice(1, 0, 100, 2);  // no unit stride along either axis
  ct::tensor<float> r1, r2, r3, r4;
  ct::tensor<std::int32_t> r5;
  r1 = ct::matmul(small, small);
  r2 = ct::matmul(batched, batched);
  r3 = ct::matmul(big, v);
  r4 = ct::matmul(strided.permute({1, 0}), strided);
  r5 = ct::matmul(i32, i32);
  ct::selector_scope none(ct::operation::matmul, [](const ct::call_info&) { return ct::kernel{}; });
  CHECK(ct_test::bitwise_equal(r1, ct::matmul(small, small)));
  CHECK(ct_test::bitwise_equal(r2, ct::matmul(batched, batched)));
  CHECK(ct_test::bitwise_equal(r3, ct::matmul(big, v)));
  CHECK(ct_test::bitwise_equal(r4, ct::matmul(strided.permute({1, 0}), strided)));
  CHECK(ct_test::bitwise_equal(r5, ct::matmul(i32, i32)));
  ct::cblas_options bad;
  bad.rows_per_group = 0;
  CHECK_THROWS_AS(ct::cblas_selector(bad), ct::error);
}
#endif  // CT_TEST_HAVE_CBLAS
