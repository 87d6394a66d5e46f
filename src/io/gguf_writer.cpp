// GGUF files (ct/io/gguf.hpp): the writer — metadata and tensors laid out as the format wants
// (each tensor's data at a multiple of the alignment after the header).
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "ct/encoded/format.hpp"
#include "ct/io/gguf.hpp"
#include "src/io/gguf_types.hpp"

namespace ct::gguf {

using detail::default_alignment;
using detail::magic;
using detail::max_rank;
using detail::types;

namespace {

void put(std::vector<unsigned char>& out, const void* p, std::size_t n) {
  const auto* b = static_cast<const unsigned char*>(p);
  out.insert(out.end(), b, b + n);
}
template <class T>
void put(std::vector<unsigned char>& out, T v) {
  put(out, &v, sizeof v);
}
void put_string(std::vector<unsigned char>& out, const std::string& s) {
  put<std::uint64_t>(out, s.size());
  put(out, s.data(), s.size());
}

void put_value(std::vector<unsigned char>& out, const value& v) {
  switch (v.type()) {
    case value_type::u8: put<std::uint8_t>(out, static_cast<std::uint8_t>(v.as_uint())); break;
    case value_type::u16: put<std::uint16_t>(out, static_cast<std::uint16_t>(v.as_uint())); break;
    case value_type::u32: put<std::uint32_t>(out, static_cast<std::uint32_t>(v.as_uint())); break;
    case value_type::u64: put<std::uint64_t>(out, v.as_uint()); break;
    case value_type::i8: put<std::int8_t>(out, static_cast<std::int8_t>(v.as_int())); break;
    case value_type::i16: put<std::int16_t>(out, static_cast<std::int16_t>(v.as_int())); break;
    case value_type::i32: put<std::int32_t>(out, static_cast<std::int32_t>(v.as_int())); break;
    case value_type::i64: put<std::int64_t>(out, v.as_int()); break;
    case value_type::f32: put<float>(out, static_cast<float>(v.as_float())); break;
    case value_type::f64: put<double>(out, v.as_float()); break;
    case value_type::boolean: put<std::uint8_t>(out, v.as_bool() ? 1 : 0); break;
    case value_type::string: put_string(out, v.as_string()); break;
    case value_type::array:
      put<std::uint32_t>(out, static_cast<std::uint32_t>(v.element_type()));
      put<std::uint64_t>(out, v.as_array().size());
      for (const value& e : v.as_array()) put_value(out, e);
      break;
  }
}

std::uint32_t number_of_dense(dtype t) {
  for (const auto& tt : types)
    if (tt.dense && *tt.dense == t) return tt.number;
  throw gguf_error(std::string("ct::gguf::writer: GGUF has no tensor type for ") + dtype_name(t));
}

}  // namespace

writer::writer(std::uint32_t version, std::uint64_t alignment) : version_(version), alignment_(alignment) {
  if (version != 2 && version != 3) throw gguf_error("ct::gguf::writer: version " + std::to_string(version) + " (2 or 3)");
  if (alignment == 0 || (alignment & (alignment - 1)) != 0 || alignment > (1u << 30))
    throw gguf_error("ct::gguf::writer: alignment " + std::to_string(alignment) + " is not a power of two up to 2^30");
  if (alignment != default_alignment)
    metadata_.emplace_back("general.alignment", value::unsigned_integer(value_type::u32, alignment));
}

void writer::set(std::string key, value v) {
  for (const auto& [k, _] : metadata_)
    if (k == key) throw gguf_error("ct::gguf::writer: metadata key \"" + key + "\" is already set");
  metadata_.emplace_back(std::move(key), std::move(v));
}

void writer::check_new_name(const std::string& name) const {
  for (const auto& t : tensors_)
    if (t.name == name) throw gguf_error("ct::gguf::writer: tensor \"" + name + "\" is already added");
}

void writer::add_bytes(std::string name, const dims& shape, dtype type, const unsigned char* data, std::size_t n) {
  check_new_name(name);
  if (shape.size() < 1 || shape.size() > max_rank)
    throw gguf_error("ct::gguf::writer: tensor \"" + name + "\" has rank " + std::to_string(shape.size()) +
                     " (1 to 4 allowed)");
  tensors_.push_back(entry{std::move(name), shape, number_of_dense(type), std::vector<unsigned char>(data, data + n)});
}

void writer::add(std::string name, const encoded_tensor& e) {
  check_new_name(name);
  std::uint32_t number = 0;
  bool found = false;
  for (const auto& tt : types)
    if (tt.format && e.fmt().name() == tt.format) number = tt.number, found = true;
  if (!found)
    throw gguf_error("ct::gguf::writer: block format " + e.fmt().name() + " of tensor \"" + name +
                     "\" has no GGUF tensor type");
  if (e.rank() > max_rank)
    throw gguf_error("ct::gguf::writer: tensor \"" + name + "\" has rank " + std::to_string(e.rank()) + " (1 to 4 allowed)");
  tensors_.push_back(entry{std::move(name), e.shape(), number, std::vector<unsigned char>(e.data(), e.data() + e.size_bytes())});
}

std::vector<unsigned char> writer::bytes() const {
  std::vector<unsigned char> out;
  put<std::uint32_t>(out, magic);
  put<std::uint32_t>(out, version_);
  put<std::uint64_t>(out, tensors_.size());
  put<std::uint64_t>(out, metadata_.size());
  for (const auto& [k, v] : metadata_) {
    put_string(out, k);
    put<std::uint32_t>(out, static_cast<std::uint32_t>(v.type()));
    put_value(out, v);
  }
  std::uint64_t offset = 0;
  std::vector<std::uint64_t> offsets;
  for (const auto& t : tensors_) {
    put_string(out, t.name);
    put<std::uint32_t>(out, static_cast<std::uint32_t>(t.shape.size()));
    for (int d = t.shape.size() - 1; d >= 0; --d) put<std::uint64_t>(out, static_cast<std::uint64_t>(t.shape[d]));
    put<std::uint32_t>(out, t.type);
    put<std::uint64_t>(out, offset);
    offsets.push_back(offset);
    offset = (offset + t.data.size() + alignment_ - 1) / alignment_ * alignment_;
  }
  out.resize((out.size() + alignment_ - 1) / alignment_ * alignment_, 0);
  const std::size_t base = out.size();
  for (std::size_t i = 0; i < tensors_.size(); ++i) {
    out.resize(base + offsets[i], 0);
    put(out, tensors_[i].data.data(), tensors_[i].data.size());
  }
  return out;
}

void writer::write(const std::string& path) const {
  const std::vector<unsigned char> b = bytes();
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) throw gguf_error("ct::gguf::writer: cannot create " + path + ": " + std::strerror(errno));
  f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  f.close();
  if (!f) throw gguf_error("ct::gguf::writer: cannot write " + path + ": " + std::strerror(errno));
}

}  // namespace ct::gguf
