// tests/expr/test_split_elementwise.cpp — opt-in split evaluation of elementwise expressions
// (settings::split_elementwise, issue 21): off by default (CONTRACT §4: elementwise is not
// partitioned), and when on, the same bits as one box under every executor, boxes along the
// outermost axis of extent >= 2, failures changing nothing.
#include <atomic>
#include <catch2/catch.hpp>
#include <stdexcept>
#include <vector>

#include "ct/ct.hpp"
#include "support/executor_zoo.hpp"
#include "support/executors.hpp"
#include "support/reference.hpp"

namespace {

using ct::index_t;

constexpr index_t big = (index_t{1} << 20) + 37;  // just past the threshold (src/expr/tuning.hpp)

}  // namespace

TEST_CASE("split elementwise: off by default, and below the threshold", "[split][scheduling]") {
  const auto a = ct::random_uniform<float>({big}, 1, -1.0f, 1.0f);
  const auto b = ct::random_uniform<float>({big}, 2, -1.0f, 1.0f);
  ct_test::count_recorder c;
  {
    ct::executor_scope e(c.get());
    auto y = ct::eval(a * b + 1.0f);  // not opted in: no executor call
    CHECK(c.counts.empty());
    ct::split_elementwise_scope on;
    const auto small = ct::random_uniform<float>({1000, 1000}, 3);  // 10^6 < 2^20 positions
    auto z = ct::eval(small * 2.0f);
    CHECK(c.counts.empty());
    auto w = ct::eval(ct::sum(small, -1));  // reductions are scheduled as always, split or not
    CHECK(c.counts.size() == 1);
  }
  CHECK_FALSE(ct::current_settings().split_elementwise);
}

TEST_CASE("split elementwise: boxes of the outermost axis, bitwise one box under every executor",
          "[split][scheduling]") {
  const auto x = ct::random_uniform<float>({big}, 4, -3.0f, 3.0f);
  const auto y = ct::random_uniform<float>({big}, 5, -3.0f, 3.0f);
  const auto m = ct::random_uniform<float>({1031, 1024}, 6, -3.0f, 3.0f);
  const auto row = ct::random_uniform<float>({1024}, 7, -1.0f, 1.0f);
  const auto t = ct::random_uniform<float>({1024, 1031}, 8, -1.0f, 1.0f).transpose();  // strided
  const auto lead = ct::random_uniform<float>({1, 3, 1 << 19}, 9, -1.0f, 1.0f);       // axis 0 has extent 1
  struct expr_case {
    const char* name;
    std::function<ct::tensor<float>()> make;
    index_t expected_boxes;
  };
  const std::vector<expr_case> cases = {
      {"a*b+c, rank 1", [&] { return ct::tensor<float>(ct::eval(x * y + 0.5f)); }, 4},
      {"exp and tanh, rank 1", [&] { return ct::tensor<float>(ct::eval(ct::exp(x) - ct::tanh(y))); }, 4},
      {"broadcast row, rank 2", [&] { return ct::tensor<float>(ct::eval(m * row + m)); }, 4},
      {"transposed operand", [&] { return ct::tensor<float>(ct::eval(m - 2.0f * t)); }, 4},
      {"leading extent-1 axis", [&] { return ct::tensor<float>(ct::eval(ct::sigmoid(lead))); }, 3},
  };
  for (const expr_case& ec : cases) {
    INFO(ec.name);
    const ct::tensor<float> one_box = ec.make();
    ct::split_elementwise_scope on;
    ct_test::count_recorder c;
    {
      ct::executor_scope e(c.get());
      CHECK(ct_test::bitwise_equal(ec.make(), one_box));
    }
    REQUIRE(c.counts.size() == 1);
    CHECK(c.counts[0] == ec.expected_boxes);
    ct_test::executor_zoo zoo;
    for (auto& [name, exec] : zoo.all()) {
      INFO(name);
      ct::executor_scope e(exec);
      CHECK(ct_test::bitwise_equal(ec.make(), one_box));
    }
  }
}

TEST_CASE("split elementwise: into a strided or 16-bit destination, and a large one in 64 boxes",
          "[split][scheduling]") {
  const auto m = ct::random_uniform<float>({1031, 1024}, 10, -3.0f, 3.0f);
  auto host = ct::zeros<float>({1031, 2048});
  auto out = host.slice(1, 0, std::nullopt, 2);
  ct::eval(m * m, out);
  auto narrow = ct::zeros<ct::bfloat16>({1031, 1024});
  ct::eval(ct::cast<ct::bfloat16>(m * 3.0f), narrow);
  ct::split_elementwise_scope on;
  ct_test::executor_zoo zoo;
  for (auto& [name, exec] : zoo.all()) {
    INFO(name);
    ct::executor_scope e(exec);
    auto host2 = ct::zeros<float>({1031, 2048});
    auto out2 = host2.slice(1, 0, std::nullopt, 2);
    ct::eval(m * m, out2);
    CHECK(ct_test::bitwise_equal(host2, host));
    auto narrow2 = ct::zeros<ct::bfloat16>({1031, 1024});
    ct::eval(ct::cast<ct::bfloat16>(m * 3.0f), narrow2);
    CHECK(ct_test::bitwise_equal(narrow2, narrow));
  }
  // 2^24 positions: 64 boxes (the cap).
  const auto big_x = ct::random_uniform<float>({4096, 4096}, 11);
  const ct::tensor<float> whole = [&] {
    ct::split_elementwise_scope off(false);
    return ct::tensor<float>(ct::eval(big_x * 2.0f + 1.0f));
  }();
  ct_test::count_recorder c;
  ct::executor_scope e(c.get());
  CHECK(ct_test::bitwise_equal(ct::tensor<float>(ct::eval(big_x * 2.0f + 1.0f)), whole));
  REQUIRE(c.counts.size() == 1);
  CHECK(c.counts[0] == 64);
}

TEST_CASE("split elementwise: a throwing functor leaves the destination unchanged", "[split][scheduling]") {
  const auto x = ct::random_uniform<float>({big}, 12, -1.0f, 1.0f);
  std::atomic<long> calls{0};
  const auto f = [&](float v) {
    if (calls.fetch_add(1) == 700000) throw std::runtime_error("planted");
    return v * 2.0f;
  };
  auto dest = ct::full<float>({big}, 5.0f);
  const auto before = dest.clone();
  ct::split_elementwise_scope on;
  ct_test::executor_zoo zoo;
  for (auto& [name, exec] : zoo.all()) {
    INFO(name);
    calls = 0;
    ct::executor_scope e(exec);
    CHECK_THROWS_AS(ct::eval(ct::map(f, x) + 1.0f, dest), std::runtime_error);
    CHECK(ct_test::bitwise_equal(dest, before));
  }
}
