// ct::encode, ct::decode and encoded views: the shape and size checks, then the format's row
// functions over every row.
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "ct/core/storage.hpp"
#include "ct/encoded/encoded_tensor.hpp"
#include "src/select/select.hpp"

namespace ct {

namespace {

void check_shape(const char* op, const dims& shape) {
  if (shape.size() != 2 && shape.size() != 3)
    throw shape_error(std::string(op) + ": an encoded tensor has shape [N, K] or [B, N, K], got " + shape.str());
  for (int i = 0; i < shape.size(); ++i)
    if (shape[i] < 0) throw shape_error(std::string(op) + ": negative extent in shape " + shape.str());
  // The row count must fit in index_t even when K is 0 (no bytes at all): found by
  // fuzz/gguf_fuzz.cpp, a [2^40, 2^40, 0] tensor overflowed the product (undefined behaviour).
  index_t rows = 1;
  for (int i = 0; i + 1 < shape.size(); ++i)
    if (__builtin_mul_overflow(rows, shape[i], &rows))
      throw shape_error(std::string(op) + ": shape " + shape.str() + " has more rows than an index can count");
}

index_t row_count(const dims& shape) {
  index_t r = 1;
  for (int i = 0; i + 1 < shape.size(); ++i) r *= shape[i];
  return r;
}

// The row bytes of shape's rows in format f, or format_error naming the operation.
std::size_t checked_row_bytes(const char* op, format f, const dims& shape) {
  try {
    return f.row_bytes(shape[shape.size() - 1]);
  } catch (const format_error& e) {
    throw format_error(std::string(op) + ": shape " + shape.str() + ": " + e.what());
  }
}

}  // namespace

index_t encoded_tensor::rows() const noexcept { return row_count(shape_); }

encoded_tensor encoded_tensor::view(format f, const dims& shape, const void* bytes, std::size_t size_bytes) {
  const char* op = "ct::encoded_tensor::view";
  check_shape(op, shape);
  const std::size_t rb = checked_row_bytes(op, f, shape);
  const index_t rows = row_count(shape);
  if (rows != 0 && rb > std::numeric_limits<std::size_t>::max() / static_cast<std::size_t>(rows))
    throw shape_error(std::string(op) + ": shape " + shape.str() + " is too large");
  const std::size_t want = rb * static_cast<std::size_t>(rows);
  if (size_bytes != want)
    throw shape_error(std::string(op) + ": " + std::to_string(size_bytes) + " bytes given, but shape " + shape.str() + " in " +
                      f.name() + " takes " + std::to_string(want) + " bytes");
  if (bytes == nullptr && want != 0) throw shape_error(std::string(op) + ": null bytes for shape " + shape.str());
  return encoded_tensor(f, shape, rb, nullptr, static_cast<const unsigned char*>(bytes));
}

encoded_tensor encode(const tensor<float>& x, format f) {
  const char* op = "ct::encode";
  check_shape(op, x.shape());
  const std::size_t rb = checked_row_bytes(op, f, x.shape());
  const index_t rows = row_count(x.shape()), k = x.shape()[x.rank() - 1];
  const std::size_t total = std::max<std::size_t>(rb * static_cast<std::size_t>(rows), 1);
  // storage.hpp's allocation: a large model's weights on huge pages, like a tensor's elements
  std::shared_ptr<unsigned char[]> bytes(static_cast<unsigned char*>(detail::acquire_storage(total)),
                                         [total](unsigned char* p) { detail::release_storage(p, total); });
  std::vector<float> row(static_cast<std::size_t>(k));
  const index_t cs = x.strides()[x.rank() - 1];
  for (index_t r = 0; r < rows; ++r) {
    // the row's first element: walk the leading axes of x
    index_t at = 0, rem = r;
    for (int i = x.rank() - 2; i >= 0; --i) {
      at += (rem % x.shape()[i]) * x.strides()[i];
      rem /= x.shape()[i];
    }
    const float* src = x.data() + at;
    for (index_t j = 0; j < k; ++j) row[static_cast<std::size_t>(j)] = src[j * cs];
    try {
      f.traits().encode_row(row.data(), bytes.get() + static_cast<std::size_t>(r) * rb, k);
    } catch (const format_error& e) {
      throw format_error(std::string(op) + ": row " + std::to_string(r) + " of shape " + x.shape().str() + ": " + e.what());
    }
  }
  const unsigned char* data = bytes.get();
  return encoded_tensor(f, x.shape(), rb, std::move(bytes), data);
}

tensor<float> decode(const encoded_tensor& e) {
  tensor<float> y(e.shape());
  if (detail::selectors_possible()) {  // operation selectors (ct/select/selector.hpp) first
    call_info call;
    call.op = operation::decode;
    call.name = "decode";
    call.settings = current_settings();
    operand_view w;
    w.encoding = e.fmt();
    w.shape = e.shape();
    w.data = e.data();
    call.operands = {w};
    call.destination = detail::view_of(y);
    call.destination.data = nullptr;
    if (const kernel k = detail::select(call)) {
      detail::run_selected(k, call, y.data());
      return y;
    }
  }
  const index_t k = e.cols();
  for (index_t r = 0; r < e.rows(); ++r) e.fmt().traits().decode_row(e.row(r), y.data() + r * k, k);
  return y;
}

}  // namespace ct
