/// \file
/// Products with encoded (quantized) weights.
///
/// ```
/// y = ct::matmul(w, x)              w [N, K] or [B, N, K]; x [K], [K, M] or [B, K, M]
/// y = ct::matmul(x, w.transpose())  x [K], [M, K] or [B, M, K]; the result [.., M, N]
/// ```
///
/// Result shapes follow numpy.matmul with w as the matrix it encodes (a vector operand's axis
/// is dropped; a rank-2 operand broadcasts over the other's batch). The activations are float32
/// tensors of any strides; the destination overloads write into an existing float tensor or view.
///
/// Two modes (docs/encoded.md, "Modes and their error bounds", gives both bounds):
///  * encoded_mode::quantized (the default): each activation vector (a column of x in w·x, a
///    row of x in x·wᵀ) is quantized once per call to int8 blocks, before any group runs —
///    q8_0 blocks of 32 for q8_0 and q4_0 weights, 256-value blocks with a float scale for
///    q4_K and q6_K; then each output element is built from exact integer dot products of the
///    blocks' quants, scaled and accumulated in float in block order. Used for q8_0, q4_0, q4_K
///    and q6_K weights; other formats compute in exact mode. A NaN or infinite activation cannot
///    be quantized: format_error.
///  * encoded_mode::exact: weights are decoded row by row into float32 and dotted with the
///    float32 activations in the fixed lane order of ct::dot (docs/matmul.md), for every format,
///    including formats registered at run time.
///
/// Scheduling (CONTRACT §4): a matrix-vector product (a vector activation) has one group per
/// output element; a matrix product one group per output row (w·x: a row of N-index n; x·wᵀ:
/// a row of M-index m), batch-major. Each output element is computed by one callback in an
/// order fixed by the shapes, so results are bitwise identical under any executor and worker
/// count (for a given backend and FMA policy). Each callback uses its own scratch (decoded rows);
/// the encoded bytes are only read, and a view's bytes must stay valid until the call returns.
///
/// Errors, before any work: shape_error naming the shapes (K mismatch, ranks, batch counts, a
/// destination of another shape or with repeated elements, a destination overlapping the
/// encoded bytes). An activation overlapping the destination is copied first. If a failure
/// happens while computing (executor, allocation), the destination may be partly written.
#pragma once
#include "ct/core/const_tensor.hpp"
#include "ct/core/tensor.hpp"
#include "ct/encoded/encoded_tensor.hpp"

namespace ct {

/// How a product with encoded weights computes: `quantized` (activations quantized to int8
/// blocks, integer block dot products; q8_0, q4_0, q4_K and q6_K weights, other formats compute
/// exactly) or `exact` (weights decoded to float32). ct/encoded/matmul.hpp describes both.
enum class encoded_mode { quantized, exact };

/// Writes w·x into out, whose shape must be the result shape (shapes and errors: see
/// ct/encoded/matmul.hpp).
void matmul(const encoded_tensor& w, const tensor<float>& x, const tensor<float>& out,
            encoded_mode mode = encoded_mode::quantized);
/// w·x as a new row-major float tensor.
tensor<float> matmul(const encoded_tensor& w, const tensor<float>& x, encoded_mode mode = encoded_mode::quantized);
/// Writes x·wᵀ (wt = w.transpose()) into out, whose shape must be the result shape.
void matmul(const tensor<float>& x, const encoded_tensor::transposed& wt, const tensor<float>& out,
            encoded_mode mode = encoded_mode::quantized);
/// x·wᵀ (wt = w.transpose()) as a new row-major float tensor.
tensor<float> matmul(const tensor<float>& x, const encoded_tensor::transposed& wt,
                     encoded_mode mode = encoded_mode::quantized);

/// Read-only activations (ct::const_tensor) work as tensors do; the destination must be writable.
inline void matmul(const encoded_tensor& w, const const_tensor<float>& x, const tensor<float>& out,
                   encoded_mode mode = encoded_mode::quantized) {
  matmul(w, detail::readable(x), out, mode);
}
inline tensor<float> matmul(const encoded_tensor& w, const const_tensor<float>& x, encoded_mode mode = encoded_mode::quantized) {
  return matmul(w, detail::readable(x), mode);
}
inline void matmul(const const_tensor<float>& x, const encoded_tensor::transposed& wt, const tensor<float>& out,
                   encoded_mode mode = encoded_mode::quantized) {
  matmul(detail::readable(x), wt, out, mode);
}
inline tensor<float> matmul(const const_tensor<float>& x, const encoded_tensor::transposed& wt,
                            encoded_mode mode = encoded_mode::quantized) {
  return matmul(detail::readable(x), wt, mode);
}

}  // namespace ct
