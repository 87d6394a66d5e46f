/// \file
/// What an operation selector sees of a call: ct::call_info, a read-only description built
/// after ct validated the call (shapes, types, axes), and ct::target, where a selected kernel
/// writes its result. docs/selectors.md describes the whole mechanism.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ct/core/dims.hpp"
#include "ct/core/dtype.hpp"
#include "ct/encoded/format.hpp"
#include "ct/exec/settings.hpp"

namespace ct {

/// The operation families selectors are registered for.
///  - matmul: ct::matmul of two dense tensors (matrix, batched, matrix-vector, vector-matrix and,
///    after dot declined, vector-vector products), including mixed element types.
///  - dot: ct::dot, and ct::matmul of two vectors (tried before matmul).
///  - encoded_matmul: ct::matmul with an encoded (quantized) weight operand.
///  - eval: ct::eval of a fused expression, described by its root operation.
///  - decode: ct::decode of an encoded tensor (dequantization).
enum class operation : std::uint8_t { matmul, dot, encoded_matmul, eval, decode };

/// "matmul", "dot", "encoded_matmul", "eval" or "decode".
const char* operation_name(operation op) noexcept;

/// One operand (or the destination) of a call, as a selector sees it. The data is the
/// caller's: read-only for operands, and a selector must not keep the pointer after the call.
struct operand_view {
  /// The element type: for an encoded operand the type its values decode to (float32).
  dtype type = dtype::f32;
  /// Set for an encoded operand: its block format (then `data` points at its encoded bytes,
  /// rows of `encoding->row_bytes(shape.back())` bytes, and `strides` is empty).
  std::optional<format> encoding;
  /// Extents, as the caller's tensor has them (for eval: the tensor's own shape, before any
  /// broadcast into the expression's shape).
  dims shape;
  /// Strides in elements (negative, zero and non-contiguous strides are possible).
  dims strides;
  /// The first element (the lowest address only when every stride is positive).
  const void* data = nullptr;
  /// The type's name as in messages: "float32", …, or the format's name ("q4_0").
  std::string type_name() const;
};

/// The read-only description of one validated call.
struct call_info {
  /// The operation family asked about.
  operation op = operation::eval;
  /// What exactly is computed. matmul: "matmul"; dot: "dot"; encoded_matmul: "w·x" or "x·wᵀ"
  /// (which operand is the weight); decode: "decode". eval: the root of the expression —
  /// "softmax", "log_softmax", "layer_norm", "rms_norm" for ct's normalisations (also with
  /// their weight / bias operands), a reducer's name ("sum", "max", "argmax", …), an
  /// elementwise function or operator ("exp", "+", "where", …), "cast" or "map".
  std::string_view name;
  /// The operands in the order the caller passed them. For eval: every distinct tensor of the
  /// expression, in the order the expression first uses it.
  std::vector<operand_view> operands;
  /// The destination as the caller gave it (shape, strides, type); its data pointer is null:
  /// a kernel writes through the ct::target it is given, which may be a staging buffer.
  operand_view destination;
  /// eval of a normalisation or of a reducer root: the axis (normalised to >= 0); -1 otherwise
  /// (and for a reduction over several axes).
  int axis = -1;
  /// eval of "layer_norm" / "rms_norm": epsilon; 0 otherwise.
  double eps = 0;
  /// encoded_matmul: true for the quantized mode (ct::encoded_mode::quantized).
  bool quantized = false;
  /// The caller's bound settings (backend and FMA policy).
  ct::settings settings;
  /// The distinct operand types in operand order (type_name() values): the order in which
  /// selectors attached to types and formats are visited.
  std::vector<std::string> distinct_types() const;
};

/// Where a selected kernel writes the call's result: the destination's shape and element type,
/// at `data` with `strides` (elements). A staging buffer (row-major, contiguous) unless the
/// kernel declared writes_destination, in which case it is the caller's destination itself.
struct target {
  void* data = nullptr;     ///< The first element.
  dtype type = dtype::f32;  ///< The destination's element type.
  dims shape;               ///< The destination's shape.
  dims strides;             ///< In elements: row-major for a staging buffer.
};

}  // namespace ct
