// Unit tests of ct::tensor: layout, views, copies, factories, printing. Wrapping foreign
// memory (CONTRACT.md §5) is in tests/contract/s5_memory_failure.cpp.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "ct/ct.hpp"

using ct::dims;
using ct::index_t;

TEST_CASE("tensor: a new tensor is zero-filled, row-major and 64-byte aligned", "[tensor]") {
  ct::tensor<float> t(dims{2, 3, 4});
  CHECK(t.rank() == 3);
  CHECK(t.shape() == dims{2, 3, 4});
  CHECK(t.strides() == dims{12, 4, 1});
  CHECK(t.size() == 24);
  CHECK(t.is_contiguous());
  CHECK(reinterpret_cast<std::uintptr_t>(t.data()) % 64 == 0);
  for (index_t i = 0; i < 24; ++i) CHECK(t.data()[i] == 0.0f);
  CHECK(t.shape(-1) == 4);
}

namespace {
// Linux: whether the mapping holding p carries the huge-page advice (smaps' VmFlags "hg").
// -1 when that cannot be told (no smaps, or a kernel without transparent huge pages).
int has_huge_page_advice(const void* p) {
  if (!std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled")) return -1;
  std::ifstream smaps("/proc/self/smaps");
  if (!smaps) return -1;
  const auto at = reinterpret_cast<std::uintptr_t>(p);
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    std::uintptr_t lo = 0, hi = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> lo >> dash >> hi && dash == '-' && line.find(':') > line.find(' ')) {
      inside = lo <= at && at < hi;  // a mapping's first line: "lo-hi perms ..."
    } else if (inside && line.rfind("VmFlags:", 0) == 0) {
      return line.find(" hg") != std::string::npos ? 1 : 0;
    }
  }
  return -1;
}
}  // namespace

TEST_CASE("tensor: storage from 4 MiB on is 2 MiB aligned and advised for huge pages", "[tensor]") {
  // Just below the threshold: the usual 64-byte alignment, no advice asked for.
  ct::tensor<float> small(dims{static_cast<index_t>(ct::detail::large_storage_bytes / 4 - 16)});
  CHECK(reinterpret_cast<std::uintptr_t>(small.data()) % 64 == 0);
  // At it, and for another element type and an encoded tensor's bytes.
  ct::tensor<float> large(dims{1024, 1024});
  ct::tensor<double> wide(dims{3, 1024, 1024});
  const ct::encoded_tensor enc = ct::encode(ct::full<float>(dims{4096, 1024}, 127.0f), ct::formats::q8_0());
  REQUIRE(enc.size_bytes() >= ct::detail::large_storage_bytes);
  for (const void* p : {static_cast<const void*>(large.data()), static_cast<const void*>(wide.data()),
                        static_cast<const void*>(enc.data())}) {
    CHECK(reinterpret_cast<std::uintptr_t>(p) % (std::size_t{2} << 20) == 0);
    const int advised = has_huge_page_advice(p);
    if (advised >= 0) CHECK(advised == 1);
  }
  // Still zero-filled, and usable (127 encodes exactly: scale 1, quant 127).
  for (index_t i = 0; i < large.size(); i += 4099) CHECK(large.data()[i] == 0.0f);
  CHECK(wide.data()[wide.size() - 1] == 0.0);
  CHECK(ct::decode(enc).data()[4096 * 1024 - 1] == 127.0f);
}

TEST_CASE("tensor: every element type, ranks 0 to 8", "[tensor]") {
  ct::tensor<double> s(dims{});
  CHECK(s.rank() == 0);
  CHECK(s.size() == 1);
  CHECK(ct::tensor<std::int32_t>(dims{1, 2, 1, 2, 1, 2, 1, 2}).size() == 16);
  CHECK(ct::tensor<std::int64_t>(dims{3}).size() == 3);
  ct::tensor<bool> b(dims{4});
  b(2) = true;
  CHECK(sizeof(*b.data()) == 1);
  CHECK(b(2));
  CHECK_FALSE(b(1));
  CHECK_THROWS_AS(ct::tensor<float>(dims{1, 1, 1, 1, 1, 1, 1, 1, 1}), ct::shape_error);  // rank 9
}

TEST_CASE("tensor: element counts that overflow index_t are shape_errors", "[tensor]") {
  const index_t big = index_t{1} << 32;
  CHECK_THROWS_AS(ct::tensor<float>(dims{big, big}), ct::shape_error);
  CHECK_THROWS_WITH(ct::element_count(dims{big, big}), Catch::Contains("overflow"));
  CHECK_THROWS_AS(ct::tensor<float>(dims{2, -1}), ct::shape_error);
}

TEST_CASE("tensor: at() is bounds-checked with the shape in the message", "[tensor]") {
  auto t = ct::arange<float>(6).reshape({2, 3});
  CHECK(t.at(1, 2) == 5.0f);
  CHECK_THROWS_WITH(t.at(2, 0), Catch::Contains("[2, 3]") && Catch::Contains("axis 0"));
  CHECK_THROWS_AS(t.at(0, -1), ct::index_error);
  CHECK_THROWS_AS(t.at(0), ct::index_error);
#ifdef CT_CHECK_BOUNDS
  CHECK_THROWS_AS(t(0, 3), ct::index_error);  // debug builds check operator() too
#endif
}

TEST_CASE("tensor: copies share storage, clone does not", "[tensor]") {
  auto a = ct::zeros<int>(dims{3});
  auto b = a;
  b(1) = 7;
  CHECK(a(1) == 7);
  auto c = a.clone();
  c(1) = 9;
  CHECK(a(1) == 7);
}

TEST_CASE("tensor: slicing follows Python semantics", "[tensor]") {
  auto t = ct::arange<std::int64_t>(10);
  auto v = [](const ct::tensor<std::int64_t>& x) {
    std::vector<std::int64_t> out;
    for (index_t i = 0; i < x.size(); ++i) out.push_back(x(i));
    return out;
  };
  using V = std::vector<std::int64_t>;
  CHECK(v(t.slice(0, 2, 5)) == V{2, 3, 4});
  CHECK(v(t.slice(0, -3, {})) == V{7, 8, 9});
  CHECK(v(t.slice(0, {}, {}, 3)) == V{0, 3, 6, 9});
  CHECK(v(t.slice(0, {}, {}, -1)) == V{9, 8, 7, 6, 5, 4, 3, 2, 1, 0});
  CHECK(v(t.slice(0, 8, 2, -2)) == V{8, 6, 4});
  CHECK(v(t.slice(0, -100, 100)).size() == 10);  // clamped like Python
  CHECK(t.slice(0, 5, 2).size() == 0);
  CHECK_THROWS_AS(t.slice(0, 0, 5, 0), ct::index_error);
  CHECK_THROWS_AS(t.slice(1, 0, 5), ct::axis_error);
  CHECK_THROWS_WITH(t.slice(1, 0, 5), Catch::Contains("ct::slice") && Catch::Contains("axis 1") && Catch::Contains("[10]"));

  auto m = ct::arange<float>(12).reshape({3, 4});
  auto s = m.slice({{1, {}}, {{}, {}, 2}});
  CHECK(s.shape() == dims{2, 2});
  CHECK(s(0, 0) == 4.0f);
  CHECK(s(1, 1) == 10.0f);
  CHECK_FALSE(s.is_contiguous());
  s(0, 1) = -1.0f;  // a view writes through
  CHECK(m(1, 2) == -1.0f);
  CHECK(m.select(1, -1).shape() == dims{3});
  CHECK(m.select(1, -1)(2) == 11.0f);
  CHECK_THROWS_AS(m.select(0, 3), ct::index_error);
}

TEST_CASE("tensor: permute and transpose are views", "[tensor]") {
  auto t = ct::arange<float>(24).reshape({2, 3, 4});
  auto p = t.permute({2, 0, 1});
  CHECK(p.shape() == dims{4, 2, 3});
  for (index_t i = 0; i < 2; ++i)
    for (index_t j = 0; j < 3; ++j)
      for (index_t k = 0; k < 4; ++k) CHECK(p(k, i, j) == t(i, j, k));
  CHECK(t.transpose().shape() == dims{4, 3, 2});
  CHECK(t.transpose(0, -1)(3, 1, 0) == t(0, 1, 3));
  CHECK_THROWS_AS(t.permute({0, 0, 1}), ct::axis_error);
  CHECK_THROWS_AS(t.permute({0, 1}), ct::axis_error);
}

TEST_CASE("tensor: reshape is a view when possible, else a clear error", "[tensor]") {
  auto t = ct::arange<float>(24);
  auto r = t.reshape({2, -1, 4});
  CHECK(r.shape() == dims{2, 3, 4});
  CHECK(r.data() == t.data());
  CHECK(r(1, 2, 3) == 23.0f);
  CHECK_THROWS_WITH(t.reshape({5, -1}), Catch::Contains("[24]") && Catch::Contains("[5, -1]"));
  CHECK_THROWS_AS(t.reshape({-1, -1}), ct::shape_error);
  CHECK_THROWS_AS(t.reshape({7}), ct::shape_error);

  // A column slice keeps rows contiguous: merging the split inner axis is a view.
  auto m = ct::arange<float>(48).reshape({4, 12}).slice(1, 0, 6);  // shape [4, 6], strides [12, 1]
  auto v = m.reshape({4, 2, 3});
  CHECK(v.data() == m.data());
  CHECK(v(3, 1, 2) == m(3, 5));
  // Merging rows that are not adjacent in memory needs a copy.
  CHECK_THROWS_WITH(m.reshape({24}), Catch::Contains("without a copy"));
  auto c = m.contiguous().reshape({24});
  CHECK(c(23) == m(3, 5));
  // Transposed matrices: flattening needs a copy, adding unit axes does not.
  auto tr = ct::arange<float>(6).reshape({2, 3}).transpose();
  CHECK_THROWS_AS(tr.reshape({6}), ct::shape_error);
  auto u = tr.reshape({3, 1, 2});
  CHECK(u(2, 0, 1) == tr(2, 1));
}

TEST_CASE("tensor: broadcast_to, squeeze and unsqueeze", "[tensor]") {
  auto row = ct::arange<float>(3).reshape({1, 3});
  auto b = row.broadcast_to({4, 3});
  CHECK(b.strides() == dims{0, 1});
  CHECK(b(3, 2) == 2.0f);
  CHECK(row.broadcast_to({2, 4, 3})(1, 3, 1) == 1.0f);
  CHECK_THROWS_WITH(row.broadcast_to({4, 2}), Catch::Contains("[1, 3]") && Catch::Contains("[4, 2]"));
  auto s = ct::zeros<float>(dims{1, 3, 1});
  CHECK(s.squeeze().shape() == dims{3});
  CHECK(s.squeeze(-1).shape() == dims{1, 3});
  CHECK_THROWS_AS(s.squeeze(1), ct::shape_error);
  CHECK(s.unsqueeze(0).shape() == dims{1, 1, 3, 1});
  CHECK(s.unsqueeze(-1).shape() == dims{1, 3, 1, 1});
  CHECK_THROWS_AS(s.unsqueeze(5), ct::axis_error);
}

TEST_CASE("tensor: contiguous, assign and fill work on strided views", "[tensor]") {
  auto m = ct::arange<double>(12).reshape({3, 4});
  auto t = m.transpose();
  CHECK_FALSE(t.is_contiguous());
  auto c = t.contiguous();
  CHECK(c.is_contiguous());
  CHECK(c.data() != m.data());
  for (index_t i = 0; i < 4; ++i)
    for (index_t j = 0; j < 3; ++j) CHECK(c(i, j) == m(j, i));
  CHECK(m.contiguous().data() == m.data());
  m.slice(1, 1, 3).fill(-2.0);
  CHECK(m(2, 1) == -2.0);
  CHECK(m(2, 3) == 11.0);
  m.slice(0, 0, 1).assign(ct::from_list<double>({9, 8, 7, 6}));
  CHECK(m(0, 3) == 6.0);
  CHECK(m(1, 3) == 7.0);
}

TEST_CASE("tensor: factories", "[tensor]") {
  CHECK(ct::ones<int>(dims{2, 2})(1, 1) == 1);
  CHECK(ct::full<float>(dims{3}, 2.5f)(2) == 2.5f);
  CHECK(ct::scalar<double>(4.0).item() == 4.0);
  auto a = ct::arange<float>(1.0f, 2.0f, 0.25f);
  CHECK(a.size() == 4);
  CHECK(a(3) == 1.75f);
  CHECK(ct::arange<int>(5, 0, -2).size() == 3);
  CHECK_THROWS_AS(ct::arange<int>(0, 5, 0), ct::error);
  auto l = ct::from_list<int>({{1, 2, 3}, {4, 5, 6}});
  CHECK(l.shape() == dims{2, 3});
  CHECK(l(1, 0) == 4);
  CHECK(ct::from_list<float>({{{1, 2}, {3, 4}, {5, 6}}}).shape() == dims{1, 3, 2});
  CHECK_THROWS_WITH(ct::from_list<int>({{1, 2}, {3}}), Catch::Contains("ragged"));
  auto v = ct::from_vector<double>({1, 2, 3, 4, 5, 6}, {3, 2});
  CHECK(v(2, 1) == 6.0);
  CHECK_THROWS_AS(ct::from_vector<double>({1, 2, 3}, {2, 2}), ct::shape_error);
}

TEST_CASE("tensor: seeded random fills are reproducible and in range", "[tensor]") {
  auto a = ct::random_uniform<float>({1000}, 42, -2.0f, 3.0f);
  auto b = ct::random_uniform<float>({1000}, 42, -2.0f, 3.0f);
  auto c = ct::random_uniform<float>({1000}, 43, -2.0f, 3.0f);
  CHECK(ct::equal(a, b));
  CHECK_FALSE(ct::equal(a, c));
  double mean = 0;
  for (index_t i = 0; i < 1000; ++i) {
    CHECK(a(i) >= -2.0f);
    CHECK(a(i) < 3.0f);
    mean += a(i) / 1000.0;
  }
  CHECK(std::fabs(mean - 0.5) < 0.2);
  auto n = ct::random_normal<double>({20000}, 7);
  double m = 0, var = 0;
  for (index_t i = 0; i < n.size(); ++i) m += n(i) / 20000.0;
  for (index_t i = 0; i < n.size(); ++i) var += (n(i) - m) * (n(i) - m) / 20000.0;
  CHECK(std::fabs(m) < 0.05);
  CHECK(std::fabs(var - 1.0) < 0.05);
  auto k = ct::random_uniform<int>({500}, 1, 3, 7);
  for (index_t i = 0; i < 500; ++i) CHECK((k(i) >= 3 && k(i) < 7));
}

TEST_CASE("tensor: printing looks like NumPy", "[tensor]") {
  CHECK(ct::to_string(ct::from_list<int>({{1, 2, 3}, {4, 5, 6}})) == "[[1, 2, 3],\n [4, 5, 6]]");
  CHECK(ct::to_string(ct::scalar<float>(1.5f)) == "1.5");
  CHECK(ct::to_string(ct::from_list<bool>({true, false})) == "[true, false]");
  CHECK(ct::to_string(ct::arange<int>(8).reshape({2, 2, 2})) == "[[[0, 1],\n  [2, 3]],\n\n [[4, 5],\n  [6, 7]]]");
  std::string big = ct::to_string(ct::arange<int>(2000));
  CHECK(big.find("[0, 1, 2, ..., 1997, 1998, 1999]") == 0);
}

TEST_CASE("tensor: equal and allclose", "[tensor]") {
  auto a = ct::from_list<double>({1.0, 2.0, 3.0});
  auto b = ct::from_list<double>({1.0, 2.0 + 1e-9, 3.0});
  CHECK_FALSE(ct::equal(a, b));
  CHECK(ct::allclose(a, b));
  CHECK_FALSE(ct::allclose(a, b, 0.0, 1e-12));
  CHECK(ct::allclose(ct::from_list<double>({2.0, 2.0}), ct::scalar<double>(2.0)));  // broadcasts
  CHECK_THROWS_AS(ct::allclose(a, ct::zeros<double>(dims{2})), ct::shape_error);
  auto nan = ct::from_list<double>({std::nan("")});
  CHECK_FALSE(ct::allclose(nan, nan));
  CHECK(ct::allclose(nan, nan, 1e-5, 1e-8, true));
  CHECK_FALSE(ct::equal(a, a.reshape({3, 1})));
}

TEST_CASE("tensor: elements_distinct tells views whose elements share memory", "[tensor]") {
  using ct::dims;
  CHECK(ct::elements_distinct(dims{3, 4}, dims{4, 1}));        // row-major
  CHECK(ct::elements_distinct(dims{3, 4}, dims{1, 3}));        // column-major
  CHECK(ct::elements_distinct(dims{3, 4}, dims{-4, -1}));      // reversed
  CHECK(ct::elements_distinct(dims{3, 4}, dims{10, 2}));       // padded, strided
  CHECK(ct::elements_distinct(dims{3, 1, 4}, dims{4, 0, 1}));  // stride 0 on an extent-1 axis
  CHECK(ct::elements_distinct(dims{0, 4}, dims{0, 0}));        // no elements
  CHECK(ct::elements_distinct(dims{}, dims{}));                // a scalar
  CHECK_FALSE(ct::elements_distinct(dims{3, 4}, dims{0, 1}));  // broadcast rows
  CHECK_FALSE(ct::elements_distinct(dims{4, 4}, dims{1, 1}));  // (i, j) at i + j
  CHECK_FALSE(ct::elements_distinct(dims{2, 3}, dims{2, 1}));  // (0, 2) and (1, 0) both at 2
  CHECK(ct::elements_distinct(dims{2, 3}, dims{3, 1}));        // exactly adjacent rows
}
