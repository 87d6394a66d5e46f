/// \file
/// Block formats of encoded (quantized) weights, and their registry.
///
/// An encoded row of K values is K / block_elements blocks of block_bytes bytes each, laid end
/// to end with no padding (so a row of a GGUF tensor is used as it is). Built in (docs/encoded.md
/// draws each layout): "q8_0", "q4_0" (32-value blocks, byte-identical to ggml's), "bf16" and
/// "f16" (one value per 2-byte block: plain rows of 16-bit floats), "q4_K" and "q6_K" (256-value
/// super-blocks, as in GGUF). A program can register its own
/// block format at run time with an encoder and a decoder; encode and decode then work for it
/// like for the built-ins.
///
/// Registration is not concurrent with anything else: register formats at start-up, before any
/// thread encodes, decodes or looks formats up (the registry is then only read). Registered
/// formats live until the program ends.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "ct/core/error.hpp"
#include "ct/core/index.hpp"

namespace ct {

/// An unknown format name, a format registered twice or with impossible traits, a row length
/// that is not a whole number of blocks, or a value a format cannot encode (NaN or infinity in a
/// scaled block format).
class format_error : public error {
 public:
  using error::error;
};

/// The traits of one block format: what register_format takes.
struct block_format {
  std::string name;          ///< Unique; letters, digits and '_'.
  index_t block_elements = 0;  ///< Values per block (>= 1).
  index_t block_bytes = 0;     ///< Bytes per block (>= 1).
  /// Encodes n values (a multiple of block_elements) into n / block_elements blocks at `blocks`
  /// (no alignment assumed). Must be deterministic: the same values give the same bytes. May
  /// throw (such as format_error for a value it cannot encode); ct then leaves its output unused.
  void (*encode_row)(const float* x, unsigned char* blocks, index_t n) = nullptr;
  /// Decodes n values from n / block_elements blocks at `blocks` (no alignment assumed; the
  /// bytes may be foreign, read-only memory). Must not throw.
  void (*decode_row)(const unsigned char* blocks, float* y, index_t n) = nullptr;
};

/// A registered format: a small handle, cheap to copy, valid for the rest of the program.
class format {
 public:
  /// The registered name.
  const std::string& name() const noexcept { return traits_->name; }
  /// Values per block.
  index_t block_elements() const noexcept { return traits_->block_elements; }
  /// Bytes per block.
  index_t block_bytes() const noexcept { return traits_->block_bytes; }
  /// The traits it was registered with.
  const block_format& traits() const noexcept { return *traits_; }
  /// Bytes of one encoded row of k values; throws format_error when k is not a whole number of
  /// blocks (the message names the format, k and the block size).
  std::size_t row_bytes(index_t k) const;
  /// The same registered format.
  friend bool operator==(format a, format b) noexcept { return a.traits_ == b.traits_; }

 private:
  friend format find_format(std::string_view);
  friend format register_format(block_format);
  explicit format(const block_format* t) noexcept : traits_(t) {}
  const block_format* traits_;
};

/// The registered format of this name; format_error listing the known names otherwise.
format find_format(std::string_view name);

/// Registers a new block format and returns it. format_error when the name is taken or empty,
/// a size is < 1, or a function is missing. Not concurrent with any other ct call (see above).
format register_format(block_format traits);

/// The names of every registered format, built-ins first, in registration order.
std::vector<std::string> format_names();

/// The built-in formats.
namespace formats {
/// GGUF q8_0: blocks of 32 int8 values and a float16 scale (34 bytes).
inline format q8_0() { return find_format("q8_0"); }
/// GGUF q4_0: blocks of 32 4-bit values and a float16 scale (18 bytes).
inline format q4_0() { return find_format("q4_0"); }
/// Rows of little-endian bfloat16 values (2 bytes each).
inline format bf16() { return find_format("bf16"); }
/// Rows of little-endian IEEE binary16 values (2 bytes each).
inline format f16() { return find_format("f16"); }
/// GGUF q4_K: super-blocks of 256 4-bit values in eight sub-blocks, each with a 6-bit scale
/// and a 6-bit minimum, under two float16 factors (144 bytes).
inline format q4_K() { return find_format("q4_K"); }
/// GGUF q6_K: super-blocks of 256 6-bit values in sixteen sub-blocks with int8 scales, under a
/// float16 factor (210 bytes).
inline format q6_K() { return find_format("q6_K"); }
}  // namespace formats

}  // namespace ct
