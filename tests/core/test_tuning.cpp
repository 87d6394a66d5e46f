// tests/core/test_tuning.cpp — ct/core/machine.hpp and ct/core/tuning.hpp: the budgets follow
// the documented rules, CT_TUNING's syntax and its errors, scopes, and — the point of it all —
// tiny and huge caches give valid blockings whose results are correct and bitwise those of the
// machine's own tuning, under every executor.
#include <catch2/catch.hpp>

#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "ct/ct.hpp"
#include "matmul/helpers.hpp"
#include "support/executor_zoo.hpp"
#include "support/reference.hpp"

namespace {

constexpr std::size_t K = 1024, M = 1024 * 1024;

// Sizes far from any real machine's, both ways: blocks of a few k steps, and blocks larger
// than every operand.
ct::tuning tiny() { return ct::tuning::for_caches({1 * K, 4 * K, 16 * K, 64}); }
ct::tuning huge() { return ct::tuning::for_caches({1 * M, 64 * M, 1024 * M, 64}); }

}  // namespace

TEST_CASE("this_machine describes a CPU with caches", "[tuning]") {
  const ct::machine_description& m = ct::this_machine();
  CHECK(&m == &ct::this_machine());  // detected once
  CHECK(m.caches.l1d >= 4 * K);
  CHECK(m.caches.l2 >= m.caches.l1d);
  CHECK(m.caches.line >= 16);
  CHECK((m.caches_source == "sysfs" || m.caches_source == "cpuid" || m.caches_source == "assumed"));
  CHECK_FALSE(m.model_name.empty());
#if defined(__x86_64__)
  CHECK(m.family > 0);
#endif
  const std::string d = ct::describe(m);
  CHECK(d.find("L1d") != std::string::npos);
  CHECK(d.find(m.caches_source) != std::string::npos);
  // The vendor agrees with the kernel's reading of CPUID (Linux's vendor_id line).
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line, vendor_id;
  while (vendor_id.empty() && std::getline(cpuinfo, line))
    if (line.rfind("vendor_id", 0) == 0) vendor_id = line.substr(line.find(':') + 2);
  if (vendor_id == "GenuineIntel") CHECK(m.vendor == ct::cpu_vendor::intel);
  else if (vendor_id == "AuthenticAMD") CHECK(m.vendor == ct::cpu_vendor::amd);
  else CHECK(m.vendor == ct::cpu_vendor::unknown);
  CHECK(ct::process_tuning().vendor == m.vendor);
}

TEST_CASE("AMD's legacy cache-size leaves decode to bytes", "[tuning]") {
  // The registers an Oxide Zen 5 guest (family 26 model 2) returned, whose 0x8000001D was
  // empty: L1d 0x30 KiB with 64-byte lines, L2 0x400 KiB. (Its 0x80000006 EDX said 0x3F8 x
  // 512 KiB of L3, the package's; the decoder leaves the L3 unknown.)
  CHECK(ct::detail::caches_from_amd_size_leaves(0x300C0140u, 0x04006140u) == ct::cache_sizes{48 * K, 1 * M, 0, 64});
  // A Zen 3 core by the field layout: 32 KiB L1d 8-way, 512 KiB L2.
  CHECK(ct::detail::caches_from_amd_size_leaves(0x20080140u, 0x02006140u) == ct::cache_sizes{32 * K, 512 * K, 0, 64});
  // Leaves that say nothing give zero sizes (detection then falls back to the assumed ones).
  CHECK(ct::detail::caches_from_amd_size_leaves(0, 0) == ct::cache_sizes{0, 0, 0, 64});
  // An unknown L3 sizes the streaming threshold from the L2 (8 x L2).
  CHECK(ct::tuning::for_caches({48 * K, 1 * M, 0, 64}).stream_store_bytes == 8 * M);
}

TEST_CASE("tuning::for_caches follows the documented fractions", "[tuning]") {
  // Zen 3: 32 KiB L1d, 512 KiB L2, 32 MiB L3 — the sizes the constants were measured on.
  const ct::tuning t = ct::tuning::for_caches({32 * K, 512 * K, 32 * M, 64});
  CHECK(t.caches == ct::cache_sizes{32 * K, 512 * K, 32 * M, 64});
  CHECK(t.gemm_a_panel_bytes == 16 * K);
  CHECK(t.gemm_a_block_bytes == 128 * K);
  CHECK(t.gemm_b_block_bytes == 256 * K);
  CHECK(t.gemm_direct_b_bytes == 256 * K);
  CHECK(t.row_block_bytes == 256 * K);
  CHECK(t.gemv_prefetch_bytes == 320);  // L1d / 96 = 341, down to whole lines
  CHECK(t.weight_prefetch_bytes == 2 * K);
  CHECK(t.weight_burst_bytes == 8 * K);
  CHECK(t.stream_prefetch_bytes == 8 * K);
  CHECK(t.stream_ahead_bytes == 16 * K);
  CHECK(t.stream_store_bytes == 16 * M);
  CHECK(t.row_cache_bytes == 256 * K);
  // Zen 5's 48 KiB L1d and 1 MiB L2 scale them.
  const ct::tuning z5 = ct::tuning::for_caches({48 * K, 1 * M, 32 * M, 64});
  CHECK(z5.gemm_a_panel_bytes == 24 * K);
  CHECK(z5.gemm_a_block_bytes == 256 * K);
  CHECK(z5.gemm_b_block_bytes == 512 * K);
  CHECK(z5.weight_prefetch_bytes == 3 * K);
  CHECK(z5.weight_burst_bytes == 12 * K);
  CHECK(z5.gemv_prefetch_bytes == 512);
  CHECK(z5.stream_ahead_bytes == 24 * K);
  CHECK(ct::tuning::for_caches({48 * K + 100, 1 * M, 32 * M, 64}).stream_ahead_bytes == 24 * K);  // whole lines
  // The streamed reads' distance follows the vendor (an eighth of L1d on Intel cores); no
  // other budget does.
  const ct::tuning xeon = ct::tuning::for_caches({48 * K, 2 * M, 260 * M, 64}, ct::cpu_vendor::intel);
  ct::tuning same = ct::tuning::for_caches({48 * K, 2 * M, 260 * M, 64}, ct::cpu_vendor::amd);
  CHECK(xeon.vendor == ct::cpu_vendor::intel);
  CHECK(xeon.stream_ahead_bytes == 6 * K);
  CHECK(same.stream_ahead_bytes == 24 * K);
  CHECK(ct::tuning::for_caches({48 * K, 2 * M, 260 * M, 64}).stream_ahead_bytes == 24 * K);  // unknown vendor
  CHECK(ct::tuning::for_caches({32 * K, 2 * M, 260 * M, 64}, ct::cpu_vendor::intel).stream_ahead_bytes == 4 * K);
  CHECK(ct::tuning::for_caches({1000, 4 * K, 0, 64}, ct::cpu_vendor::intel).stream_ahead_bytes == 64);  // at least a line
  same.vendor = xeon.vendor;
  same.stream_ahead_bytes = xeon.stream_ahead_bytes;
  CHECK(same == xeon);
  // No L3: results streamed from 8 x L2. Unknown sizes: the assumed ones.
  CHECK(ct::tuning::for_caches({32 * K, 512 * K, 0, 64}).stream_store_bytes == 4 * M);
  // A large shared L3 (an Intel Xeon's 480 MiB): results stream from 32 x L2, not L3 / 2.
  CHECK(ct::tuning::for_caches({48 * K, 2 * M, 480 * M, 64}).stream_store_bytes == 64 * M);
  CHECK(ct::tuning::for_caches({32 * K, 1 * M, 32 * M, 64}).stream_store_bytes == 16 * M);  // Zen 4: L3 / 2
  CHECK(ct::tuning::for_caches({0, 0, 0, 0}) == ct::tuning::for_caches({32 * K, 512 * K, 0, 64}));
  // Every budget at least a line, however small the caches.
  const ct::tuning t1 = ct::tuning::for_caches({64, 64, 64, 64});
  for (std::size_t v : {t1.gemm_a_panel_bytes, t1.gemm_a_block_bytes, t1.gemm_b_block_bytes, t1.gemm_direct_b_bytes,
                        t1.row_block_bytes,
                        t1.gemv_prefetch_bytes, t1.weight_prefetch_bytes, t1.weight_burst_bytes, t1.stream_prefetch_bytes,
                        t1.stream_ahead_bytes, t1.stream_store_bytes, t1.row_cache_bytes})
    CHECK(v == 64);
}

TEST_CASE("parse_tuning: caches re-derive, budgets replace one value", "[tuning]") {
  const ct::tuning base = ct::tuning::for_caches({32 * K, 512 * K, 32 * M, 64});
  CHECK(ct::parse_tuning("", base) == base);
  const ct::tuning a = ct::parse_tuning("l1d=48K,gemm_a_block=300000", base);
  CHECK(a.caches.l1d == 48 * K);
  CHECK(a.gemm_a_panel_bytes == 24 * K);       // derived from the new L1d
  CHECK(a.gemm_a_block_bytes == 300000);      // then replaced
  CHECK(a.row_cache_bytes == base.row_cache_bytes);
  const ct::tuning b = ct::parse_tuning("l2=2M,l3=1g,weight_prefetch=4k,", base);  // units either case, a trailing comma
  CHECK(b.caches.l2 == 2 * M);
  CHECK(b.caches.l3 == 1024 * M);
  CHECK(b.gemm_a_block_bytes == 512 * K);
  CHECK(b.weight_prefetch_bytes == 4 * K);
  CHECK(ct::parse_tuning("stream_ahead=8K", base).stream_ahead_bytes == 8 * K);
  CHECK(ct::parse_tuning("weight_burst=2k", base).weight_burst_bytes == 2 * K);
  // New cache sizes re-derive for the base's vendor.
  const ct::tuning intel = ct::tuning::for_caches({48 * K, 2 * M, 260 * M, 64}, ct::cpu_vendor::intel);
  const ct::tuning smaller = ct::parse_tuning("l1d=32K", intel);
  CHECK(smaller.vendor == ct::cpu_vendor::intel);
  CHECK(smaller.stream_ahead_bytes == 4 * K);
  CHECK(smaller == ct::tuning::for_caches({32 * K, 2 * M, 260 * M, 64}, ct::cpu_vendor::intel));
  // Order does not matter: the caches first, then the budgets.
  CHECK(ct::parse_tuning("gemv_prefetch=512,l1d=64K", base) == ct::parse_tuning("l1d=64K,gemv_prefetch=512", base));
}

TEST_CASE("parse_tuning refuses what it cannot read, naming the entry", "[tuning][errors]") {
  const ct::tuning base = ct::tuning::for_caches({32 * K, 512 * K, 32 * M, 64});
  const std::pair<const char*, const char*> bad[] = {
      {"l1=32K", "unknown name 'l1'"},       {"l1d", "no '='"},
      {"l1d=", "no size"},                   {"l1d=0", "size 0"},
      {"l1d=32X", "unknown unit 'X'"},       {"l1d=32KB", "trailing characters"},
      {"l1d=-1", "not a number"},            {"l2=2000G", "larger than 1 TiB"},
      {"l1d=32K,,l2=1M", "empty entry"},     {"row_cache=99999999999999999999", "larger than 1 TiB"},
  };
  for (const auto& [spec, why] : bad) {
    INFO(spec);
    try {
      (void)ct::parse_tuning(spec, base);
      FAIL("accepted");
    } catch (const ct::tuning_error& e) {
      const std::string msg = e.what();
      CHECK(msg.find(why) != std::string::npos);
      CHECK(msg.find(spec) != std::string::npos);
    }
  }
}

TEST_CASE("tuning_scope binds a tuning for this thread only, nested scopes unwind", "[tuning]") {
  const ct::tuning& process = ct::process_tuning();
  CHECK(&ct::current_tuning() == &process);
  CHECK(ct::current_settings().tuning == nullptr);
  {
    ct::tuning_scope outer(tiny());
    CHECK(ct::current_tuning() == tiny());
    CHECK(ct::current_settings().tuning == &ct::current_tuning());
    {
      ct::tuning_scope inner(huge());
      CHECK(ct::current_tuning() == huge());
      ct::backend_scope b(ct::backend::scalar);  // other settings keep the binding
      CHECK(ct::current_tuning() == huge());
      bool other_thread_sees_process = false;
      std::thread([&] { other_thread_sees_process = &ct::current_tuning() == &process; }).join();
      CHECK(other_thread_sees_process);
    }
    CHECK(ct::current_tuning() == tiny());
  }
  CHECK(&ct::current_tuning() == &process);
}

TEST_CASE("gemm_blocking_for keeps the blocks within their budgets", "[tuning][matmul]") {
  for (const ct::tuning& t : {tiny(), huge(), ct::process_tuning(), ct::tuning::for_caches({32 * K, 512 * K, 32 * M, 64})}) {
    for (bool f64 : {false, true}) {
      INFO(ct::describe(t) << (f64 ? " f64" : " f32"));
      const std::size_t size = f64 ? 8 : 4;
      const ct::gemm_blocking g = ct::gemm_blocking_for(t, f64);
      REQUIRE(g.mr > 0);
      REQUIRE(g.nr > 0);
      CHECK(g.kc >= 1);
      CHECK(g.mc % g.mr == 0);
      CHECK(g.nc % g.nr == 0);
      // KC: whole k chunks (128), at most one whose A micro-panel fits and at most the depth
      // moving the fewest bytes, sqrt(2 * A block / size), or one chunk; the largest MC in
      // whole micro-panels whose A block fits, or one micro-panel; the largest NC in whole
      // panels whose block of B fits, or one panel.
      CHECK(g.kc % 128 == 0);
      const std::size_t panel_depth = t.gemm_a_panel_bytes / (g.mr * size);
      std::size_t traffic_depth = 1;
      while ((traffic_depth + 1) * (traffic_depth + 1) * size <= 2 * t.gemm_a_block_bytes) ++traffic_depth;
      CHECK(g.kc == std::max<std::size_t>(1, std::min(panel_depth, traffic_depth) / 128) * 128);
      if (g.mc > g.mr) CHECK(g.mc * g.kc * size <= t.gemm_a_block_bytes);
      CHECK((g.mc + g.mr) * g.kc * size > t.gemm_a_block_bytes);
      if (g.nc > g.nr) CHECK(g.nc * g.kc * size <= t.gemm_b_block_bytes);
      CHECK((g.nc + g.nr) * g.kc * size > t.gemm_b_block_bytes);
    }
  }
  // 32 KiB L1d, 512 KiB L2: float KC 256 whatever the target (sqrt(2 * 128 KiB / 4) = 256;
  // AVX-512's 12-row A micro-panel is then 12 KiB of L1, AVX2's 6 rows 6 KiB), MC 128 rows,
  // NC 256 columns; double KC 128 (sqrt(2 * 128 KiB / 8) = 181).
  const ct::tuning zen3 = ct::tuning::for_caches({32 * K, 512 * K, 32 * M, 64});
  const ct::gemm_blocking z3 = ct::gemm_blocking_for(zen3);
  CHECK(z3.kc == 256);
  CHECK(z3.mc == 128 / z3.mr * z3.mr);
  CHECK(z3.nc == 256);
  CHECK(ct::gemm_blocking_for(zen3, true).kc == 128);
}

TEMPLATE_TEST_CASE("tiny and huge caches: products correct, and bitwise the machine's under every executor",
                   "[tuning][matmul][scheduling]", float, double) {
  using T = TestType;
  ct_test::executor_zoo zoo;
  for (const auto& pr : mm_test::products<T>()) {
    for (const ct::settings& s : mm_test::all_settings) {
      ct::settings_scope bind(s);
      const ct::tensor<T> expected = pr.run();  // the process's tuning, no executor
      const mm_test::reference ref = mm_test::naive_matmul(pr.a, pr.b);
      for (const ct::tuning& t : {tiny(), huge()}) {
        ct::tuning_scope tuned(t);
        INFO(pr.name << " " << mm_test::describe(s) << " " << ct::describe(t));
        const ct::tensor<T> got = pr.run();
        CHECK(mm_test::count_bad(got, ref) == 0);
        CHECK(mm_test::same_bits(got, expected));
        for (auto& [name, exec] : zoo.all()) {
          INFO(name);
          ct::executor_scope e(exec);
          CHECK(mm_test::same_bits(pr.run(), expected));
        }
      }
    }
  }
}

TEST_CASE("a large product under a tiny tuning: many k and row blocks, bitwise the machine's", "[tuning][matmul]") {
  // 300 x 700 x 260: KC 128 (tiny: one k chunk) gives 6 k blocks, MC one micro-panel, NC one
  // panel; B is packed (not direct).
  const auto a = ct::random_uniform<float>({300, 700}, 5, -1.0f, 1.0f);
  const auto b = ct::random_uniform<float>({700, 260}, 6, -1.0f, 1.0f);
  const auto expected = ct::matmul(a, b);
  ct::tuning_scope tuned(tiny());
  const ct::gemm_blocking g = ct::gemm_blocking_for(tiny());
  CHECK(g.kc == 128);
  // Under an executor B (728 KB, past the tiny 4 KiB L2) is packed with streaming stores, 300
  // rows being more than two row blocks (run.cpp, pack_b_batches): the same panels, so the
  // same bits.
  CHECK(300 >= 2 * g.mc);
  ct_test::executor_zoo zoo;
  for (auto& [name, exec] : zoo.all()) {
    INFO(name);
    ct::executor_scope e(exec);
    CHECK(mm_test::same_bits(ct::matmul(a, b), expected));
  }
}

TEMPLATE_TEST_CASE("every level of the blocking split with a partial last part: correct, and bitwise the machine's",
                   "[tuning][matmul]", float, double) {
  // Budgets chosen from this target's register tile so that KC is two k chunks (the A block
  // then needs 128 rows: sqrt(2 * 128 * 256) = 256), MC the micro-panels within 128 rows and
  // NC two panels: 155 x 600 x 300 then has k blocks of 256, 256 and 88, a second row block
  // ending in a partial micro-panel, and column blocks ending in a partial panel.
  using T = TestType;
  const std::size_t size = sizeof(T);
  const ct::tuning base = ct::process_tuning();
  const ct::gemm_blocking tile = ct::gemm_blocking_for(base, size == 8);
  ct::tuning t = base;
  t.gemm_a_panel_bytes = tile.mr * 256 * size;
  t.gemm_a_block_bytes = 128 * 256 * size;
  t.gemm_b_block_bytes = 2 * tile.nr * 256 * size;
  t.gemm_direct_b_bytes = 64;  // B packed, as in a large product
  const ct::gemm_blocking g = ct::gemm_blocking_for(t, size == 8);
  CHECK(g.kc == 256);
  CHECK(g.mc == 128 / tile.mr * tile.mr);
  CHECK((155 - g.mc) % tile.mr != 0);
  CHECK(g.nc == 2 * tile.nr);
  const auto a = ct::random_uniform<T>({155, 600}, 11, T(-1), T(1));
  const auto b = ct::random_uniform<T>({600, 300}, 12, T(-1), T(1));
  const ct::tensor<T> expected = ct::matmul(a, b);  // the process's blocking
  const mm_test::reference ref = mm_test::naive_matmul(a, b);
  ct::tuning_scope tuned(t);
  const ct::tensor<T> got = ct::matmul(a, b);
  CHECK(mm_test::count_bad(got, ref) == 0);
  CHECK(mm_test::same_bits(got, expected));
  ct_test::executor_zoo zoo;
  for (auto& [name, exec] : zoo.all()) {
    INFO(name);
    ct::executor_scope e(exec);
    CHECK(mm_test::same_bits(ct::matmul(a, b), expected));
  }
}

TEMPLATE_TEST_CASE("packing B a block of rows at a time: partial row blocks and a partial last panel", "[tuning][matmul]",
                   float, double) {
  // The packing cuts B's rows in blocks of as many rows as the B-block budget holds (at most
  // 8): a budget of three 70-value rows gives blocks of 3 over k = 100 (the last one row), and
  // 70 columns end in a partial panel; a budget below one row gives blocks of one row. Every
  // value must land where the micro-kernel reads it (a misplaced row or column changes results;
  // the padding past n is never stored to C, so no result can show it).
  using T = TestType;
  const auto a = ct::random_uniform<T>({29, 100}, 21, T(-1), T(1));
  const auto b = ct::random_uniform<T>({100, 70}, 22, T(-1), T(1));
  const ct::tensor<T> expected = ct::matmul(a, b);
  const mm_test::reference ref = mm_test::naive_matmul(a, b);
  for (std::size_t budget : {3 * 70 * sizeof(T), std::size_t{64}}) {
    ct::tuning t = ct::process_tuning();
    t.gemm_b_block_bytes = budget;
    t.gemm_direct_b_bytes = 64;  // B packed
    ct::tuning_scope tuned(t);
    INFO("rows budget " << budget);
    const ct::tensor<T> got = ct::matmul(a, b);
    CHECK(mm_test::count_bad(got, ref) == 0);
    CHECK(mm_test::same_bits(got, expected));
  }
}

TEST_CASE("encoded products and fused evaluation under tiny and huge tunings: bitwise the machine's",
          "[tuning][encoded][scheduling]") {
  const auto wf = ct::random_uniform<float>({70, 512}, 11, -1.0f, 1.0f);
  const auto x = ct::random_uniform<float>({5, 512}, 12, -2.0f, 2.0f);
  // 256 x 300 floats: with the tiny tuning the result (300 KiB) streams (stream_store 8 KiB)
  // and softmax's cached row does not fit (row_cache 2 KiB): recomputed instead.
  const auto r = ct::random_uniform<float>({256, 300}, 13, -4.0f, 4.0f);
  const auto softmax = [&] { return ct::eval(ct::softmax(r, -1)); };
  const auto norm = [&] { return ct::eval(ct::layer_norm(r, -1, 1e-5f)); };
  const auto expected_softmax = softmax(), expected_norm = norm();
  for (const char* name : {"q8_0", "q4_0", "q4_K", "q6_K", "bf16"}) {
    const auto w = ct::encode(wf, ct::find_format(name));
    const auto expected_q = ct::matmul(x, w.transpose());
    const auto expected_e = ct::matmul(x, w.transpose(), ct::encoded_mode::exact);
    const auto expected_v = ct::matmul(w, x.slice(0, 0, 1).reshape({512}));
    for (const ct::tuning& t : {tiny(), huge()}) {
      ct::tuning_scope tuned(t);
      ct_test::executor_zoo zoo;
      for (auto& [ename, exec] : zoo.all()) {
        INFO(name << " " << ct::describe(t) << " " << ename);
        ct::executor_scope e(exec);
        CHECK(ct_test::bitwise_equal(ct::matmul(x, w.transpose()), expected_q));
        CHECK(ct_test::bitwise_equal(ct::matmul(x, w.transpose(), ct::encoded_mode::exact), expected_e));
        CHECK(ct_test::bitwise_equal(ct::matmul(w, x.slice(0, 0, 1).reshape({512})), expected_v));
      }
    }
  }
  for (const ct::tuning& t : {tiny(), huge()}) {
    ct::tuning_scope tuned(t);
    INFO(ct::describe(t));
    CHECK(ct_test::bitwise_equal(softmax(), expected_softmax));
    CHECK(ct_test::bitwise_equal(norm(), expected_norm));
  }
}

TEST_CASE("stream_ahead: reductions and norm rows read from memory give the same bits at any distance",
          "[tuning][scheduling]") {
  // Rows of 4096 floats, 8 MiB in all: read once, straight into the reducers (the kernels'
  // streamed reads), whose prefetch distance is the tuning's stream_ahead.
  const auto x = ct::random_uniform<float>({512, 4096}, 21, -5.0f, 5.0f);
  const auto xd = ct::random_uniform<double>({256, 4096}, 22, -5.0, 5.0);
  const auto run = [&] {
    return std::vector<ct::tensor<float>>{ct::eval(ct::sum(x, -1)),       ct::eval(ct::max(x, -1)),
                                          ct::eval(ct::min(x, -1)),       ct::eval(ct::logsumexp(x, -1)),
                                          ct::eval(ct::layer_norm(x, -1, 1e-5f)), ct::eval(ct::softmax(x, -1))};
  };
  const auto run_d = [&] { return std::vector<ct::tensor<double>>{ct::eval(ct::sum(xd, -1)), ct::eval(ct::logsumexp(xd, -1))}; };
  const auto argmax = [&] { return ct::eval(ct::argmax(x, -1)); };
  const auto expected = run();
  const auto expected_d = run_d();
  const auto expected_arg = argmax();
  for (const char* spec : {"stream_ahead=64", "stream_ahead=3K", "stream_ahead=1M"}) {
    const ct::tuning t = ct::parse_tuning(spec, ct::current_tuning());
    ct::tuning_scope tuned(t);
    REQUIRE(ct::current_tuning().stream_ahead_bytes == t.stream_ahead_bytes);
    INFO(spec);
    const auto got = run();
    for (std::size_t i = 0; i < got.size(); ++i) CHECK(ct_test::bitwise_equal(got[i], expected[i]));
    const auto got_d = run_d();
    for (std::size_t i = 0; i < got_d.size(); ++i) CHECK(ct_test::bitwise_equal(got_d[i], expected_d[i]));
    CHECK(ct::equal(argmax(), expected_arg));
  }
}
