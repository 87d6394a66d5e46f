// Operation selectors (ct/select/selector.hpp, docs/selectors.md): the lookup order, declining,
// thread-bound overrides, the execution contract of a selected kernel (once, on the calling
// thread, the executor untouched unless the kernel uses it, staged results), validation before
// any selector runs, and ct::unsupported_operation for what nobody implements.
#include <atomic>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "contract/helpers.hpp"
#include "ct/ct.hpp"
#include "support/executors.hpp"
#include "support/reference.hpp"

using ct::index_t;

namespace {

/// Registers (or attaches) a selector for the test's scope and removes it afterwards: the
/// registry is global and other tests must not see it.
struct registration {
  ct::selector_id id;
  explicit registration(ct::selector_id i) : id(i) {}
  ~registration() { ct::remove_selector(id); }
  registration(const registration&) = delete;
  registration& operator=(const registration&) = delete;
};

/// Element (i, j) of a 2-D float operand, through its strides.
float at(const ct::operand_view& o, index_t i, index_t j) {
  return static_cast<const float*>(o.data)[i * o.strides[0] + j * o.strides[1]];
}

/// A kernel that fills the target with one value (float targets).
ct::kernel fill_kernel(float value, std::atomic<int>* runs = nullptr) {
  return ct::kernel{[value, runs](const ct::call_info& call, const ct::target& out) {
    if (out.type != ct::dtype::f32)
      throw std::logic_error("fill_kernel: a float32 kernel asked for " + std::string(call.name) + " into " +
                             ct::dtype_name(out.type));
    if (runs) ++*runs;
    float* p = static_cast<float*>(out.data);
    const index_t n = ct::element_count(out.shape);
    // Staged targets are row-major and contiguous.
    for (index_t i = 0; i < n; ++i) p[i] = value;
  }};
}

/// A selector answering every call of its operation with fill_kernel(value), counting asks.
ct::selector filler(float value, std::atomic<int>* asked = nullptr) {
  return [value, asked](const ct::call_info&) {
    if (asked) ++*asked;
    return fill_kernel(value);
  };
}

/// Counts the calls an executor receives (serial underneath).
struct counting_executor {
  std::atomic<int> calls{0};
  ct::executor get() {
    return [this](index_t count, ct::range_callback cb) {
      ++calls;
      cb(0, count);
    };
  }
};

bool all_equal(const ct::tensor<float>& t, float v) {
  auto c = t.contiguous();
  for (index_t i = 0; i < c.size(); ++i)
    if (c.data()[i] != v) return false;
  return true;
}

/// A row softmax along the last axis of a 2-D float operand: a "hand-written kernel" a user
/// might bring, computed in double and rounded once (so it differs from ct's bits).
ct::kernel user_softmax() {
  return ct::kernel{[](const ct::call_info& call, const ct::target& out) {
    const ct::operand_view& x = call.operands[0];
    const index_t rows = x.shape[0], cols = x.shape[1];
    float* y = static_cast<float*>(out.data);
    for (index_t i = 0; i < rows; ++i) {
      double m = -INFINITY, s = 0;
      for (index_t j = 0; j < cols; ++j) m = std::max(m, static_cast<double>(at(x, i, j)));
      for (index_t j = 0; j < cols; ++j) s += std::exp(at(x, i, j) - m);
      for (index_t j = 0; j < cols; ++j)
        y[i * out.strides[0] + j * out.strides[1]] = static_cast<float>(std::exp(at(x, i, j) - m) / s);
    }
  }};
}

}  // namespace

TEST_CASE("selectors: a registered eval selector sees the softmax root and replaces ct's kernel", "[selectors]") {
  auto x = ct::random_uniform<float>({7, 33}, 3, -4.0f, 4.0f);
  const auto reference = ct::eval(ct::softmax(x, -1));  // before any selector
  const auto sum_reference = ct::eval(ct::sum(x, 0));
  std::vector<std::string> seen;
  int axis_seen = -2;
  registration r(ct::add_selector(ct::operation::eval, [&](const ct::call_info& call) {
    seen.emplace_back(call.name);
    if (call.name != "softmax" || call.operands.size() != 1 || call.operands[0].type != ct::dtype::f32 ||
        call.operands[0].shape.size() != 2)
      return ct::kernel{};
    axis_seen = call.axis;
    if (call.axis != 1) return ct::kernel{};
    return user_softmax();
  }));
  auto y = ct::eval(ct::softmax(x, -1));
  REQUIRE(seen == std::vector<std::string>{"softmax"});
  CHECK(axis_seen == 1);  // normalised
  // The user kernel's values: a double-precision softmax rounded once.
  auto xv = ct_test::values(x), yv = ct_test::values(y);
  bool differs_from_ct = false;
  for (index_t i = 0; i < 7; ++i) {
    double m = -INFINITY, s = 0;
    for (index_t j = 0; j < 33; ++j) m = std::max(m, xv[static_cast<std::size_t>(i * 33 + j)]);
    for (index_t j = 0; j < 33; ++j) s += std::exp(xv[static_cast<std::size_t>(i * 33 + j)] - m);
    for (index_t j = 0; j < 33; ++j) {
      const double e = std::exp(xv[static_cast<std::size_t>(i * 33 + j)] - m) / s;
      CHECK(yv[static_cast<std::size_t>(i * 33 + j)] == static_cast<double>(static_cast<float>(e)));
      differs_from_ct = differs_from_ct || reference(i, j) != y(i, j);
    }
  }
  CHECK(differs_from_ct);  // so the values above really came from the user kernel
  // Other roots are declined and computed by ct, bitwise as without selectors.
  seen.clear();
  auto s = ct::eval(ct::sum(x, 0));
  CHECK(seen == std::vector<std::string>{"sum"});
  CHECK(ct_test::bitwise_equal(s, sum_reference));
}

TEST_CASE("selectors: eval call description: names, axes, epsilon, operands in first-use order", "[selectors]") {
  auto x = ct::random_uniform<float>({4, 6}, 5, -1.0f, 1.0f);
  auto w = ct::random_uniform<float>({6}, 6, 0.5f, 1.5f);
  auto b = ct::random_uniform<float>({6}, 7, -1.0f, 1.0f);
  std::vector<ct::call_info> calls;
  ct::selector_scope scope(ct::operation::eval, [&](const ct::call_info& c) {
    calls.push_back(c);
    return ct::kernel{};  // decline: ct computes
  });
  ct::eval(ct::layer_norm(x, 1, 1e-5f, w, b));
  ct::eval(ct::rms_norm(x, -1, 0.25f));
  ct::eval(ct::log_softmax(x, 0));
  ct::eval(ct::max(x, 1));
  ct::eval(x + w);
  ct::eval(ct::exp(x));
  ct::eval(ct::sum(x));  // every axis: no single axis
  ct::eval(ct::softmax(x, 1) * 2.0f);  // the root is the product, not the softmax
  REQUIRE(calls.size() == 8);
  CHECK(calls[0].name == "layer_norm");
  CHECK(calls[0].axis == 1);
  CHECK(calls[0].eps == static_cast<double>(1e-5f));
  REQUIRE(calls[0].operands.size() == 3);
  CHECK(calls[0].operands[0].data == x.data());
  CHECK(calls[0].operands[1].data == w.data());
  CHECK(calls[0].operands[2].data == b.data());
  CHECK(calls[0].operands[1].shape == ct::dims{6});  // its own shape, not the broadcast one
  CHECK(calls[0].destination.shape == ct::dims{4, 6});
  CHECK(calls[0].destination.data == nullptr);
  CHECK(calls[0].distinct_types() == std::vector<std::string>{"float32"});
  CHECK(calls[1].name == "rms_norm");
  CHECK(calls[1].axis == 1);
  CHECK(calls[1].eps == 0.25);
  CHECK(calls[2].name == "log_softmax");
  CHECK(calls[2].axis == 0);
  CHECK(calls[3].name == "max");
  CHECK(calls[3].axis == 1);
  CHECK(calls[3].destination.shape == ct::dims{4});
  CHECK(calls[4].name == "operator+");
  CHECK(calls[4].axis == -1);
  CHECK(calls[5].name == "exp");
  CHECK(calls[6].name == "sum");
  CHECK(calls[6].axis == -1);
  CHECK(calls[6].destination.shape == ct::dims{});
  CHECK(calls[7].name == "operator*");
  for (const auto& c : calls) CHECK(c.op == ct::operation::eval);
}

TEST_CASE("selectors: lookup order: thread scopes innermost first, then the newest registration, then types in operand order",
          "[selectors]") {
  auto a = ct::random_uniform<float>({3, 4}, 1, -1.0f, 1.0f);
  auto b = ct::random_uniform<float>({4, 5}, 2, -1.0f, 1.0f);
  ct::tensor<float> out({3, 5});
  std::atomic<int> asked_old{0}, asked_new{0}, asked_type{0};
  {
    registration attached(ct::attach_selector(ct::dtype::f32, ct::operation::matmul, filler(3.0f, &asked_type)));
    ct::matmul(a, b, out);
    CHECK(all_equal(out, 3.0f));  // the type's selector, when nothing else is there
    registration older(ct::add_selector(ct::operation::matmul, filler(1.0f, &asked_old)));
    registration newer(ct::add_selector(ct::operation::matmul, filler(2.0f, &asked_new)));
    ct::matmul(a, b, out);
    CHECK(all_equal(out, 2.0f));  // the newest registration wins; the older one is not asked
    CHECK(asked_new == 1);
    CHECK(asked_old == 0);
    CHECK(asked_type == 1);
    {
      ct::selector_scope outer(ct::operation::matmul, filler(4.0f));
      ct::matmul(a, b, out);
      CHECK(all_equal(out, 4.0f));
      {
        ct::selector_scope inner(ct::operation::matmul, filler(5.0f));
        ct::matmul(a, b, out);
        CHECK(all_equal(out, 5.0f));
        // A scope of another family is not asked for matmul.
        ct::selector_scope other(ct::operation::eval, filler(6.0f));
        ct::matmul(a, b, out);
        CHECK(all_equal(out, 5.0f));
      }
      ct::matmul(a, b, out);
      CHECK(all_equal(out, 4.0f));
    }
    ct::matmul(a, b, out);
    CHECK(all_equal(out, 2.0f));
    {
      // A declining newer registration passes the call on to the older one.
      registration decliner(ct::add_selector(ct::operation::matmul, [](const ct::call_info&) { return ct::kernel{}; }));
      ct::matmul(a, b, out);
      CHECK(all_equal(out, 2.0f));
    }
  }
  // Everything removed: ct's own product again, bitwise what it gives without selectors.
  auto want = ct::matmul(a, b);
  ct::matmul(a, b, out);
  CHECK(ct_test::bitwise_equal(out, want));
}

TEST_CASE("selectors: attached selectors are visited per distinct operand type, in operand order", "[selectors]") {
  auto x = ct::random_uniform<float>({4, 64}, 9, -1.0f, 1.0f);
  auto w = ct::encode(ct::random_uniform<float>({5, 64}, 10, -1.0f, 1.0f), ct::formats::q8_0());
  std::vector<std::string> order;
  auto recorder = [&](std::string who) {
    return [&order, who](const ct::call_info& c) {
      order.push_back(who + ":" + std::string(c.name));
      return ct::kernel{};
    };
  };
  registration on_f32(ct::attach_selector(ct::dtype::f32, ct::operation::encoded_matmul, recorder("float32")));
  registration on_q8(ct::attach_selector(ct::formats::q8_0(), ct::operation::encoded_matmul, recorder("q8_0")));
  registration on_q4(ct::attach_selector(ct::formats::q4_0(), ct::operation::encoded_matmul, recorder("q4_0")));
  auto y1 = ct::matmul(x, w.transpose());  // operands (x, w): float32 first
  auto y2 = ct::matmul(w, x.permute({1, 0}));  // operands (w, x): q8_0 first
  CHECK(order == std::vector<std::string>{"float32:x·wᵀ", "q8_0:x·wᵀ", "q8_0:w·x", "float32:w·x"});
  // Every selector declined: ct computed both, as without selectors.
  ct::tensor<float> want1, want2;
  {
    ct::remove_selector(on_f32.id);
    ct::remove_selector(on_q8.id);
    ct::remove_selector(on_q4.id);
    want1 = ct::matmul(x, w.transpose());
    want2 = ct::matmul(w, x.permute({1, 0}));
    on_f32.id = ct::attach_selector(ct::dtype::f32, ct::operation::encoded_matmul, recorder("float32"));
    on_q8.id = ct::attach_selector(ct::formats::q8_0(), ct::operation::encoded_matmul, recorder("q8_0"));
    on_q4.id = ct::attach_selector(ct::formats::q4_0(), ct::operation::encoded_matmul, recorder("q4_0"));
  }
  CHECK(ct_test::bitwise_equal(y1, want1));
  CHECK(ct_test::bitwise_equal(y2, want2));
}

TEST_CASE("selectors: an encoded product selected by its format: the call shows the weight's bytes and the mode",
          "[selectors]") {
  auto wf = ct::random_uniform<float>({6, 64}, 11, -1.0f, 1.0f);
  auto w = ct::encode(wf, ct::formats::q4_0());
  auto x = ct::random_uniform<float>({64}, 12, -1.0f, 1.0f);
  ct::call_info seen;
  // A "custom dot product" for q4_0: decode each row with the format's decoder and dot in double.
  registration r(ct::attach_selector(ct::formats::q4_0(), ct::operation::encoded_matmul, [&](const ct::call_info& c) {
    seen = c;
    return ct::kernel{[](const ct::call_info& call, const ct::target& out) {
      const ct::operand_view& wv = call.operands[0];
      const ct::operand_view& xv = call.operands[1];
      const index_t n = wv.shape[0], k = wv.shape[1];
      const std::size_t row_bytes = wv.encoding->row_bytes(k);
      std::vector<float> row(static_cast<std::size_t>(k));
      for (index_t i = 0; i < n; ++i) {
        wv.encoding->traits().decode_row(static_cast<const unsigned char*>(wv.data) + static_cast<std::size_t>(i) * row_bytes,
                                         row.data(), k);
        double s = 0;
        for (index_t j = 0; j < k; ++j)
          s += static_cast<double>(row[static_cast<std::size_t>(j)]) *
               static_cast<const float*>(xv.data)[j * xv.strides[0]];
        static_cast<float*>(out.data)[i * out.strides[0]] = static_cast<float>(s);
      }
    }};
  }));
  auto y = ct::matmul(w, x, ct::encoded_mode::exact);
  CHECK(seen.op == ct::operation::encoded_matmul);
  CHECK(seen.name == "w·x");
  CHECK_FALSE(seen.quantized);
  REQUIRE(seen.operands.size() == 2);
  REQUIRE(seen.operands[0].encoding.has_value());
  CHECK(*seen.operands[0].encoding == ct::formats::q4_0());
  CHECK(seen.operands[0].data == w.data());
  CHECK(seen.operands[0].type_name() == "q4_0");
  CHECK_FALSE(seen.operands[1].encoding.has_value());
  CHECK(seen.distinct_types() == std::vector<std::string>{"q4_0", "float32"});
  // Against a reference from the decoded weights, in double.
  auto wd = ct_test::values(ct::decode(w)), xv = ct_test::values(x), yv = ct_test::values(y);
  for (index_t i = 0; i < 6; ++i) {
    double s = 0;
    for (index_t j = 0; j < 64; ++j) s += wd[static_cast<std::size_t>(i * 64 + j)] * xv[static_cast<std::size_t>(j)];
    CHECK(yv[static_cast<std::size_t>(i)] == static_cast<double>(static_cast<float>(s)));
  }
  ct::matmul(w, x);
  CHECK(seen.quantized);
}

TEST_CASE("selectors: a thread-bound selector is not seen by other threads or inside parallel_for callbacks",
          "[selectors][executor]") {
  auto a = ct::random_uniform<float>({8, 8}, 1, -1.0f, 1.0f);
  const auto want = ct::matmul(a, a);
  ct::selector_scope mine(ct::operation::matmul, filler(7.0f));
  CHECK(all_equal(ct::matmul(a, a), 7.0f));
  ct::tensor<float> other;
  std::thread([&] { other = ct::matmul(a, a); }).join();
  CHECK(ct_test::bitwise_equal(other, want));
  // Inside callbacks, on whatever thread the executor uses (here: this one), like the
  // executor binding: no thread-bound selectors.
  ct::tensor<float> inside;
  ct::parallel_for(2, [&](index_t s, index_t) {
    if (s == 0) inside = ct::matmul(a, a);
  });
  CHECK(ct_test::bitwise_equal(inside, want));
  // And after the callbacks, the scope is back.
  CHECK(all_equal(ct::matmul(a, a), 7.0f));
}

TEST_CASE("selectors: the selected kernel runs once, on the calling thread, with the executor bound but not called",
          "[selectors][executor]") {
  auto x = ct::random_uniform<float>({64, 64}, 3, -1.0f, 1.0f);
  counting_executor counter;
  ct::executor_scope scope(counter.get());
  ct::eval(ct::softmax(x, -1));  // ct's own: scheduled through the executor
  REQUIRE(counter.calls == 1);
  std::atomic<int> runs{0};
  std::thread::id ran_on;
  bool executor_bound = false;
  ct::selector_scope sel(ct::operation::eval, [&](const ct::call_info&) {
    return ct::kernel{[&](const ct::call_info&, const ct::target& out) {
      ++runs;
      ran_on = std::this_thread::get_id();
      executor_bound = static_cast<bool>(ct::current_executor());
      std::memset(out.data, 0, static_cast<std::size_t>(ct::element_count(out.shape)) * sizeof(float));
    }};
  });
  auto y = ct::eval(ct::softmax(x, -1));
  CHECK(runs == 1);
  CHECK(ran_on == std::this_thread::get_id());
  CHECK(executor_bound);
  CHECK(counter.calls == 1);  // not called for the selected operation
  CHECK(all_equal(y, 0.0f));
}

TEST_CASE("selectors: a kernel that uses the executor through parallel_for obeys the range contract",
          "[selectors][executor]") {
  auto a = ct::random_uniform<float>({37, 19}, 4, -1.0f, 1.0f);
  auto b = ct::random_uniform<float>({19, 23}, 5, -1.0f, 1.0f);
  // Row-partitioned naive product in double, rounded once: each output row by one range.
  auto rows_kernel = [](const ct::call_info& call, const ct::target& out) {
    const ct::operand_view &av = call.operands[0], &bv = call.operands[1];
    const index_t m = av.shape[0], k = av.shape[1], n = bv.shape[1];
    ct::parallel_for(m, [&](index_t r0, index_t r1) {
      for (index_t i = r0; i < r1; ++i)
        for (index_t j = 0; j < n; ++j) {
          double s = 0;
          for (index_t p = 0; p < k; ++p) s += static_cast<double>(at(av, i, p)) * at(bv, p, j);
          static_cast<float*>(out.data)[i * out.strides[0] + j * out.strides[1]] = static_cast<float>(s);
        }
    });
  };
  ct::selector_scope sel(ct::operation::matmul, [&](const ct::call_info&) { return ct::kernel{rows_kernel}; });
  auto av = ct_test::values(a), bv = ct_test::values(b);
  std::vector<double> want(37 * 23);
  for (index_t i = 0; i < 37; ++i)
    for (index_t j = 0; j < 23; ++j) {
      double s = 0;
      for (index_t p = 0; p < 19; ++p) s += av[static_cast<std::size_t>(i * 19 + p)] * bv[static_cast<std::size_t>(p * 23 + j)];
      want[static_cast<std::size_t>(i * 23 + j)] = static_cast<double>(static_cast<float>(s));
    }
  ct_test::recording_executor rec;
  for (auto& [name, exec] : std::vector<std::pair<std::string, ct::executor>>{
           {"checked serial 64", ct::checked_executor(ct_test::serial_64_executor())},
           {"checked three-worker pool", ct::checked_executor(ct_test::three_worker_executor())},
           {"recording, chunks of 5", rec.get(5)}}) {
    ct::executor_scope scope(exec);
    auto y = ct::matmul(a, b);
    INFO(name);
    CHECK(ct_test::values(y) == want);
  }
  CHECK(rec.calls == 1);
  CHECK(rec.ranges.size() == 8);  // 37 rows in ranges of 5
  // A range outside [0, count) is refused as for any caller.
  ct::executor_scope bad([](index_t, ct::range_callback cb) { cb(0, 100); });
  CHECK_THROWS_AS(ct::matmul(a, b), ct::executor_error);
}

TEST_CASE("selectors: a throwing kernel leaves the destination unchanged; staged kernels may alias their inputs",
          "[selectors]") {
  auto x = ct::random_uniform<float>({5, 9}, 6, -1.0f, 1.0f);
  const auto before = x.clone();
  {
    ct::selector_scope sel(ct::operation::eval, [](const ct::call_info&) {
      return ct::kernel{[](const ct::call_info&, const ct::target& out) {
        static_cast<float*>(out.data)[0] = 42.0f;  // a partial write into the staging buffer
        throw std::runtime_error("user kernel failed");
      }};
    });
    CHECK_THROWS_WITH(ct::eval(ct::softmax(x, -1), x), "user kernel failed");
    CHECK(ct_test::bitwise_equal(x, before));
  }
  {
    // In place: the kernel reads x while ct stages its output, so the result is the softmax
    // of the original values.
    std::vector<const void*> targets;
    ct::selector_scope sel(ct::operation::eval, [&](const ct::call_info&) {
      return ct::kernel{[&targets, k = user_softmax()](const ct::call_info& call, const ct::target& out) {
        targets.push_back(out.data);
        k.run(call, out);
      }};
    });
    auto want = ct::eval(ct::softmax(before, -1));  // the same user kernel, out of place
    ct::eval(ct::softmax(x, -1), x);
    CHECK(ct_test::bitwise_equal(x, want));
    REQUIRE(targets.size() == 2);
    CHECK(targets[1] != x.data());  // staged
  }
}

TEST_CASE("selectors: writes_destination: the kernel gets the caller's strided destination itself", "[selectors]") {
  auto a = ct::random_uniform<float>({4, 3}, 7, -1.0f, 1.0f);
  auto b = ct::random_uniform<float>({3, 6}, 8, -1.0f, 1.0f);
  ct::tensor<float> big({6, 4});
  auto out = big.permute({1, 0});  // [4, 6] with strides {1, 4}
  ct::target got;
  ct::selector_scope sel(ct::operation::matmul, [&](const ct::call_info&) {
    ct::kernel k{[&](const ct::call_info&, const ct::target& t) {
      got = t;
      for (index_t i = 0; i < 4; ++i)
        for (index_t j = 0; j < 6; ++j) static_cast<float*>(t.data)[i * t.strides[0] + j * t.strides[1]] = float(i * 10 + j);
    }};
    k.writes_destination = true;
    return k;
  });
  ct::matmul(a, b, out);
  CHECK(got.data == out.data());
  CHECK(got.strides == out.strides());
  CHECK(got.shape == ct::dims{4, 6});
  for (index_t i = 0; i < 4; ++i)
    for (index_t j = 0; j < 6; ++j) CHECK(out(i, j) == float(i * 10 + j));
}

TEST_CASE("selectors: validation happens before any selector is asked", "[selectors]") {
  auto a = ct::random_uniform<float>({3, 4}, 1, -1.0f, 1.0f);
  std::atomic<int> asked{0};
  ct::selector_scope s1(ct::operation::matmul, filler(1.0f, &asked));
  ct::selector_scope s2(ct::operation::eval, filler(1.0f, &asked));
  ct::selector_scope s3(ct::operation::dot, filler(1.0f, &asked));
  ct::tensor<float> wrong({3, 3});
  CHECK_THROWS_AS(ct::matmul(a, a), ct::shape_error);  // inner dimensions differ
  CHECK_THROWS_AS(ct::matmul(a, a.permute({1, 0}), wrong.slice(0, 0, 2)), ct::shape_error);
  CHECK_THROWS_AS(ct::matmul(a, a.permute({1, 0}), ct::tensor<float>({3}).broadcast_to({3, 3})), ct::shape_error);
  CHECK_THROWS_AS(ct::eval(ct::softmax(a, -1), wrong), ct::shape_error);
  CHECK_THROWS_AS(ct::softmax(a, 2), ct::axis_error);
  CHECK_THROWS_AS(ct::dot(a.slice(0, 0, 1).reshape({4}), ct::tensor<float>({3})), ct::shape_error);
  CHECK(asked == 0);
}

TEST_CASE("selectors: a vector-vector product asks dot first, then matmul; ct::dot asks dot", "[selectors]") {
  auto x = ct::random_uniform<float>({10}, 2, -1.0f, 1.0f);
  std::vector<std::string> asked;
  ct::selector_scope on_matmul(ct::operation::matmul, [&](const ct::call_info& c) {
    asked.push_back("matmul:" + std::string(c.name));
    return fill_kernel(2.0f);
  });
  ct::selector_scope on_dot(ct::operation::dot, [&](const ct::call_info& c) {
    asked.push_back("dot:" + std::string(c.name));
    return c.operands[0].shape[0] == 10 ? ct::kernel{} : fill_kernel(3.0f);
  });
  auto r = ct::matmul(x, x);  // dot declines (length 10), matmul accepts
  CHECK(asked == std::vector<std::string>{"dot:dot", "matmul:matmul"});
  CHECK(r.shape() == ct::dims{});
  CHECK(r.data()[0] == 2.0f);
  asked.clear();
  auto y = ct::random_uniform<float>({11}, 3, -1.0f, 1.0f);
  CHECK(ct::dot(y, y) == 3.0f);  // dot accepts
  CHECK(ct::matmul(y, y).data()[0] == 3.0f);
  CHECK(asked == std::vector<std::string>{"dot:dot", "dot:dot"});
}

TEST_CASE("selectors: combinations ct does not implement need a selector: unsupported_operation otherwise",
          "[selectors]") {
  auto a16 = ct::eval(ct::cast<ct::bfloat16>(ct::random_uniform<float>({2, 3}, 1, -1.0f, 1.0f)));
  auto b32 = ct::random_uniform<float>({3, 4}, 2, -1.0f, 1.0f);
  ct::tensor<float> out({2, 4});
  try {
    ct::matmul(a16, b32, out);
    FAIL("no error");
  } catch (const ct::unsupported_operation& e) {
    const std::string m = e.what();
    CHECK(m.find("matmul") != std::string::npos);
    CHECK(m.find("bfloat16, float32") != std::string::npos);
    CHECK(m.find("[2, 3]") != std::string::npos);
  }
  CHECK(all_equal(out, 0.0f));
  auto i8 = ct::tensor<std::int8_t>({4});
  CHECK_THROWS_AS(ct::dot(i8, i8), ct::unsupported_operation);
  CHECK_THROWS_AS(ct::matmul(ct::tensor<std::int8_t>({2, 2}), ct::tensor<std::int8_t>({2, 2})), ct::unsupported_operation);
  // With a selector attached to bfloat16, the mixed product works (here: widen, then ct's product).
  registration r(ct::attach_selector(ct::dtype::bf16, ct::operation::matmul, [](const ct::call_info& c) {
    if (c.operands[0].type != ct::dtype::bf16 || c.operands[1].type != ct::dtype::f32) return ct::kernel{};
    return ct::kernel{[](const ct::call_info& call, const ct::target& t) {
      const auto& av = call.operands[0];
      const auto& bv = call.operands[1];
      auto a = ct::wrap(static_cast<ct::bfloat16*>(const_cast<void*>(av.data)), av.shape, av.strides);
      auto b = ct::wrap(static_cast<float*>(const_cast<void*>(bv.data)), bv.shape, bv.strides);
      auto y = ct::wrap(static_cast<float*>(t.data), t.shape, t.strides);
      ct::matmul(ct::eval(ct::cast<float>(a)), b, y);  // on this thread: ct's own implementation
    }};
  }));
  ct::matmul(a16, b32, out);
  CHECK(ct_test::bitwise_equal(out, ct::matmul(ct::eval(ct::cast<float>(a16)), b32)));
}

TEST_CASE("selectors: ct calls made by a selected kernel, or by ct's own implementation, are not routed again",
          "[selectors]") {
  auto a = ct::random_uniform<float>({6, 6}, 1, -1.0f, 1.0f);
  const auto want = ct::matmul(a, a);  // no selectors yet
  {
    std::atomic<int> asked{0};
    // A kernel that delegates to ct::matmul itself: without the guard it would select itself
    // forever.
    ct::selector_scope sel(ct::operation::matmul, [&](const ct::call_info&) {
      ++asked;
      return ct::kernel{[](const ct::call_info& call, const ct::target& t) {
        const auto& av = call.operands[0];
        auto x = ct::wrap(static_cast<float*>(const_cast<void*>(av.data)), av.shape, av.strides);
        ct::matmul(x, x, ct::wrap(static_cast<float*>(t.data), t.shape, t.strides));
      }};
    });
    auto y = ct::matmul(a, a);
    CHECK(asked == 1);
    CHECK(ct_test::bitwise_equal(y, want));
  }
  // A bfloat16 product widens with ct::eval internally: an eval selector is not asked for it.
  auto h = ct::eval(ct::cast<ct::bfloat16>(a));
  std::atomic<int> eval_asked{0};
  ct::selector_scope ev(ct::operation::eval, filler(9.0f, &eval_asked));
  auto hh = ct::matmul(h, h);
  CHECK(eval_asked == 0);
  CHECK(static_cast<float>(hh(0, 0)) != 9.0f);
}

TEST_CASE("selectors: decode selectors", "[selectors]") {
  auto w = ct::encode(ct::random_uniform<float>({3, 32}, 4, -1.0f, 1.0f), ct::formats::q8_0());
  const auto want = ct::decode(w);
  std::string seen;
  {
    registration r(ct::attach_selector(ct::formats::q8_0(), ct::operation::decode, [&](const ct::call_info& c) {
      seen = std::string(c.name) + " " + c.operands[0].type_name() + " -> " + c.destination.type_name();
      return fill_kernel(0.5f);
    }));
    CHECK(all_equal(ct::decode(w), 0.5f));
    // Another format's selector is not asked.
    auto w4 = ct::encode(ct::random_uniform<float>({3, 32}, 4, -1.0f, 1.0f), ct::formats::q4_0());
    CHECK_FALSE(all_equal(ct::decode(w4), 0.5f));
  }
  CHECK(seen == "decode q8_0 -> float32");
  CHECK(ct_test::bitwise_equal(ct::decode(w), want));
}

TEST_CASE("selectors: registration errors", "[selectors]") {
  CHECK_THROWS_AS(ct::add_selector(ct::operation::matmul, ct::selector{}), ct::error);
  CHECK_THROWS_AS(ct::selector_scope(ct::operation::eval, ct::selector{}), ct::error);
  const auto id = ct::add_selector(ct::operation::eval, [](const ct::call_info&) { return ct::kernel{}; });
  ct::remove_selector(id);
  CHECK_THROWS_WITH(ct::remove_selector(id), Catch::Contains("no selector with id"));
  CHECK(std::string(ct::operation_name(ct::operation::encoded_matmul)) == "encoded_matmul");
}

TEST_CASE("selectors: concurrent lookups from many threads", "[selectors][scheduling]") {
  auto a = ct::random_uniform<float>({16, 16}, 1, -1.0f, 1.0f);
  const auto want = ct::matmul(a, a);
  std::atomic<int> asked{0};
  // Accepts only 3x3 products (none here): every call asks, declines and runs ct's product.
  registration r(ct::add_selector(ct::operation::matmul, [&](const ct::call_info& c) {
    ++asked;
    return c.operands[0].shape == ct::dims{3, 3} ? fill_kernel(1.0f) : ct::kernel{};
  }));
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        {
          ct::selector_scope own(ct::operation::matmul, filler(float(t)));  // each thread its own
          if (!all_equal(ct::matmul(a, a), float(t))) ++wrong;
        }
        if (!ct_test::bitwise_equal(ct::matmul(a, a), want)) ++wrong;  // the registry declines
      }
    });
  for (auto& th : threads) th.join();
  CHECK(wrong == 0);
  CHECK(asked == 200);
}
