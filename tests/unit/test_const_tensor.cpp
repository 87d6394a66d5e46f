// ct::const_tensor and ct::wrap(const T*): read-only foreign memory as an operand (issue 21's
// API gap). The memory is a page the operating system refuses to write (PROT_READ), so a
// write through anything ct builds from it would crash the test instead of passing unseen.
// That writing through a const_tensor does not compile is in tests/expr/test_type_rules.cpp.
#include <catch2/catch.hpp>
#include <sys/mman.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "ct/ct.hpp"

using ct::dims;
using ct::index_t;

namespace {

// n floats in pages mapped read-only after they are filled with f(i).
class read_only_floats {
 public:
  template <class F>
  read_only_floats(std::size_t n, F f) {
    const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    bytes_ = (n * sizeof(float) + page - 1) / page * page;
    void* p = ::mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(p != MAP_FAILED);
    data_ = static_cast<float*>(p);
    for (std::size_t i = 0; i < n; ++i) data_[i] = f(i);
    REQUIRE(::mprotect(p, bytes_, PROT_READ) == 0);
  }
  ~read_only_floats() { ::munmap(data_, bytes_); }
  read_only_floats(const read_only_floats&) = delete;
  read_only_floats& operator=(const read_only_floats&) = delete;
  const float* data() const { return data_; }

 private:
  float* data_ = nullptr;
  std::size_t bytes_ = 0;
};

float value(std::size_t i) { return static_cast<float>(static_cast<int>(i * 37 % 23) - 11) * 0.125f; }

}  // namespace

TEST_CASE("const_tensor: ct::wrap of a const pointer reads the memory in place", "[tensor][const_tensor]") {
  read_only_floats mem(24, value);
  const ct::const_tensor<float> c = ct::wrap(mem.data(), dims{2, 3, 4});
  CHECK(c.shape() == dims{2, 3, 4});
  CHECK(c.strides() == dims{12, 4, 1});
  CHECK(c.size() == 24);
  CHECK(c.data() == mem.data());
  CHECK_FALSE(c.owns_storage());
  CHECK(c.is_contiguous());
  CHECK(c(1, 2, 3) == value(23));
  CHECK(c.at(0, 1, 2) == value(6));
  CHECK_THROWS_AS(c.at(2, 0, 0), ct::index_error);
  // Views are read-only too and point into the same memory.
  const ct::const_tensor<float> t = c.transpose(0, 2);
  CHECK(t.shape() == dims{4, 3, 2});
  CHECK(t(3, 2, 1) == value(23));
  CHECK(c.select(0, 1).slice(1, 1, std::nullopt, 2)(0, 0) == value(12 + 1));
  CHECK(c.reshape(dims{6, 4})(5, 3) == value(23));
  CHECK(ct::wrap(mem.data(), dims{1, 4}).broadcast_to(dims{3, 4})(2, 1) == value(1));
  // Explicit strides, and the errors of the writable wrap.
  const auto every_other = ct::wrap(mem.data(), dims{3}, dims{2});
  CHECK(every_other(2) == value(4));
  CHECK_THROWS_AS(ct::wrap(mem.data(), dims{2, 3}, dims{1}), ct::shape_error);
  CHECK_THROWS_AS(ct::wrap(static_cast<const float*>(nullptr), dims{2}), ct::error);
  CHECK(ct::wrap(static_cast<const float*>(nullptr), dims{0}).size() == 0);
  CHECK_THROWS_AS(c.slice(0, 0, 1, 0), ct::index_error);
  // clone() is a writable copy.
  ct::tensor<float> copy = c.clone();
  copy(0, 0, 0) = 100.0f;
  CHECK(c(0, 0, 0) == value(0));
  CHECK(copy(0, 0, 1) == value(1));
}

TEST_CASE("const_tensor: a tensor converts to a read-only view of the same elements", "[tensor][const_tensor]") {
  ct::tensor<double> t(dims{2, 2});
  const ct::const_tensor<double> c = t;
  t(1, 0) = 2.5;
  CHECK(c(1, 0) == 2.5);
  CHECK(c.data() == t.data());
  CHECK(c.owns_storage());
  // A non-const pointer still gives a writable tensor.
  std::vector<float> v(4, 1.0f);
  ct::tensor<float> w = ct::wrap(v.data(), dims{4});
  w(3) = 7.0f;
  CHECK(v[3] == 7.0f);
}

TEST_CASE("const_tensor: an operand of expressions, products and encode, never written", "[tensor][const_tensor]") {
  constexpr index_t m = 5, k = 64, n = 3;
  read_only_floats a_mem(static_cast<std::size_t>(m * k), value);
  read_only_floats b_mem(static_cast<std::size_t>(k * n), [](std::size_t i) { return value(i + 5); });
  const auto a = ct::wrap(a_mem.data(), dims{m, k});
  const auto b = ct::wrap(b_mem.data(), dims{k, n});

  // A fused expression with a reducer, and a view of the read-only tensor in it.
  ct::tensor<float> y(dims{m, k});
  ct::eval(ct::exp(a - ct::max(a, -1)) * 2.0f + a, y);
  for (index_t i = 0; i < m; ++i) {
    double mx = -1e300;
    for (index_t j = 0; j < k; ++j) mx = std::max(mx, static_cast<double>(a(i, j)));
    for (index_t j = 0; j < k; ++j) {
      const double want = std::exp(static_cast<double>(a(i, j)) - mx) * 2 + a(i, j);
      CHECK(std::abs(y(i, j) - want) <= 1e-5 * (1 + std::abs(want)));
    }
  }
  const ct::tensor<float> s = ct::eval(ct::sum(b.transpose(), -1));
  for (index_t j = 0; j < n; ++j) {
    double want = 0;
    for (index_t i = 0; i < k; ++i) want += b(i, j);
    CHECK(std::abs(s(j) - want) <= 1e-5 * (1 + std::abs(want)));
  }
  // eval(e) of a const_tensor alone is a writable copy.
  ct::tensor<float> copy = ct::eval(a);
  CHECK(copy(4, 63) == a(4, 63));

  // Products: both operands read-only, one of each, and dot.
  const ct::tensor<float> p = ct::matmul(a, b);
  ct::tensor<float> q(dims{m, n});
  ct::matmul(a.clone(), b, q);
  for (index_t i = 0; i < m; ++i)
    for (index_t j = 0; j < n; ++j) {
      double want = 0;
      for (index_t t = 0; t < k; ++t) want += static_cast<double>(a(i, t)) * b(t, j);
      CHECK(std::abs(p(i, j) - want) <= 1e-5 * (1 + std::abs(want)));
      CHECK(q(i, j) == p(i, j));
    }
  double want_dot = 0;
  for (index_t t = 0; t < k; ++t) want_dot += static_cast<double>(a(0, t)) * a(1, t);
  CHECK(std::abs(ct::dot(a.select(0, 0), a.select(0, 1)) - want_dot) <= 1e-5 * (1 + std::abs(want_dot)));

  // Encoded weights from read-only floats, and read-only activations: the same bytes and
  // products as from writable copies.
  const ct::encoded_tensor w = ct::encode(a.slice(1, 0, 32), ct::formats::q8_0());
  const ct::encoded_tensor w_copy = ct::encode(a.slice(1, 0, 32).clone(), ct::formats::q8_0());
  REQUIRE(w.size_bytes() == w_copy.size_bytes());
  CHECK(std::memcmp(w.data(), w_copy.data(), w.size_bytes()) == 0);
  const auto x = b.select(1, 0).slice(0, 0, 32);  // 32 read-only activations, stride 3
  const ct::tensor<float> wx = ct::matmul(w, x);
  const ct::tensor<float> wx_copy = ct::matmul(w_copy, x.clone());
  for (index_t i = 0; i < m; ++i) CHECK(wx(i) == wx_copy(i));
  const ct::tensor<float> xw = ct::matmul(a.slice(1, 0, 32), w.transpose());
  const ct::tensor<float> xw_copy = ct::matmul(a.slice(1, 0, 32).clone(), w.transpose());
  for (index_t i = 0; i < m; ++i)
    for (index_t j = 0; j < m; ++j) CHECK(xw(i, j) == xw_copy(i, j));
}
