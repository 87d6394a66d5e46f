// The type rules that are compile errors (docs/expressions.md, Types): each snippet is compiled
// with the project's compiler, which must refuse it with the library's message. A snippet that
// follows the rules must compile, so the harness itself is checked too.
#include <catch2/catch.hpp>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>

#ifndef CT_TEST_CXX
#error "tests/meson.build passes the compiler (CT_TEST_CXX) and the include directory (CT_TEST_INCLUDE)"
#endif

namespace {

struct compile_result {
  bool ok;
  std::string diagnostics;
};

// Compiles a main() whose body is `body` against ct.hpp (syntax and templates only).
compile_result compile(const std::string& body, const std::string& name) {
  const auto path = std::filesystem::temp_directory_path() / ("ct_type_rule_" + name + ".cpp");
  {
    std::ofstream out(path);
    out << "#include \"ct/ct.hpp\"\nint main() {\n  ct::tensor<float> f({2});\n  ct::tensor<double> d({2});\n"
           "  ct::tensor<int> i({2});\n  ct::tensor<bool> b({2});\n"
        << body << "\n}\n";
  }
  const std::string command = std::string(CT_TEST_CXX) + " -std=c++20 -fsyntax-only -I \"" + CT_TEST_INCLUDE + "\" \"" +
                              path.string() + "\" 2>&1";
  compile_result r{false, {}};
  FILE* p = popen(command.c_str(), "r");
  REQUIRE(p != nullptr);
  std::array<char, 4096> buf{};
  while (std::fgets(buf.data(), static_cast<int>(buf.size()), p) != nullptr) r.diagnostics += buf.data();
  r.ok = pclose(p) == 0;
  std::filesystem::remove(path);
  return r;
}

void expect_refused(const std::string& body, const std::string& name, const std::string& message) {
  const compile_result r = compile(body, name);
  INFO(body << "\n--- compiler output ---\n" << r.diagnostics.substr(0, 3000));
  CHECK_FALSE(r.ok);
  CHECK(r.diagnostics.find(message) != std::string::npos);
}

}  // namespace

TEST_CASE("types: code that follows the rules compiles", "[expr][types]") {
  const compile_result r = compile(
      "  auto a = ct::eval(f * 2 + f * 0.5);\n"                    // numbers adopt float
      "  auto c = ct::eval(ct::cast<float>(d) + f);\n"              // explicit cast
      "  auto k = ct::eval(i * 3 - ct::cast<int>(f));\n"
      "  auto s = ct::eval(ct::sum(b)); auto m = ct::eval(ct::mean(d) + ct::exp(d));\n"
      "  (void)a; (void)c; (void)k; (void)s; (void)m;",
      "ok");
  INFO(r.diagnostics.substr(0, 3000));
  CHECK(r.ok);
}

TEST_CASE("types: mixing element types, or floating point with integers, is a compile error", "[expr][types]") {
  expect_refused("  auto e = f + d; (void)e;", "mixed", "mixed element types need an explicit ct::cast");
  expect_refused("  auto e = ct::maximum(i, ct::cast<std::int64_t>(i)); (void)e;", "mixed_int", "mixed element types");
  expect_refused("  auto e = i * 0.5; (void)e;", "float_number", "a floating-point number next to an integer");
  expect_refused("  auto e = ct::exp(i); (void)e;", "exp_int", "ct::exp needs floating-point operands");
  expect_refused("  auto e = ct::mean(i, 0); (void)e;", "mean_int", "ct::mean needs floating-point operands");
  expect_refused("  auto e = ct::any(f, 0); (void)e;", "any_float", "ct::all/ct::any need a bool operand");
  expect_refused("  auto e = -b; (void)e;", "neg_bool", "unary minus is not defined for bool");
  expect_refused("  auto e = ct::where(f, f, f); (void)e;", "where_float", "ct::where needs a bool condition");
}
