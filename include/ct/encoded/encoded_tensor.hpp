/// \file
/// Encoded (quantized) tensors: encode, decode, and views over foreign bytes (a mmapped
/// model file).
///
/// ```
/// ct::encoded_tensor w = ct::encode(weights, ct::formats::q8_0());   // [N, K] floats -> blocks
/// ct::tensor<float>  f = ct::decode(w);                               // blocks -> [N, K] floats
/// auto v = ct::encoded_tensor::view(ct::formats::q4_0(), {N, K}, bytes, size);  // never copied
/// ```
///
/// Shape [N, K] (or [B, N, K]): rows of K values, K a whole number of the format's blocks; each
/// row is row_bytes(K) bytes and the rows follow each other (row-major, no padding). An owning
/// encoded tensor shares its bytes between copies (like ct::tensor); a view only points at the
/// caller's bytes, never writes them and never assumes their alignment — they must stay valid
/// and unchanged while any copy of the view is used.
#pragma once
#include <cstddef>
#include <memory>

#include "ct/core/const_tensor.hpp"
#include "ct/core/dims.hpp"
#include "ct/core/tensor.hpp"
#include "ct/encoded/format.hpp"

namespace ct {

/// Weights of shape [N, K] or [B, N, K] stored in a block format (ct::format): bytes it owns
/// (ct::encode) or a view of the caller's bytes (view). Copies share the bytes. The products in
/// ct/encoded/matmul.hpp use it as it is; ct::decode turns it back into floats.
class encoded_tensor {
 public:
  /// A view of `size_bytes` bytes at `bytes` as an encoded tensor of this format and shape.
  /// Throws before anything else: shape_error for a rank other than 2 or 3 or a negative
  /// extent, format_error when the last extent is not a whole number of blocks, shape_error
  /// when size_bytes is not exactly the shape's byte size (the message gives both), and
  /// shape_error for a null pointer with a non-zero size.
  static encoded_tensor view(format f, const dims& shape, const void* bytes, std::size_t size_bytes);

  /// The block format.
  format fmt() const noexcept { return fmt_; }
  /// The shape of the values it stands for: [N, K] or [B, N, K].
  const dims& shape() const noexcept { return shape_; }
  /// 2 or 3.
  int rank() const noexcept { return shape_.size(); }
  /// K, the values per row (the last extent).
  index_t cols() const noexcept { return shape_[shape_.size() - 1]; }  // K
  /// The number of rows of every batch together: N, or B * N.
  index_t rows() const noexcept;                                       // every row of every batch
  /// Bytes of one encoded row.
  std::size_t row_bytes() const noexcept { return row_bytes_; }
  /// Bytes of all rows: rows() * row_bytes().
  std::size_t size_bytes() const noexcept { return row_bytes_ * static_cast<std::size_t>(rows()); }
  /// The first byte of the first row (rows follow each other without padding).
  const unsigned char* data() const noexcept { return data_; }
  /// The first byte of row r; r must be in [0, rows()) (unchecked).
  const unsigned char* row(index_t r) const noexcept { return data_ + static_cast<std::size_t>(r) * row_bytes_; }
  /// Whether the bytes belong to this tensor (encode) rather than to the caller (view).
  bool owns_bytes() const noexcept { return owner_ != nullptr; }
  /// The transposed operand of ct::matmul(x, w.transpose()) (ct/encoded/matmul.hpp).
  struct transposed;
  /// This tensor as the right operand of x·wᵀ (shares the bytes; nothing is copied).
  transposed transpose() const;

 private:
  friend encoded_tensor encode(const tensor<float>&, format);
  encoded_tensor(format f, dims shape, std::size_t row_bytes, std::shared_ptr<unsigned char[]> owner,
                 const unsigned char* data)
      : fmt_(f), shape_(std::move(shape)), row_bytes_(row_bytes), owner_(std::move(owner)), data_(data) {}
  format fmt_;
  dims shape_;
  std::size_t row_bytes_ = 0;
  std::shared_ptr<unsigned char[]> owner_;
  const unsigned char* data_ = nullptr;
};

/// An encoded tensor used as its transpose in a product: [K, N] (or [B, K, N]) for [N, K].
struct encoded_tensor::transposed {
  /// The encoded tensor [N, K] (or [B, N, K]) this stands for the transpose of.
  encoded_tensor of;
};
inline encoded_tensor::transposed encoded_tensor::transpose() const { return transposed{*this}; }

/// Encodes x (rank 2 or 3, any strides) row by row with the format's encoder. Throws before
/// encoding anything: shape_error for another rank, format_error when the last extent is not a
/// whole number of blocks. An encoder's error (NaN or infinity in a q8_0 / q4_0 block names the
/// row and column) propagates, and nothing is returned.
encoded_tensor encode(const tensor<float>& x, format f);
/// The same for read-only weights (ct::const_tensor, e.g. ct::wrap of a const pointer).
inline encoded_tensor encode(const const_tensor<float>& x, format f) { return encode(detail::readable(x), f); }

/// The values an encoded tensor stands for, as a new float tensor of its shape.
tensor<float> decode(const encoded_tensor& e);

}  // namespace ct
