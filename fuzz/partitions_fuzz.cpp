// fuzz/partitions_fuzz.cpp — libFuzzer target: the executor contract from the fuzzer's side
// (docs/reliability.md). The input picks an operation (row sums, softmax, column maxima, a
// fused softmax written out, a matmul), a shape, and an executor: how [0, count) is cut into
// ranges (empty ones included, uneven lengths) and in which order they run. A valid partition
// must give the serial result bit for bit. A wrong one (a gap, an overlap, a range past the
// end), run through ct::checked_executor, must be reported as ct::executor_error, and the next
// call on the thread must work. (The destination may then hold the results of the callbacks
// that ran: docs/expressions.md, "Failure atomicity", excepts executors that break their own
// obligations from the unchanged-destination promise.)
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <utility>
#include <vector>

#include "ct/ct.hpp"

namespace {

using ct::index_t;
using ranges = std::vector<std::pair<index_t, index_t>>;

bool bitwise_equal(const ct::tensor<float>& a, const ct::tensor<float>& b) {
  if (a.shape() != b.shape()) return false;
  const auto ca = a.contiguous(), cb = b.contiguous();
  return std::memcmp(ca.data(), cb.data(), static_cast<std::size_t>(ca.size()) * sizeof(float)) == 0;
}

// [0, count) cut by the input's bytes: each byte a range's length modulo what is left + 1
// (so 0 gives an empty range); past the bytes, one range takes the rest.
ranges cut(index_t count, const std::vector<std::uint8_t>& bytes) {
  ranges r;
  index_t at = 0;
  std::size_t j = 0;
  while (at < count) {
    const index_t len = j < bytes.size() ? static_cast<index_t>(bytes[j]) % (count - at + 1) : count - at;
    ++j;
    r.emplace_back(at, at + len);
    at += len;
  }
  return r;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 6) return 0;
  const int op = data[0] % 5;
  const index_t rows = 1 + data[1] % 40, cols = 1 + data[2] % 40;
  const int order = data[3] % 5;  // forward, reverse, rotated, pairs swapped, shuffled
  const int wrong = data[4] % 4;  // 0: a valid partition; 1 gap, 2 overlap, 3 past the end
  const std::vector<std::uint8_t> bytes(data + 5, data + size);
  const auto a = ct::random_uniform<float>({rows, cols}, 1 + data[1], -4.0f, 4.0f);
  const auto b = ct::random_uniform<float>({cols, 1 + index_t{data[2]} % 17}, 2 + data[2], -4.0f, 4.0f);

  const auto result_shape = [&]() -> ct::dims {
    switch (op) {
      case 0: return {rows};
      case 2: return {cols};
      case 4: return {rows, b.shape()[1]};
      default: return {rows, cols};
    }
  }();
  // Evaluates the operation into out (preallocated: the contract's destination).
  const auto compute = [&](const ct::tensor<float>& out) {
    switch (op) {
      case 0: ct::eval(ct::sum(a, -1), out); break;
      case 1: ct::eval(ct::softmax(a, -1), out); break;
      case 2: ct::eval(ct::max(a, 0), out); break;
      case 3: ct::eval(ct::exp(a - ct::max(a, -1)) / ct::sum(ct::exp(a - ct::max(a, -1)), -1), out); break;
      default: ct::matmul(a, b, out);
    }
  };
  ct::tensor<float> want(result_shape);
  compute(want);

  bool called = false;
  ct::executor partition = [&](index_t count, ct::range_callback cb) {
    called = true;
    ranges r = cut(count, bytes);
    std::mt19937 rng(static_cast<unsigned>(bytes.size()) * 2654435761u + static_cast<unsigned>(count));
    if (wrong == 1 || wrong == 2) {  // the first non-empty range dropped, or run twice
      const auto it = std::find_if(r.begin(), r.end(), [](const auto& x) { return x.first < x.second; });
      if (wrong == 1) r.erase(it);
      else r.push_back(*it);
    } else if (wrong == 3) {
      r.emplace_back(count, count + 1);
    }
    switch (order) {
      case 1: std::reverse(r.begin(), r.end()); break;
      case 2: std::rotate(r.begin(), r.begin() + static_cast<std::ptrdiff_t>(r.size() / 2), r.end()); break;
      case 3:
        for (std::size_t i = 0; i + 1 < r.size(); i += 2) std::swap(r[i], r[i + 1]);
        break;
      case 4: std::shuffle(r.begin(), r.end(), rng); break;
      default: break;
    }
    for (const auto& [s, e] : r) cb(s, e);
  };

  ct::tensor<float> out(result_shape);
  ct::eval(ct::full<float>(result_shape, -7.25f), out);
  if (wrong == 0) {
    ct::executor_scope scope(partition);
    compute(out);
    if (!bitwise_equal(out, want)) __builtin_trap();  // a valid partition changed the result
    return 0;
  }
  bool reported = false;
  try {
    ct::executor_scope scope(ct::checked_executor(partition));
    compute(out);
  } catch (const ct::executor_error&) {
    reported = true;
  }
  if (!called) {  // one group: ct runs it without the executor, and the result is right
    if (reported || !bitwise_equal(out, want)) __builtin_trap();
    return 0;
  }
  if (!reported) __builtin_trap();  // a wrong partition went unnoticed
  // The thread is usable afterwards: the same call, serial, gives the serial result.
  compute(out);
  if (!bitwise_equal(out, want)) __builtin_trap();
  return 0;
}
