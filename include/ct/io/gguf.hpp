/// \file
/// GGUF model files (the format of llama.cpp and ggml): read one by memory-mapping it — its
/// metadata, its tensor directory, and each tensor as a ct tensor or encoded view over the
/// mapping, nothing copied — and write one.
///
/// ```
/// auto f = ct::gguf::file::open("model.gguf");
/// auto layers = f.get_uint("llama.block_count");
/// ct::encoded_tensor wq = f.encoded("blk.0.attn_q.weight");      // q8_0, q4_0, q4_K, q6_K, f16, bf16
/// ct::tensor<float> norm = f.dense<float>("blk.0.attn_norm.weight");  // f32, f16, bf16, f64, ints
/// ```
///
/// Shapes are ct's order, outermost first: GGUF lists a tensor's extents innermost first
/// (`ne[0]` is a row's length), so a GGUF weight of `ne = {K, N}` is a ct `[N, K]` tensor, the
/// `[N, K]` weight ct::matmul(x, w.transpose()) takes.
///
/// Lifetime: the views point into the file object's mapping (or buffer). The file object (or a
/// copy of it: copies share the mapping) must outlive every view taken from it. The mapping is
/// private and writable (copy-on-write): writing through a dense view changes this process's
/// copy of the bytes, never the file.
///
/// Every malformed file is a ct::gguf_error naming the problem and its byte offset, thrown by
/// open / parse before anything is returned: a bad magic or version, a truncated header, value
/// or tensor directory, counts or sizes that overflow or exceed the file, a tensor whose data
/// lies outside the file or is misaligned, duplicate keys or tensor names, an unknown metadata
/// value type. A tensor of a type ct does not know is listed (tensor_info::supported is false,
/// its type number in type_name) and only asking for that tensor is an error; the others stay
/// usable. Versions 2 and 3 are read (little-endian files); version 1 and big-endian files are not.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "ct/core/error.hpp"
#include "ct/core/tensor.hpp"
#include "ct/encoded/encoded_tensor.hpp"

namespace ct {

/// A malformed or unreadable GGUF file (the message names the problem and the byte offset), or a
/// request the file cannot satisfy: a missing key or tensor, a value or tensor of another type.
class gguf_error : public error {
 public:
  using error::error;
};

namespace gguf {

/// The metadata value types, numbered as in the file.
enum class value_type : std::uint32_t {
  u8 = 0,
  i8 = 1,
  u16 = 2,
  i16 = 3,
  u32 = 4,
  i32 = 5,
  f32 = 6,
  boolean = 7,
  string = 8,
  array = 9,
  u64 = 10,
  i64 = 11,
  f64 = 12
};

/// "uint8", …, "string", "array", "float64"; "unknown" for other numbers.
const char* value_type_name(value_type t) noexcept;

/// One metadata value: a number, a bool, a string, or an array of values of one type.
class value {
 public:
  /// An unsigned integer of type t (u8, u16, u32 or u64).
  static value unsigned_integer(value_type t, std::uint64_t v);
  /// A signed integer of type t (i8, i16, i32 or i64).
  static value signed_integer(value_type t, std::int64_t v);
  /// A floating-point number of type t (f32 or f64).
  static value floating(value_type t, double v);
  /// A bool.
  static value boolean(bool v);
  /// A string (UTF-8 by convention; any bytes are kept as they are).
  static value string(std::string v);
  /// An array whose elements all have type `element` (checked: gguf_error otherwise).
  static value array(value_type element, std::vector<value> elements);

  /// The value's type.
  value_type type() const noexcept { return type_; }
  /// For arrays: the elements' type.
  value_type element_type() const noexcept { return element_; }
  /// Any unsigned integer type, or a signed one holding a value >= 0; gguf_error otherwise.
  std::uint64_t as_uint() const;
  /// Any integer type whose value fits in int64; gguf_error otherwise.
  std::int64_t as_int() const;
  /// f32 or f64 (f32 values are exact in a double); gguf_error otherwise.
  double as_float() const;
  /// A bool; gguf_error otherwise.
  bool as_bool() const;
  /// A string; gguf_error otherwise.
  const std::string& as_string() const;
  /// An array's elements; gguf_error otherwise.
  const std::vector<value>& as_array() const;

 private:
  value_type type_ = value_type::u8;
  value_type element_ = value_type::u8;
  std::variant<std::uint64_t, std::int64_t, double, bool, std::string, std::vector<value>> data_;
  void check(bool ok, const char* wanted) const;
};

/// The tensor types of GGUF (ggml's numbering) that ct names. Files may hold others.
enum class tensor_type : std::uint32_t {
  f32 = 0,
  f16 = 1,
  q4_0 = 2,
  q4_1 = 3,
  q5_0 = 6,
  q5_1 = 7,
  q8_0 = 8,
  q8_1 = 9,
  q2_K = 10,
  q3_K = 11,
  q4_K = 12,
  q5_K = 13,
  q6_K = 14,
  q8_K = 15,
  i8 = 24,
  i16 = 25,
  i32 = 26,
  i64 = 27,
  f64 = 28,
  bf16 = 30
};

/// One entry of the tensor directory.
struct tensor_info {
  std::string name;           ///< Unique in the file.
  dims shape;                 ///< ct order (outermost first): GGUF's extents reversed.
  std::uint32_t type = 0;     ///< The file's type number (ct::gguf::tensor_type for the known ones).
  std::string type_name;      ///< "q4_K", "f32", …, or "unknown type 77".
  std::uint64_t offset = 0;   ///< Absolute byte offset of the data in the file.
  std::uint64_t bytes = 0;    ///< Size of the data (0 when the type is unknown).
  bool supported = false;     ///< ct can view it: dense() or encoded().
};

/// An opened GGUF file: parsed and checked when it is opened; then only read (copies share the
/// bytes; concurrent reads are safe).
class file {
 public:
  /// Memory-maps and parses the file at path (gguf_error naming the path on failure).
  static file open(const std::string& path);
  /// Parses a file held in memory; the file object keeps the bytes. `name` appears in errors.
  static file parse(std::vector<unsigned char> bytes, std::string name = "<memory>");

  /// 2 or 3.
  std::uint32_t version() const noexcept;
  /// The data alignment (general.alignment, 32 when absent).
  std::uint64_t alignment() const noexcept;
  /// Where the tensor data section begins.
  std::uint64_t data_offset() const noexcept;
  /// The file's size in bytes.
  std::uint64_t size() const noexcept;

  /// Every key and value, in file order.
  const std::vector<std::pair<std::string, value>>& metadata() const noexcept;
  /// The value of key, or null.
  const value* find(std::string_view key) const noexcept;
  /// The value of key; gguf_error naming the key when it is absent.
  const value& at(std::string_view key) const;
  /// at(key).as_uint(), with the key in the message of any error.
  std::uint64_t get_uint(std::string_view key) const;
  /// at(key).as_int(), with the key in the message of any error.
  std::int64_t get_int(std::string_view key) const;
  /// at(key).as_float(), with the key in the message of any error.
  double get_float(std::string_view key) const;
  /// at(key).as_bool(), with the key in the message of any error.
  bool get_bool(std::string_view key) const;
  /// at(key).as_string(), with the key in the message of any error.
  const std::string& get_string(std::string_view key) const;

  /// The tensor directory, in file order.
  const std::vector<tensor_info>& tensors() const noexcept;
  /// The entry of the tensor called name, or null.
  const tensor_info* find_tensor(std::string_view name) const noexcept;
  /// The entry of the tensor called name; gguf_error when there is none.
  const tensor_info& tensor(std::string_view name) const;

  /// An encoded view of a q8_0, q4_0, q4_K, q6_K, f16 or bf16 tensor (the formats of
  /// ct::formats). gguf_error for another type, an unknown one or a missing name.
  encoded_tensor encoded(std::string_view name) const;
  /// A dense view of a tensor whose type is T's: f32 float, f64 double, f16 float16, bf16
  /// bfloat16, i8 … i64 the integers. gguf_error for another type (naming both) or a missing
  /// name.
  template <element T>
  ct::tensor<T> dense(std::string_view name) const {
    const tensor_info& t = dense_info(name, dtype_of<T>());
    return wrap(reinterpret_cast<T*>(mutable_bytes() + t.offset), t.shape, row_major_strides(t.shape));
  }
  /// The first byte of the mapping (or buffer).
  const unsigned char* bytes() const noexcept;

 private:
  struct state;
  std::shared_ptr<const state> state_;
  explicit file(std::shared_ptr<const state> s) : state_(std::move(s)) {}
  // Parses the bytes s holds (mapped or buffered) and checks every entry.
  static file finish(std::shared_ptr<state> s);
  const tensor_info& dense_info(std::string_view name, dtype want) const;
  unsigned char* mutable_bytes() const noexcept;
};

/// Builds a GGUF file: metadata and tensors, written in the order they were added.
class writer {
 public:
  /// version 2 or 3; alignment a power of two (written as general.alignment when not 32).
  explicit writer(std::uint32_t version = 3, std::uint64_t alignment = 32);
  /// Adds a metadata key (gguf_error if it is already there).
  void set(std::string key, value v);
  /// Adds a dense tensor: float, double, float16, bfloat16 or a signed integer type (row-major
  /// copy of t's elements). gguf_error for a duplicate name or a type GGUF has no number for.
  template <element T>
  void add(std::string name, const ct::tensor<T>& t) {
    const auto c = t.contiguous();
    add_bytes(std::move(name), t.shape(), dtype_of<T>(), reinterpret_cast<const unsigned char*>(c.data()),
              static_cast<std::size_t>(c.size()) * sizeof(T));
  }
  /// Adds an encoded tensor in its format (q8_0, q4_0, q4_K, q6_K, f16, bf16; gguf_error for a
  /// format GGUF has no type number for, or a duplicate name).
  void add(std::string name, const encoded_tensor& e);
  /// The file's bytes.
  std::vector<unsigned char> bytes() const;
  /// Writes the file to path (gguf_error naming the path on failure).
  void write(const std::string& path) const;

 private:
  struct entry {
    std::string name;
    dims shape;
    std::uint32_t type;
    std::vector<unsigned char> data;
  };
  std::uint32_t version_;
  std::uint64_t alignment_;
  std::vector<std::pair<std::string, value>> metadata_;
  std::vector<entry> tensors_;
  void add_bytes(std::string name, const dims& shape, dtype type, const unsigned char* data, std::size_t n);
  void check_new_name(const std::string& name) const;
};

}  // namespace gguf
}  // namespace ct
