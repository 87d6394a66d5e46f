// src/io/gguf_types.hpp — what the GGUF reader (gguf.cpp) and writer (gguf_writer.cpp) share
// (internal): the format's constants and ct's table of GGUF tensor types.
#pragma once
#include <cstdint>
#include <optional>

#include "ct/core/dtype.hpp"

namespace ct::gguf::detail {

inline constexpr std::uint32_t magic = 0x46554747;  // "GGUF" read as a little-endian uint32
inline constexpr std::uint64_t default_alignment = 32;
inline constexpr int max_rank = 4;  // GGML_MAX_DIMS

// What ct knows of a tensor type: its name, its block (values, bytes), and how ct views it.
struct type_traits {
  std::uint32_t number;
  const char* name;
  std::uint64_t block_elements, block_bytes;
  const char* format;             // ct::find_format name for encoded(), or null
  std::optional<dtype> dense;     // element type for dense(), if any
};

inline constexpr type_traits types[] = {
    {0, "f32", 1, 4, nullptr, dtype::f32},
    {1, "f16", 1, 2, "f16", dtype::f16},
    {2, "q4_0", 32, 18, "q4_0", std::nullopt},
    {3, "q4_1", 32, 20, nullptr, std::nullopt},
    {6, "q5_0", 32, 22, nullptr, std::nullopt},
    {7, "q5_1", 32, 24, nullptr, std::nullopt},
    {8, "q8_0", 32, 34, "q8_0", std::nullopt},
    {9, "q8_1", 32, 36, nullptr, std::nullopt},
    {10, "q2_K", 256, 84, nullptr, std::nullopt},
    {11, "q3_K", 256, 110, nullptr, std::nullopt},
    {12, "q4_K", 256, 144, "q4_K", std::nullopt},
    {13, "q5_K", 256, 176, nullptr, std::nullopt},
    {14, "q6_K", 256, 210, "q6_K", std::nullopt},
    {15, "q8_K", 256, 292, nullptr, std::nullopt},
    {24, "i8", 1, 1, nullptr, dtype::i8},
    {25, "i16", 1, 2, nullptr, dtype::i16},
    {26, "i32", 1, 4, nullptr, dtype::i32},
    {27, "i64", 1, 8, nullptr, dtype::i64},
    {28, "f64", 1, 8, nullptr, dtype::f64},
    {30, "bf16", 1, 2, "bf16", dtype::bf16},
};

inline const type_traits* traits_of(std::uint32_t number) {
  for (const auto& t : types)
    if (t.number == number) return &t;
  return nullptr;
}

}  // namespace ct::gguf::detail
