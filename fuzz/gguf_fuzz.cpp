// fuzz/gguf_fuzz.cpp — libFuzzer target: the GGUF reader on arbitrary bytes (docs/reliability.md).
// Every input must either parse or be refused with a ct::error; whatever parses must be fully
// readable: every metadata value through its accessor, every supported tensor through its view,
// every byte of each view touched (so an out-of-bounds offset or size that slipped past the
// checks is an AddressSanitizer report, not a silent read).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "ct/ct.hpp"
#include "ct/io/gguf.hpp"

namespace {

volatile double sink;

void touch(const ct::gguf::value& v, int depth = 0) {
  using ct::gguf::value_type;
  switch (v.type()) {
    case value_type::string: sink = static_cast<double>(v.as_string().size()); break;
    case value_type::boolean: sink = v.as_bool(); break;
    case value_type::f32:
    case value_type::f64: sink = v.as_float(); break;
    case value_type::array:
      for (const auto& e : v.as_array()) touch(e, depth + 1);
      break;
    default:
      try {
        sink = static_cast<double>(v.as_int());
      } catch (const ct::error&) {
        sink = static_cast<double>(v.as_uint());  // a u64 above int64's range
      }
  }
}

template <class T>
void read_dense(const ct::gguf::file& f, const ct::gguf::tensor_info& t) {
  const auto d = f.dense<T>(t.name);
  const T* p = d.data();
  double s = 0;
  for (ct::index_t i = 0; i < d.size(); ++i) s += static_cast<double>(static_cast<float>(p[i]));
  sink = s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const auto f = ct::gguf::file::parse(std::vector<unsigned char>(data, data + size), "fuzz input");
    for (const auto& [key, v] : f.metadata()) {
      touch(v);
      if (f.find(key) == nullptr) __builtin_trap();  // every listed key is found
    }
    for (const auto& t : f.tensors()) {
      if (f.find_tensor(t.name) == nullptr) __builtin_trap();
      if (!t.supported) continue;
      // (each type through the accessor that must take it; dense types through dense<T>)
      using tt = ct::gguf::tensor_type;
      switch (static_cast<tt>(t.type)) {
        case tt::f32: read_dense<float>(f, t); break;
        case tt::f64: read_dense<double>(f, t); break;
        case tt::i8: read_dense<std::int8_t>(f, t); break;
        case tt::i16: read_dense<std::int16_t>(f, t); break;
        case tt::i32: read_dense<std::int32_t>(f, t); break;
        case tt::i64: read_dense<std::int64_t>(f, t); break;
        default: {
          const auto e = f.encoded(t.name);
          if (e.size_bytes() != t.bytes) __builtin_trap();
          unsigned s = 0;
          for (std::size_t i = 0; i < e.size_bytes(); ++i) s += e.data()[i];
          sink = s;
          if (e.rows() > 0 && e.cols() > 0 && e.cols() <= (1 << 16)) {
            const auto one = ct::encoded_tensor::view(e.fmt(), {1, e.cols()}, e.row(e.rows() - 1), e.row_bytes());
            sink = static_cast<double>(ct::decode(one).size());
          }
        }
      }
    }
  } catch (const ct::error&) {
    // refused with a clear error: the expected outcome for most inputs
  }
  return 0;
}
