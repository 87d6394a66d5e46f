// GGUF files (ct/io/gguf.hpp): a bounds-checked parser over a mapping or a buffer, and views of
// tensors over it. The writer is in gguf_writer.cpp; the tensor type table both use in
// gguf_types.hpp.
#include "ct/io/gguf.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <optional>
#include <unordered_set>

#include "ct/encoded/format.hpp"
#include "src/io/gguf_types.hpp"

namespace ct::gguf {

using detail::default_alignment;
using detail::magic;
using detail::max_rank;
using detail::traits_of;
using detail::type_traits;

namespace {

std::string hex(std::uint64_t offset) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%llu (0x%llx)", static_cast<unsigned long long>(offset),
                static_cast<unsigned long long>(offset));
  return buf;
}

// Reads little-endian values with bounds checks; every failure names the offset and what was
// being read.
class cursor {
 public:
  cursor(const unsigned char* data, std::uint64_t size, const std::string& name) : data_(data), size_(size), name_(name) {}
  std::uint64_t pos() const noexcept { return pos_; }
  std::uint64_t remaining() const noexcept { return size_ - pos_; }
  [[noreturn]] void fail(const std::string& what, std::uint64_t at) const {
    throw gguf_error("ct::gguf: " + name_ + ": " + what + " at offset " + hex(at));
  }
  void need(std::uint64_t n, const char* what) const {
    if (n > remaining())
      fail(std::string("truncated: ") + what + " needs " + std::to_string(n) + " bytes, the file has " +
               std::to_string(remaining()) + " left",
           pos_);
  }
  template <class T>
  T read(const char* what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, data_ + pos_, sizeof(T));  // the format is little-endian, as are ct's targets
    pos_ += sizeof(T);
    return v;
  }
  std::string string(const char* what) {
    const std::uint64_t at = pos_;
    const auto n = read<std::uint64_t>(what);
    if (n > remaining())
      fail(std::string(what) + ": string length " + std::to_string(n) + " exceeds the " + std::to_string(remaining()) +
               " bytes left in the file",
           at);
    std::string s(reinterpret_cast<const char*>(data_ + pos_), static_cast<std::size_t>(n));
    pos_ += n;
    return s;
  }
  // A count of items of at least min_bytes each: more than the rest of the file can hold is
  // malformed (and would make a huge allocation).
  std::uint64_t count(const char* what, std::uint64_t min_bytes) {
    const std::uint64_t at = pos_;
    const auto n = read<std::uint64_t>(what);
    if (min_bytes > 0 && n > remaining() / min_bytes)
      fail(std::string(what) + " " + std::to_string(n) + " (at least " + std::to_string(min_bytes) +
               " bytes each) exceeds the " + std::to_string(remaining()) + " bytes left in the file",
           at);
    return n;
  }

 private:
  const unsigned char* data_;
  std::uint64_t size_;
  std::uint64_t pos_ = 0;
  const std::string& name_;
};

// The smallest encoding of a value of type t (for count checks).
std::uint64_t min_value_bytes(value_type t) {
  switch (t) {
    case value_type::u8:
    case value_type::i8:
    case value_type::boolean: return 1;
    case value_type::u16:
    case value_type::i16: return 2;
    case value_type::u32:
    case value_type::i32:
    case value_type::f32: return 4;
    case value_type::u64:
    case value_type::i64:
    case value_type::f64:
    case value_type::string: return 8;
    case value_type::array: return 12;
  }
  return 1;
}

bool known(value_type t) { return static_cast<std::uint32_t>(t) <= 12; }

value read_value(cursor& c, value_type t, int depth) {
  switch (t) {
    case value_type::u8: return value::unsigned_integer(t, c.read<std::uint8_t>("a uint8 value"));
    case value_type::u16: return value::unsigned_integer(t, c.read<std::uint16_t>("a uint16 value"));
    case value_type::u32: return value::unsigned_integer(t, c.read<std::uint32_t>("a uint32 value"));
    case value_type::u64: return value::unsigned_integer(t, c.read<std::uint64_t>("a uint64 value"));
    case value_type::i8: return value::signed_integer(t, c.read<std::int8_t>("an int8 value"));
    case value_type::i16: return value::signed_integer(t, c.read<std::int16_t>("an int16 value"));
    case value_type::i32: return value::signed_integer(t, c.read<std::int32_t>("an int32 value"));
    case value_type::i64: return value::signed_integer(t, c.read<std::int64_t>("an int64 value"));
    case value_type::f32: return value::floating(t, c.read<float>("a float32 value"));
    case value_type::f64: return value::floating(t, c.read<double>("a float64 value"));
    case value_type::boolean: {
      const std::uint64_t at = c.pos();
      const auto b = c.read<std::uint8_t>("a bool value");
      if (b > 1) c.fail("a bool value of " + std::to_string(b) + " (must be 0 or 1)", at);
      return value::boolean(b != 0);
    }
    case value_type::string: return value::string(c.string("a string value"));
    case value_type::array: {
      if (depth >= 8) c.fail("arrays nested more than 8 deep", c.pos());
      const std::uint64_t at = c.pos();
      const auto et = static_cast<value_type>(c.read<std::uint32_t>("an array's element type"));
      if (!known(et)) c.fail("unknown array element type " + std::to_string(static_cast<std::uint32_t>(et)), at);
      const std::uint64_t n = c.count("an array's element count", min_value_bytes(et));
      std::vector<value> elements;
      elements.reserve(static_cast<std::size_t>(n));
      for (std::uint64_t i = 0; i < n; ++i) elements.push_back(read_value(c, et, depth + 1));
      return value::array(et, std::move(elements));
    }
  }
  c.fail("unknown value type " + std::to_string(static_cast<std::uint32_t>(t)), c.pos());
}

}  // namespace

const char* value_type_name(value_type t) noexcept {
  switch (t) {
    case value_type::u8: return "uint8";
    case value_type::i8: return "int8";
    case value_type::u16: return "uint16";
    case value_type::i16: return "int16";
    case value_type::u32: return "uint32";
    case value_type::i32: return "int32";
    case value_type::f32: return "float32";
    case value_type::boolean: return "bool";
    case value_type::string: return "string";
    case value_type::array: return "array";
    case value_type::u64: return "uint64";
    case value_type::i64: return "int64";
    case value_type::f64: return "float64";
  }
  return "unknown";
}

// ---- value

value value::unsigned_integer(value_type t, std::uint64_t v) {
  value x;
  x.type_ = t;
  x.data_ = v;
  if (t != value_type::u8 && t != value_type::u16 && t != value_type::u32 && t != value_type::u64)
    throw gguf_error(std::string("ct::gguf::value: ") + value_type_name(t) + " is not an unsigned integer type");
  const std::uint64_t limit = t == value_type::u8 ? 0xff : t == value_type::u16 ? 0xffff : t == value_type::u32 ? 0xffffffffu : ~0ull;
  if (v > limit) throw gguf_error("ct::gguf::value: " + std::to_string(v) + " does not fit in " + value_type_name(t));
  return x;
}
value value::signed_integer(value_type t, std::int64_t v) {
  value x;
  x.type_ = t;
  x.data_ = v;
  std::int64_t lo, hi;
  switch (t) {
    case value_type::i8: lo = -128, hi = 127; break;
    case value_type::i16: lo = -32768, hi = 32767; break;
    case value_type::i32: lo = std::numeric_limits<std::int32_t>::min(), hi = std::numeric_limits<std::int32_t>::max(); break;
    case value_type::i64: lo = std::numeric_limits<std::int64_t>::min(), hi = std::numeric_limits<std::int64_t>::max(); break;
    default: throw gguf_error(std::string("ct::gguf::value: ") + value_type_name(t) + " is not a signed integer type");
  }
  if (v < lo || v > hi) throw gguf_error("ct::gguf::value: " + std::to_string(v) + " does not fit in " + value_type_name(t));
  return x;
}
value value::floating(value_type t, double v) {
  if (t != value_type::f32 && t != value_type::f64)
    throw gguf_error(std::string("ct::gguf::value: ") + value_type_name(t) + " is not a floating-point type");
  value x;
  x.type_ = t;
  x.data_ = t == value_type::f32 ? static_cast<double>(static_cast<float>(v)) : v;
  return x;
}
value value::boolean(bool v) {
  value x;
  x.type_ = value_type::boolean;
  x.data_ = v;
  return x;
}
value value::string(std::string v) {
  value x;
  x.type_ = value_type::string;
  x.data_ = std::move(v);
  return x;
}
value value::array(value_type element, std::vector<value> elements) {
  for (const value& e : elements)
    if (e.type_ != element)
      throw gguf_error(std::string("ct::gguf::value: an array of ") + value_type_name(element) + " holds a " +
                       value_type_name(e.type_));
  value x;
  x.type_ = value_type::array;
  x.element_ = element;
  x.data_ = std::move(elements);
  return x;
}

void value::check(bool ok, const char* wanted) const {
  if (!ok)
    throw gguf_error(std::string("ct::gguf: a value of type ") + value_type_name(type_) + " read as " + wanted);
}
std::uint64_t value::as_uint() const {
  if (const auto* u = std::get_if<std::uint64_t>(&data_)) return *u;
  const auto* i = std::get_if<std::int64_t>(&data_);
  check(i && *i >= 0, "an unsigned integer");
  return static_cast<std::uint64_t>(*i);
}
std::int64_t value::as_int() const {
  if (const auto* i = std::get_if<std::int64_t>(&data_)) return *i;
  const auto* u = std::get_if<std::uint64_t>(&data_);
  check(u && *u <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()), "a signed integer");
  return static_cast<std::int64_t>(*u);
}
double value::as_float() const {
  const auto* d = std::get_if<double>(&data_);
  check(d != nullptr, "a floating-point number");
  return *d;
}
bool value::as_bool() const {
  const auto* b = std::get_if<bool>(&data_);
  check(b != nullptr, "a bool");
  return *b;
}
const std::string& value::as_string() const {
  const auto* s = std::get_if<std::string>(&data_);
  check(s != nullptr, "a string");
  return *s;
}
const std::vector<value>& value::as_array() const {
  const auto* a = std::get_if<std::vector<value>>(&data_);
  check(a != nullptr, "an array");
  return *a;
}

// ---- file

struct file::state {
  std::string name;
  // Exactly one of: a private mapping, or a buffer.
  unsigned char* map = nullptr;
  std::uint64_t map_size = 0;
  std::vector<unsigned char> buffer;
  unsigned char* data = nullptr;
  std::uint64_t size = 0;

  std::uint32_t version = 0;
  std::uint64_t alignment = default_alignment;
  std::uint64_t data_offset = 0;
  std::vector<std::pair<std::string, value>> metadata;
  std::vector<tensor_info> tensors;

  ~state() {
    if (map) munmap(map, static_cast<std::size_t>(map_size));
  }
};

file file::finish(std::shared_ptr<state> s) {
  cursor c(s->data, s->size, s->name);
  if (c.read<std::uint32_t>("the magic number") != magic) c.fail("not a GGUF file (the magic number is not \"GGUF\")", 0);
  s->version = c.read<std::uint32_t>("the version");
  if (s->version == 1) c.fail("GGUF version 1 (32-bit counts) is not supported; convert the file to version 3", 4);
  if (s->version != 2 && s->version != 3) {
    const std::uint32_t swapped = __builtin_bswap32(s->version);
    c.fail("unsupported GGUF version " + std::to_string(s->version) +
               (swapped == 2 || swapped == 3 ? " (a big-endian file?)" : "") + "; versions 2 and 3 are read",
           4);
  }
  // Each tensor entry needs at least 8 (name) + 4 (rank) + 4 (type) + 8 (offset) bytes, and
  // each metadata entry 8 (key) + 4 (type) + 1.
  const std::uint64_t tensor_count = c.count("the tensor count", 24);
  const std::uint64_t kv_count = c.count("the metadata count", 13);

  std::unordered_set<std::string> keys;
  s->metadata.reserve(static_cast<std::size_t>(kv_count));
  for (std::uint64_t i = 0; i < kv_count; ++i) {
    const std::uint64_t at = c.pos();
    std::string key = c.string("a metadata key");
    if (!keys.insert(key).second) c.fail("duplicate metadata key \"" + key + "\"", at);
    const std::uint64_t type_at = c.pos();
    const auto t = static_cast<value_type>(c.read<std::uint32_t>("a metadata value type"));
    if (!known(t))
      c.fail("unknown value type " + std::to_string(static_cast<std::uint32_t>(t)) + " of key \"" + key + "\"", type_at);
    value v = read_value(c, t, 0);
    s->metadata.emplace_back(std::move(key), std::move(v));
  }
  for (const auto& [key, v] : s->metadata)
    if (key == "general.alignment") {
      if (v.type() != value_type::u32 && v.type() != value_type::u64)
        c.fail(std::string("general.alignment has type ") + value_type_name(v.type()) + ", not uint32", 0);
      const std::uint64_t a = v.as_uint();
      if (a == 0 || (a & (a - 1)) != 0 || a > (1u << 30))
        c.fail("general.alignment " + std::to_string(a) + " is not a power of two up to 2^30", 0);
      s->alignment = a;
    }

  std::unordered_set<std::string> names;
  std::vector<std::uint64_t> entry_offsets;
  s->tensors.reserve(static_cast<std::size_t>(tensor_count));
  for (std::uint64_t i = 0; i < tensor_count; ++i) {
    const std::uint64_t at = c.pos();
    entry_offsets.push_back(at);
    tensor_info t;
    t.name = c.string("a tensor name");
    if (!names.insert(t.name).second) c.fail("duplicate tensor name \"" + t.name + "\"", at);
    const std::uint64_t rank_at = c.pos();
    const auto rank = c.read<std::uint32_t>("a tensor's rank");
    if (rank == 0 || rank > max_rank)
      c.fail("tensor \"" + t.name + "\" has rank " + std::to_string(rank) + " (1 to " + std::to_string(max_rank) + " allowed)",
             rank_at);
    std::uint64_t ne[max_rank] = {1, 1, 1, 1};
    std::uint64_t elements = 1, extents = 1;
    for (std::uint32_t d = 0; d < rank; ++d) {
      const std::uint64_t dim_at = c.pos();
      ne[d] = c.read<std::uint64_t>("a tensor extent");
      // Zero extents count as 1 here, so that every partial product (a row count, say) fits in
      // int64 even when the tensor is empty (fuzz/gguf_fuzz.cpp found [2^40, 2^40, 0]).
      const std::uint64_t e = std::max<std::uint64_t>(ne[d], 1);
      if (ne[d] > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) ||
          extents > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) / e)
        c.fail("tensor \"" + t.name + "\": its element count overflows", dim_at);
      extents *= e;
      elements *= ne[d];
    }
    for (int d = static_cast<int>(rank) - 1; d >= 0; --d) t.shape.push_back(static_cast<index_t>(ne[d]));
    const std::uint64_t type_at = c.pos();
    t.type = c.read<std::uint32_t>("a tensor type");
    const std::uint64_t off_at = c.pos();
    const std::uint64_t rel = c.read<std::uint64_t>("a tensor offset");
    if (const type_traits* tt = traits_of(t.type)) {
      t.type_name = tt->name;
      if (ne[0] % tt->block_elements != 0)
        c.fail("tensor \"" + t.name + "\" of type " + t.type_name + ": its rows of " + std::to_string(ne[0]) +
                   " values are not a whole number of " + std::to_string(tt->block_elements) + "-value blocks",
               type_at);
      // The element count fits in int64, but its bytes need not (8 per value for f64): found by
      // fuzz/gguf_fuzz.cpp, where a wrapped product made a tiny size for a huge tensor.
      const std::uint64_t blocks = elements / tt->block_elements;
      if (blocks > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) / tt->block_bytes)
        c.fail("tensor \"" + t.name + "\" of type " + t.type_name + ": its size in bytes overflows", type_at);
      t.bytes = blocks * tt->block_bytes;
      t.supported = tt->format != nullptr || tt->dense.has_value();
    } else {
      t.type_name = "unknown type " + std::to_string(t.type);
    }
    if (rel % s->alignment != 0)
      c.fail("tensor \"" + t.name + "\": data offset " + std::to_string(rel) + " is not a multiple of the alignment " +
                 std::to_string(s->alignment),
             off_at);
    t.offset = rel;  // made absolute below, once the data section is known
    s->tensors.push_back(std::move(t));
  }
  // The data section starts at the next multiple of the alignment.
  const std::uint64_t end = c.pos();
  s->data_offset = (end + s->alignment - 1) / s->alignment * s->alignment;
  if (s->data_offset > s->size && tensor_count > 0)
    c.fail("truncated: the data section would start at " + std::to_string(s->data_offset) + ", past the end of the file",
           end);
  for (std::size_t i = 0; i < s->tensors.size(); ++i) {
    tensor_info& t = s->tensors[i];
    const std::uint64_t rel = t.offset;
    const std::uint64_t room = s->size >= s->data_offset ? s->size - s->data_offset : 0;
    if (rel > room || t.bytes > room - rel)
      c.fail("tensor \"" + t.name + "\": its " + std::to_string(t.bytes) + " bytes at data offset " + std::to_string(rel) +
                 " end past the end of the file (" + std::to_string(room) + " bytes of data)",
             entry_offsets[i]);
    t.offset = s->data_offset + rel;
  }
  return file(std::move(s));
}

file file::parse(std::vector<unsigned char> bytes, std::string name) {
  auto s = std::make_shared<state>();
  s->name = std::move(name);
  s->buffer = std::move(bytes);
  s->data = s->buffer.data();
  s->size = s->buffer.size();
  return finish(std::move(s));
}

file file::open(const std::string& path) {
  auto s = std::make_shared<state>();
  s->name = path;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw gguf_error("ct::gguf: cannot open " + path + ": " + std::strerror(errno));
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    throw gguf_error("ct::gguf: cannot stat " + path + ": " + std::strerror(e));
  }
  s->size = static_cast<std::uint64_t>(st.st_size);
  if (s->size > 0) {
    // Private and writable: dense views may be written (copy-on-write, never the file).
    void* m = mmap(nullptr, static_cast<std::size_t>(s->size), PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    if (m == MAP_FAILED) {
      const int e = errno;
      ::close(fd);
      throw gguf_error("ct::gguf: cannot map " + path + ": " + std::strerror(e));
    }
    s->map = static_cast<unsigned char*>(m);
    s->map_size = s->size;
    s->data = s->map;
  }
  ::close(fd);  // the mapping stays valid
  return finish(std::move(s));
}

std::uint32_t file::version() const noexcept { return state_->version; }
std::uint64_t file::alignment() const noexcept { return state_->alignment; }
std::uint64_t file::data_offset() const noexcept { return state_->data_offset; }
std::uint64_t file::size() const noexcept { return state_->size; }
const unsigned char* file::bytes() const noexcept { return state_->data; }
unsigned char* file::mutable_bytes() const noexcept { return state_->data; }
const std::vector<std::pair<std::string, value>>& file::metadata() const noexcept { return state_->metadata; }
const std::vector<tensor_info>& file::tensors() const noexcept { return state_->tensors; }

const value* file::find(std::string_view key) const noexcept {
  for (const auto& [k, v] : state_->metadata)
    if (k == key) return &v;
  return nullptr;
}
const value& file::at(std::string_view key) const {
  if (const value* v = find(key)) return *v;
  throw gguf_error("ct::gguf: " + state_->name + " has no metadata key \"" + std::string(key) + "\"");
}

namespace {
template <class F>
auto with_key(const std::string& file_name, std::string_view key, F f) {
  try {
    return f();
  } catch (const gguf_error& e) {
    throw gguf_error(std::string(e.what()) + " (key \"" + std::string(key) + "\" of " + file_name + ")");
  }
}
}  // namespace

std::uint64_t file::get_uint(std::string_view key) const {
  const value& v = at(key);
  return with_key(state_->name, key, [&] { return v.as_uint(); });
}
std::int64_t file::get_int(std::string_view key) const {
  const value& v = at(key);
  return with_key(state_->name, key, [&] { return v.as_int(); });
}
double file::get_float(std::string_view key) const {
  const value& v = at(key);
  return with_key(state_->name, key, [&] { return v.as_float(); });
}
bool file::get_bool(std::string_view key) const {
  const value& v = at(key);
  return with_key(state_->name, key, [&] { return v.as_bool(); });
}
const std::string& file::get_string(std::string_view key) const {
  const value& v = at(key);
  return *with_key(state_->name, key, [&] { return &v.as_string(); });
}

const tensor_info* file::find_tensor(std::string_view name) const noexcept {
  for (const auto& t : state_->tensors)
    if (t.name == name) return &t;
  return nullptr;
}
const tensor_info& file::tensor(std::string_view name) const {
  if (const tensor_info* t = find_tensor(name)) return *t;
  throw gguf_error("ct::gguf: " + state_->name + " has no tensor \"" + std::string(name) + "\"");
}

encoded_tensor file::encoded(std::string_view name) const {
  const tensor_info& t = tensor(name);
  const type_traits* tt = traits_of(t.type);
  if (!tt || !tt->format)
    throw gguf_error("ct::gguf: tensor \"" + t.name + "\" of " + state_->name + " has type " + t.type_name +
                     ", which has no ct block format (encoded views: q8_0, q4_0, q4_K, q6_K, f16, bf16" +
                     (tt && tt->dense ? std::string("; use dense<") + dtype_name(*tt->dense) + ">()" : std::string()) + ")");
  return encoded_tensor::view(find_format(tt->format), t.shape, state_->data + t.offset, static_cast<std::size_t>(t.bytes));
}

const tensor_info& file::dense_info(std::string_view name, dtype want) const {
  const tensor_info& t = tensor(name);
  const type_traits* tt = traits_of(t.type);
  if (!tt || !tt->dense || *tt->dense != want)
    throw gguf_error("ct::gguf: tensor \"" + t.name + "\" of " + state_->name + " has type " + t.type_name +
                     ", not viewable as " + dtype_name(want) +
                     (tt && tt->dense ? std::string(" (use dense<") + dtype_name(*tt->dense) + ">())"
                      : tt && tt->format ? std::string(" (use encoded())")
                                         : std::string()));
  if (t.offset % dtype_bytes(want) != 0)  // only with an alignment below the element size
    throw gguf_error("ct::gguf: tensor \"" + t.name + "\" of " + state_->name + " at offset " + std::to_string(t.offset) +
                     " is not aligned for " + dtype_name(want));
  return t;
}

}  // namespace ct::gguf
