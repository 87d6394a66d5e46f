// GGUF files (ct/io/gguf.hpp): a file written byte by byte in the test (independently of
// ct's writer) read back; the writer round trip for every value type and every tensor type ct
// views; and every malformed-file case of the issue, each built from the hand-made file by
// changing bytes, giving a ct::gguf_error that names the problem and the offset.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <unistd.h>
#include <vector>

#include "ct/ct.hpp"
#include "ct/io/gguf.hpp"
#include "support/reference.hpp"

using ct::index_t;
namespace gguf = ct::gguf;
using bytes_t = std::vector<unsigned char>;

namespace {

// ---- a byte-level builder, written from the GGUF specification (not from ct's writer)
void u32(bytes_t& b, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) b.push_back(static_cast<unsigned char>(v >> (8 * i)));
}
void u64(bytes_t& b, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) b.push_back(static_cast<unsigned char>(v >> (8 * i)));
}
void str(bytes_t& b, const std::string& s) {
  u64(b, s.size());
  b.insert(b.end(), s.begin(), s.end());
}
void f32(bytes_t& b, float v) {
  std::uint32_t u;
  std::memcpy(&u, &v, 4);
  u32(b, u);
}

// Offsets of interesting fields in the hand-made file, for the corruption cases.
struct layout {
  std::size_t version, tensor_count, kv_count, key_len, value_type, value_len, tensor_name_len, rank, ne0, ne1, type,
      offset, data;
};

/// GGUF v3, one metadata key ("general.name" = "tiny"), one f32 tensor "w" with ne = {2, 3}
/// (a ct [3, 2] tensor) holding 0.5, 1.5, …, 5.5, aligned to 32.
bytes_t tiny_file(layout* at = nullptr) {
  bytes_t b;
  layout l{};
  u32(b, 0x46554747);  // "GGUF"
  l.version = b.size();
  u32(b, 3);
  l.tensor_count = b.size();
  u64(b, 1);
  l.kv_count = b.size();
  u64(b, 1);
  l.key_len = b.size();
  str(b, "general.name");
  l.value_type = b.size();
  u32(b, 8);  // string
  l.value_len = b.size();
  str(b, "tiny");
  l.tensor_name_len = b.size();
  str(b, "w");
  l.rank = b.size();
  u32(b, 2);
  l.ne0 = b.size();
  u64(b, 2);
  l.ne1 = b.size();
  u64(b, 3);
  l.type = b.size();
  u32(b, 0);  // f32
  l.offset = b.size();
  u64(b, 0);
  while (b.size() % 32) b.push_back(0);
  l.data = b.size();
  for (int i = 0; i < 6; ++i) f32(b, 0.5f + static_cast<float>(i));
  if (at) *at = l;
  return b;
}

void put_u32(bytes_t& b, std::size_t at, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) b[at + static_cast<std::size_t>(i)] = static_cast<unsigned char>(v >> (8 * i));
}
void put_u64(bytes_t& b, std::size_t at, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) b[at + static_cast<std::size_t>(i)] = static_cast<unsigned char>(v >> (8 * i));
}

/// The message of the gguf_error parsing b throws (fails the test when none is thrown).
std::string parse_error(const bytes_t& b) {
  try {
    gguf::file::parse(b, "case.gguf");
  } catch (const ct::gguf_error& e) {
    return e.what();
  }
  FAIL("no gguf_error");
  return {};
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

std::string temp_path(const char* stem) {
  return "/tmp/ct_test_" + std::string(stem) + "_" + std::to_string(::getpid()) + ".gguf";
}

}  // namespace

TEST_CASE("gguf: a file written byte by byte from the specification reads back", "[gguf]") {
  const auto f = gguf::file::parse(tiny_file(), "tiny.gguf");
  CHECK(f.version() == 3);
  CHECK(f.alignment() == 32);
  CHECK(f.data_offset() % 32 == 0);
  REQUIRE(f.metadata().size() == 1);
  CHECK(f.get_string("general.name") == "tiny");
  REQUIRE(f.tensors().size() == 1);
  const auto& t = f.tensor("w");
  CHECK(t.shape == ct::dims{3, 2});  // GGUF's ne = {2, 3}, outermost first
  CHECK(t.type_name == "f32");
  CHECK(t.bytes == 24);
  CHECK(t.supported);
  auto w = f.dense<float>("w");
  CHECK(w.shape() == ct::dims{3, 2});
  for (index_t i = 0; i < 3; ++i)
    for (index_t j = 0; j < 2; ++j) CHECK(w(i, j) == 0.5f + static_cast<float>(i * 2 + j));
  CHECK(w.data() == reinterpret_cast<const float*>(f.bytes() + f.data_offset()));  // a view, not a copy
}

TEST_CASE("gguf: writer round trip: every value type, every tensor type ct views, through a mapped file", "[gguf]") {
  auto xf = ct::random_uniform<float>({3, 5}, 1, -2.0f, 2.0f);
  auto xd = ct::random_uniform<double>({4}, 2, -2.0, 2.0);
  auto xh = ct::eval(ct::cast<ct::float16>(ct::random_uniform<float>({2, 8}, 3, -2.0f, 2.0f)));
  auto xb = ct::eval(ct::cast<ct::bfloat16>(ct::random_uniform<float>({2, 8}, 4, -2.0f, 2.0f)));
  auto xi = ct::eval(ct::cast<std::int32_t>(ct::random_uniform<float>({7}, 5, -100.0f, 100.0f)));
  auto x8 = ct::eval(ct::cast<std::int8_t>(ct::random_uniform<float>({2, 3, 4}, 6, -100.0f, 100.0f)));
  auto w = ct::random_uniform<float>({4, 256}, 7, -1.0f, 1.0f);
  std::vector<std::pair<std::string, ct::encoded_tensor>> encoded;
  for (const char* fmt : {"q8_0", "q4_0", "q4_K", "q6_K", "f16", "bf16"})
    encoded.emplace_back(std::string("enc.") + fmt, ct::encode(w, ct::find_format(fmt)));

  for (std::uint64_t alignment : {std::uint64_t{32}, std::uint64_t{64}, std::uint64_t{8}}) {
    gguf::writer out(3, alignment);
    out.set("u8", gguf::value::unsigned_integer(gguf::value_type::u8, 200));
    out.set("i8", gguf::value::signed_integer(gguf::value_type::i8, -100));
    out.set("u16", gguf::value::unsigned_integer(gguf::value_type::u16, 60000));
    out.set("i16", gguf::value::signed_integer(gguf::value_type::i16, -30000));
    out.set("u32", gguf::value::unsigned_integer(gguf::value_type::u32, 4000000000u));
    out.set("i32", gguf::value::signed_integer(gguf::value_type::i32, -2000000000));
    out.set("u64", gguf::value::unsigned_integer(gguf::value_type::u64, 1ull << 60));
    out.set("i64", gguf::value::signed_integer(gguf::value_type::i64, -(1ll << 60)));
    out.set("f32", gguf::value::floating(gguf::value_type::f32, 0.1));
    out.set("f64", gguf::value::floating(gguf::value_type::f64, 0.1));
    out.set("bool", gguf::value::boolean(true));
    out.set("string", gguf::value::string(std::string("h\0llo", 5)));
    out.set("tokens", gguf::value::array(gguf::value_type::string,
                                         {gguf::value::string("<s>"), gguf::value::string(""), gguf::value::string("ab")}));
    out.set("nested", gguf::value::array(gguf::value_type::array,
                                         {gguf::value::array(gguf::value_type::i32, {gguf::value::signed_integer(gguf::value_type::i32, 7)}),
                                          gguf::value::array(gguf::value_type::f32, {})}));
    out.add("f", xf);
    out.add("d", xd);
    out.add("h", xh);
    out.add("b", xb);
    out.add("i", xi);
    out.add("i8", x8);
    for (const auto& [name, e] : encoded) out.add(name, e);
    const std::string path = temp_path("roundtrip");
    out.write(path);
    const auto f = gguf::file::open(path);
    INFO("alignment " << alignment);
    CHECK(f.alignment() == alignment);
    CHECK(f.get_uint("u8") == 200);
    CHECK(f.get_int("i8") == -100);
    CHECK(f.get_uint("u16") == 60000);
    CHECK(f.get_int("i16") == -30000);
    CHECK(f.get_uint("u32") == 4000000000u);
    CHECK(f.get_int("i32") == -2000000000);
    CHECK(f.get_uint("u64") == (1ull << 60));
    CHECK(f.get_int("i64") == -(1ll << 60));
    CHECK(f.get_float("f32") == static_cast<double>(0.1f));
    CHECK(f.get_float("f64") == 0.1);
    CHECK(f.get_bool("bool"));
    CHECK(f.get_string("string") == std::string("h\0llo", 5));
    const auto& tokens = f.at("tokens").as_array();
    REQUIRE(tokens.size() == 3);
    CHECK(f.at("tokens").element_type() == gguf::value_type::string);
    CHECK(tokens[2].as_string() == "ab");
    CHECK(f.at("nested").as_array()[0].as_array()[0].as_int() == 7);
    CHECK(f.at("nested").as_array()[1].as_array().empty());
    CHECK(ct_test::bitwise_equal(f.dense<float>("f"), xf));
    CHECK(ct_test::bitwise_equal(f.dense<double>("d"), xd));
    CHECK(ct_test::bitwise_equal(f.dense<ct::float16>("h"), xh));
    CHECK(ct_test::bitwise_equal(f.dense<ct::bfloat16>("b"), xb));
    CHECK(ct_test::bitwise_equal(f.dense<std::int32_t>("i"), xi));
    CHECK(ct_test::bitwise_equal(f.dense<std::int8_t>("i8"), x8));
    for (const auto& [name, e] : encoded) {
      INFO(name);
      const auto v = f.encoded(name);
      CHECK(v.fmt() == e.fmt());
      CHECK(v.shape() == e.shape());
      CHECK(!v.owns_bytes());
      REQUIRE(v.size_bytes() == e.size_bytes());
      CHECK(std::memcmp(v.data(), e.data(), e.size_bytes()) == 0);
      CHECK(ct_test::bitwise_equal(ct::decode(v), ct::decode(e)));
    }
    for (const auto& t : f.tensors()) CHECK((t.offset - f.data_offset()) % alignment == 0);
    CHECK(f.tensor("enc.q4_K").type_name == "q4_K");
    CHECK(f.tensor("enc.q4_K").type == static_cast<std::uint32_t>(gguf::tensor_type::q4_K));
    CHECK(f.tensor("enc.q6_K").bytes == 4 * 210);
    CHECK(f.tensor("i8").shape == ct::dims{2, 3, 4});
    // The same bytes parse the same from memory.
    CHECK(gguf::file::parse(out.bytes()).tensors().size() == f.tensors().size());
    // Views are copy-on-write: writing one changes this process's bytes, not the file.
    auto fv = f.dense<float>("f");
    fv(0, 0) = 1234.0f;
    CHECK(gguf::file::open(path).dense<float>("f")(0, 0) == xf(0, 0));
    std::remove(path.c_str());
  }
}

TEST_CASE("gguf: accessor errors name the key, the tensor and the types", "[gguf]") {
  gguf::writer out;
  out.set("name", gguf::value::string("x"));
  out.set("count", gguf::value::signed_integer(gguf::value_type::i32, -3));
  out.add("f", ct::random_uniform<float>({2, 32}, 1, -1.0f, 1.0f));
  out.add("q", ct::encode(ct::random_uniform<float>({2, 32}, 2, -1.0f, 1.0f), ct::formats::q8_0()));
  const auto f = gguf::file::parse(out.bytes(), "acc.gguf");
  CHECK_THROWS_WITH(f.get_uint("name"), Catch::Contains("string") && Catch::Contains("\"name\""));
  CHECK_THROWS_WITH(f.get_uint("count"), Catch::Contains("int32") && Catch::Contains("unsigned"));
  CHECK(f.get_int("count") == -3);
  CHECK_THROWS_WITH(f.get_string("missing"), Catch::Contains("no metadata key \"missing\""));
  CHECK_THROWS_WITH(f.dense<float>("q"), Catch::Contains("q8_0") && Catch::Contains("encoded()"));
  CHECK_THROWS_WITH(f.dense<double>("f"), Catch::Contains("f32") && Catch::Contains("dense<float32>"));
  CHECK_THROWS_WITH(f.encoded("f"), Catch::Contains("no ct block format") && Catch::Contains("dense<float32>"));
  CHECK_THROWS_WITH(f.encoded("nope"), Catch::Contains("no tensor \"nope\""));
  CHECK_THROWS_WITH(gguf::file::open("/nonexistent/dir/model.gguf"), Catch::Contains("/nonexistent/dir/model.gguf"));
}

TEST_CASE("gguf: writer errors", "[gguf]") {
  CHECK_THROWS_AS(gguf::writer(1), ct::gguf_error);
  CHECK_THROWS_AS(gguf::writer(3, 48), ct::gguf_error);
  gguf::writer out;
  out.set("k", gguf::value::boolean(false));
  CHECK_THROWS_WITH(out.set("k", gguf::value::boolean(true)), Catch::Contains("already set"));
  out.add("t", ct::tensor<float>({2}));
  CHECK_THROWS_WITH(out.add("t", ct::tensor<float>({2})), Catch::Contains("already added"));
  CHECK_THROWS_AS(out.add("u", ct::tensor<std::uint8_t>({2})), ct::gguf_error);  // GGUF has no uint8 tensors
  CHECK_THROWS_AS(out.add("r5", ct::tensor<float>({1, 1, 1, 1, 2})), ct::gguf_error);
  CHECK_THROWS_AS(gguf::value::unsigned_integer(gguf::value_type::u8, 256), ct::gguf_error);
  CHECK_THROWS_AS(gguf::value::signed_integer(gguf::value_type::u8, 1), ct::gguf_error);
  CHECK_THROWS_AS(gguf::value::array(gguf::value_type::u8, {gguf::value::boolean(true)}), ct::gguf_error);
}

TEST_CASE("gguf: malformed files are errors naming the problem and the offset", "[gguf]") {
  layout at{};
  const bytes_t good = tiny_file(&at);
  auto off = [](std::size_t o) { return "at offset " + std::to_string(o) + " "; };

  bytes_t b = good;
  b[0] = 'X';
  CHECK(has(parse_error(b), "not a GGUF file"));
  CHECK(has(parse_error(b), off(0)));

  b = good;
  put_u32(b, at.version, 1);
  CHECK(has(parse_error(b), "version 1"));
  put_u32(b, at.version, 7);
  CHECK(has(parse_error(b), "unsupported GGUF version 7"));
  put_u32(b, at.version, 0x03000000);
  CHECK(has(parse_error(b), "big-endian"));

  // Every truncation of the file: never a crash, always an error naming the truncation.
  for (std::size_t n = 0; n < good.size(); ++n) {
    const std::string m = parse_error(bytes_t(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(n)));
    INFO("truncated to " << n << " bytes: " << m);
    CHECK((has(m, "truncated") || has(m, "exceeds") || has(m, "end past the end")));
  }

  b = good;
  put_u64(b, at.tensor_count, 1ull << 62);
  CHECK(has(parse_error(b), "the tensor count"));
  CHECK(has(parse_error(b), off(at.tensor_count)));
  b = good;
  put_u64(b, at.kv_count, ~0ull);
  CHECK(has(parse_error(b), "the metadata count"));
  b = good;
  put_u64(b, at.key_len, 1ull << 40);
  CHECK(has(parse_error(b), "string length"));
  CHECK(has(parse_error(b), off(at.key_len)));
  b = good;
  put_u64(b, at.value_len, ~0ull - 3);
  CHECK(has(parse_error(b), "string length"));
  b = good;
  put_u32(b, at.value_type, 13);
  CHECK(has(parse_error(b), "unknown value type 13"));
  CHECK(has(parse_error(b), off(at.value_type)));
  b = good;
  put_u32(b, at.rank, 0);
  CHECK(has(parse_error(b), "rank 0"));
  put_u32(b, at.rank, 5);
  CHECK(has(parse_error(b), "rank 5"));
  CHECK(has(parse_error(b), off(at.rank)));
  b = good;
  put_u64(b, at.ne0, 1ull << 40);
  put_u64(b, at.ne1, 1ull << 40);
  CHECK(has(parse_error(b), "overflows"));
  // Regression (fuzz/gguf_fuzz.cpp found it): an element count that fits in int64 whose size
  // in bytes does not — 2^57 + 3 rows of 32 floats, 2^64 + 384 bytes — wrapped to 384 bytes,
  // and the view read past the file.
  b = good;
  put_u64(b, at.ne0, 32);
  put_u64(b, at.ne1, (1ull << 57) + 3);
  CHECK(has(parse_error(b), "tensor \"w\" of type f32: its size in bytes overflows"));
  CHECK(has(parse_error(b), off(at.type)));
  // Regression (fuzz/gguf_fuzz.cpp): an empty tensor whose other extents multiply past int64,
  // ne = {0, 2^40, 2^40} (a ct [2^40, 2^40, 0] q8_0 tensor): its element count is 0, but its
  // row count overflowed when the view was made.
  {
    bytes_t e;
    u32(e, 0x46554747);
    u32(e, 3);
    u64(e, 1);  // one tensor
    u64(e, 0);  // no metadata
    str(e, "e");
    u32(e, 3);
    const std::size_t ne1_at = e.size() + 8;
    u64(e, 0);
    u64(e, 1ull << 40);
    u64(e, 1ull << 40);
    u32(e, 8);  // q8_0
    u64(e, 0);
    while (e.size() % 32) e.push_back(0);
    CHECK(has(parse_error(e), "tensor \"e\": its element count overflows"));
    CHECK(has(parse_error(e), off(ne1_at + 8)));
  }
  b = good;
  put_u64(b, at.ne1, 1ull << 40);  // fits in int64 but not in the file
  CHECK(has(parse_error(b), "end past the end of the file"));
  b = good;
  put_u64(b, at.offset, 4);
  CHECK(has(parse_error(b), "not a multiple of the alignment 32"));
  CHECK(has(parse_error(b), off(at.offset)));
  b = good;
  put_u64(b, at.offset, 32);
  CHECK(has(parse_error(b), "end past the end of the file"));
  b = good;
  put_u64(b, at.offset, ~0ull & ~31ull);
  CHECK(has(parse_error(b), "end past the end of the file"));
  b = good;
  put_u32(b, at.type, 8);  // q8_0: rows of 2 values are not 32-value blocks
  CHECK(has(parse_error(b), "not a whole number of 32-value blocks"));
  CHECK(has(parse_error(b), off(at.type)));
}

TEST_CASE("gguf: duplicate names, bad values and alignment are errors; an unknown tensor type is not", "[gguf]") {
  // Two tensors named "w" (and two keys named "k"), built from the specification.
  auto two = [](const std::string& name2, std::uint32_t type2, const std::string& key2, std::uint32_t bool_value,
                std::uint64_t ne2 = 4) {
    bytes_t b;
    u32(b, 0x46554747);
    u32(b, 3);
    u64(b, 2);
    u64(b, 2);
    str(b, "k");
    u32(b, 7);  // bool
    b.push_back(static_cast<unsigned char>(bool_value));
    str(b, key2);
    u32(b, 4);  // uint32
    u32(b, 64);
    for (int t = 0; t < 2; ++t) {
      str(b, t == 0 ? "w" : name2);
      u32(b, 1);
      u64(b, t == 0 ? 4 : ne2);
      u32(b, t == 0 ? 0 : type2);
      u64(b, t == 0 ? 0 : 64);
    }
    while (b.size() % 64) b.push_back(0);
    for (int i = 0; i < 32; ++i) f32(b, static_cast<float>(i));
    return b;
  };
  CHECK(has(parse_error(two("w", 0, "general.alignment", 1)), "duplicate tensor name \"w\""));
  CHECK(has(parse_error(two("v", 0, "k", 1)), "duplicate metadata key \"k\""));
  CHECK(has(parse_error(two("v", 0, "general.alignment", 2)), "a bool value of 2"));
  {
    bytes_t b = two("v", 0, "general.alignment", 1);
    // general.alignment = 48: not a power of two.
    const std::size_t value_at = 4 + 4 + 8 + 8 + (8 + 1) + 4 + 1 + (8 + 17) + 4;
    put_u32(b, value_at, 48);
    CHECK(has(parse_error(b), "general.alignment 48"));
  }
  // Type 99 is unknown: the file opens, the other tensor works, asking for this one is an error.
  const auto f = gguf::file::parse(two("odd", 99, "general.alignment", 1), "odd.gguf");
  CHECK(f.alignment() == 64);
  const auto& odd = f.tensor("odd");
  CHECK_FALSE(odd.supported);
  CHECK(odd.type == 99);
  CHECK(odd.type_name == "unknown type 99");
  CHECK_THROWS_WITH(f.encoded("odd"), Catch::Contains("unknown type 99"));
  CHECK_THROWS_WITH(f.dense<float>("odd"), Catch::Contains("unknown type 99"));
  auto w = f.dense<float>("w");
  CHECK(w(3) == 3.0f);
  // A known type ct cannot view (q4_1) is listed with its size, and refused by name.
  const auto g = gguf::file::parse(two("q41", 3, "general.alignment", 1, 32), "q41.gguf");
  CHECK_FALSE(g.tensor("q41").supported);
  CHECK(g.tensor("q41").type_name == "q4_1");
  CHECK(g.tensor("q41").bytes == 20);
  CHECK_THROWS_AS(g.encoded("q41"), ct::gguf_error);
}
