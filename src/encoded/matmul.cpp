// Products with encoded weights (ct/encoded/matmul.hpp): both operand orders reduce to one
// description — out(b, n, m) = sum over k of W_b[n, k] * a_bm[k] with strided activation
// vectors a_bm and a strided destination — which is validated, then scheduled in the contract's
// groups. Every output element is one function of (weight row, activation vector) in a fixed
// order, whichever group or callback computes it.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "ct/core/tuning.hpp"
#include "ct/encoded/matmul.hpp"
#include "ct/exec/parallel_for.hpp"
#include "src/core/aligned_vector.hpp"
#include "src/encoded/builtin.hpp"
#include "src/encoded/half_dot.hpp"
#include "src/encoded/qdot.hpp"
#include "src/matmul/byte_span.hpp"
#include "src/matmul/kernels.hpp"
#include "src/select/select.hpp"

namespace ct {

namespace {

struct product {
  index_t batches = 1, n = 0, m = 1, k = 0;
  bool vector = false;     // one group per output element (n); else one per output row
  bool groups_over_n = true;  // matrix groups: rows of n (w·x) or of m (x·wᵀ)
  bool w_batched = false;  // w has its own batch axis (else the same w for every batch)
  index_t xb = 0, xm = 0, xk = 0;  // activation strides: batch, vector index, k
  index_t yb = 0, yn = 0, ym = 0;  // destination strides
  dims result;
};

std::string shapes(const dims& w, const dims& x, bool w_first) {
  return w_first ? "encoded " + w.str() + " and " + x.str() : x.str() + " and encoded " + w.str() + " transposed";
}

// Shapes -> product (without destination strides). w_first: ct::matmul(w, x); else (x, wᵀ).
product plan(const char* op, const encoded_tensor& w, const tensor<float>& x, bool w_first) {
  const dims& ws = w.shape();
  const dims& xs = x.shape();
  const bool w3 = ws.size() == 3;
  const index_t wb = w3 ? ws[0] : 1, n = ws[ws.size() - 2], k = ws[ws.size() - 1];
  const int xr = x.rank();
  const auto fail = [&](const std::string& why) {
    throw shape_error(std::string(op) + ": " + why + " for shapes " + shapes(ws, xs, w_first));
  };
  if (xr < 1 || xr > 3) fail("the activation needs rank 1, 2 or 3");
  product p;
  p.n = n;
  p.k = k;
  p.w_batched = w3;
  const index_t xk_extent = w_first ? (xr == 1 ? xs[0] : xs[xr - 2]) : xs[xr - 1];
  if (xk_extent != k) fail("inner dimensions differ (" + std::to_string(k) + " != " + std::to_string(xk_extent) + ")");
  const index_t xbatch = xr == 3 ? xs[0] : 1;
  if (xr == 3 && w3 && xbatch != wb) fail("batch dimensions differ");
  p.batches = xr == 3 ? xbatch : wb;
  p.vector = xr == 1;
  p.groups_over_n = w_first;
  p.xb = xr == 3 ? x.strides()[0] : 0;
  if (xr == 1) {
    p.xk = x.strides()[0];
  } else if (w_first) {  // x [.., K, M]
    p.m = xs[xr - 1];
    p.xk = x.strides()[xr - 2];
    p.xm = x.strides()[xr - 1];
  } else {  // x [.., M, K]
    p.m = xs[xr - 2];
    p.xm = x.strides()[xr - 2];
    p.xk = x.strides()[xr - 1];
  }
  if (w3 || xr == 3) p.result.push_back(p.batches);
  if (p.vector) {
    p.result.push_back(n);
  } else if (w_first) {
    p.result.push_back(n);
    p.result.push_back(p.m);
  } else {
    p.result.push_back(p.m);
    p.result.push_back(n);
  }
  element_count(p.result);  // throws on overflow
  return p;
}

// The encoded weight as an operation selector sees it.
operand_view weight_view(const encoded_tensor& w) {
  operand_view v;
  v.type = dtype::f32;
  v.encoding = w.fmt();
  v.shape = w.shape();
  v.data = w.data();
  return v;
}

// Asks the encoded_matmul selectors for a validated product; true when one did it.
bool selected(const encoded_tensor& w, const tensor<float>& x, const tensor<float>& out, encoded_mode mode, bool w_first) {
  call_info call;
  call.op = operation::encoded_matmul;
  call.name = w_first ? "w·x" : "x·wᵀ";
  call.settings = current_settings();
  call.quantized = mode == encoded_mode::quantized;
  if (w_first) call.operands = {weight_view(w), detail::view_of(x)};
  else call.operands = {detail::view_of(x), weight_view(w)};
  call.destination = detail::view_of(out);
  call.destination.data = nullptr;
  const kernel k = detail::select(call);
  if (!k) return false;
  detail::run_selected(k, call, out.data());
  return true;
}

void run(const char* op, const product& p, const encoded_tensor& w, tensor<float> x, const tensor<float>& out,
         encoded_mode mode, bool w_first) {
  if (out.shape() != p.result)
    throw shape_error(std::string(op) + ": destination of shape " + out.shape().str() + " does not match the result shape " +
                      p.result.str());
  if (!elements_distinct(out.shape(), out.strides()))
    throw shape_error(std::string(op) + ": destination of shape " + out.shape().str() + " and strides " + out.strides().str() +
                      " repeats elements (a broadcast or overlapping view)");
  std::uintptr_t ol, oh, xl, xh;
  detail::mm::byte_span(out, ol, oh);
  const auto wl = reinterpret_cast<std::uintptr_t>(w.data());
  if (detail::mm::ranges_meet(ol, oh, wl, wl + w.size_bytes()))
    throw shape_error(std::string(op) + ": the destination overlaps the encoded weights' bytes");
  if (detail::selectors_possible() && selected(w, x, out, mode, w_first)) return;
  const detail::selection_off own;  // ct calls made below are not routed to selectors
  if (out.size() == 0) return;
  detail::mm::byte_span(x, xl, xh);
  if (detail::mm::ranges_meet(ol, oh, xl, xh)) x = x.clone();  // groups write out while others read x

  // Destination strides of (batch, n, m).
  product q = p;
  const int rr = out.rank();
  const bool has_batch = static_cast<int>(p.result.size()) == (p.vector ? 2 : 3);
  q.yb = has_batch ? out.strides()[0] : 0;
  if (p.vector) {
    q.yn = out.strides()[rr - 1];
  } else if (p.groups_over_n) {
    q.yn = out.strides()[rr - 2];
    q.ym = out.strides()[rr - 1];
  } else {
    q.ym = out.strides()[rr - 2];
    q.yn = out.strides()[rr - 1];
  }
  const index_t k = q.k;
  const std::string& fname = w.fmt().name();
  const detail::encoded::qdot_kernel qdot =
      mode == encoded_mode::quantized && k > 0 ? detail::encoded::resolve_qdot(fname, current_settings()) : detail::encoded::qdot_kernel{};
  const bool quantized = static_cast<bool>(qdot);
  const float* const xd = x.data();
  float* const yd = out.data();
  const index_t x_batches = x.rank() == 3 ? q.batches : 1;  // activation vectors per m
  // The caller's tuning (ct/core/tuning.hpp), read here on its thread: speed only.
  const tuning& tuned = current_tuning();
  const auto weight_prefetch = static_cast<index_t>(tuned.weight_prefetch_bytes);
  const auto weight_burst = qdot.burst ? static_cast<index_t>(tuned.weight_burst_bytes) : index_t{0};

  // Quantized mode: every activation vector quantized once, before any group runs, in the
  // kernel's activation blocks (qdot.hpp): K int8 quants, a scale per block, sums of 16.
  const index_t ablock = quantized ? qdot.activation_block : 1;
  const index_t wblocks = k / w.fmt().block_elements();
  // Per activation vector; divided once here, not per output element (a 64-bit division per
  // element measured a tenth of a short row's dot product).
  // Each vector's quants, scales and sums start on a cache line (the kernels' full-width loads
  // would otherwise straddle two: detail::aligned_vector).
  const index_t quants_per_vector = detail::whole_lines<std::int8_t>(k);
  const index_t scales_per_vector = detail::whole_lines<float>(k / ablock);
  const index_t sums_per_vector = detail::whole_lines<std::int16_t>(k / 16);
  detail::aligned_vector<std::int8_t> aq;
  detail::aligned_vector<float> ad;
  detail::aligned_vector<std::int16_t> as;
  if (quantized) {
    const index_t vectors = x_batches * q.m;
    aq.resize(static_cast<std::size_t>(vectors * quants_per_vector));
    ad.resize(static_cast<std::size_t>(vectors * scales_per_vector));
    as.resize(static_cast<std::size_t>(vectors * sums_per_vector));
    // A strided activation vector is gathered into v first; a contiguous one is read in place
    // (for a short product the copy and its buffer's zero fill were a tenth of the call).
    detail::aligned_vector<float> v(q.xk == 1 ? 0 : static_cast<std::size_t>(k));
    const bool simd_quantizer = current_settings().backend == backend::simd;
    for (index_t b = 0; b < x_batches; ++b)
      for (index_t mi = 0; mi < q.m; ++mi) {
        const float* src = xd + b * q.xb + mi * q.xm;
        if (q.xk != 1)
          for (index_t j = 0; j < k; ++j) v[static_cast<std::size_t>(j)] = src[j * q.xk];
        const index_t at = b * q.m + mi;
        try {
          detail::encoded::quantize_activation(q.xk == 1 ? src : v.data(), k, ablock, aq.data() + at * quants_per_vector,
                                               ad.data() + at * scales_per_vector, as.data() + at * sums_per_vector,
                                               simd_quantizer);
        } catch (const format_error& e) {
          throw format_error(std::string(op) + ": quantized mode: activation vector " + std::to_string(at) + ": " + e.what());
        }
      }
  }
  // For activation blocks of 256: the sums of 32 (q4_K's mins; qactivation::pair_sums) and -16
  // times the sums of 16 (q6_K's offsets; qactivation::minus16_sums).
  const index_t pair_sums_per_vector = detail::whole_lines<std::int16_t>(k / 32);
  detail::aligned_vector<std::int16_t> aps, ams;
  if (quantized && ablock == 256) {
    aps.resize(static_cast<std::size_t>(x_batches * q.m * pair_sums_per_vector));
    ams.resize(as.size());
    for (index_t at = 0; at < x_batches * q.m; ++at) {
      detail::encoded::pair_sums(as.data() + at * sums_per_vector, k, aps.data() + at * pair_sums_per_vector);
      detail::encoded::minus16_sums(as.data() + at * sums_per_vector, k, ams.data() + at * sums_per_vector);
    }
  }
  // The split layout of the quants, for the kernel that reads it (qdot.hpp).
  detail::aligned_vector<std::int8_t> aqs;
  if (quantized && qdot.split) {
    aqs.resize(aq.size());
    for (index_t at = 0; at < x_batches * q.m; ++at)
      detail::encoded::split_quants(aq.data() + at * quants_per_vector, k, aqs.data() + at * quants_per_vector);
  }
  const auto split_at = [&](index_t at) { return aqs.empty() ? nullptr : aqs.data() + at * quants_per_vector; };
  const auto wrow = [&](index_t b, index_t ni) { return w.row((q.w_batched ? b : 0) * q.n + ni); };
  // Prompt-sized x·wᵀ with a tile kernel (q8_0 / q4_0 on AVX-512 VNNI), the same bits as the
  // rows form, so the choice depends on nothing but speed. The activations are laid out for it
  // once here. The weight rows too when an executor is bound (shared read-only by every
  // callback, however small: a work-sharing executor hands out a few vectors at a time, and
  // laying out the rows per callback then cost more than the kernel saved); run serially, the
  // one callback lays out each row block as it comes (measured faster: the block is still in
  // L2 when the kernel reads it). With fewer vectors the layout costs more than it saves:
  // measured with the Llama example's 15M model (K = 288 and 768) on a Zen 5 guest, prompts of
  // 8 / 16 / 32 / 64 tokens against the rows form — serially the tiles won from 16, under a
  // two-worker executor (one serial pass over all the rows first) from about 48.
  //
  // Weights too large to stay in L2 (weights_stream) are laid out per callback even under an
  // executor: their products ask the executor for ranges of at least 32 vectors (the grain
  // below), which amortise the layout, and a shared layout would be one serial pass over all
  // of them before any callback starts (q8_0 128 x 4096 x 4096, two workers: 18.5-21.6 ms
  // shared, against 12.4 ms for one worker).
  constexpr index_t tile_min_serial = 16, tile_min_shared = 48;
  const bool bound = static_cast<bool>(current_executor());
  const bool weights_stream = static_cast<index_t>(w.row_bytes()) * q.n > static_cast<index_t>(tuned.row_block_bytes);
  const bool share_layout = bound && !weights_stream;
  const bool tiles = quantized && qdot.tile != nullptr && qdot.tile_pack != nullptr && !p.vector && !q.groups_over_n &&
                     !q.w_batched && q.m >= (share_layout ? tile_min_shared : tile_min_serial);
  const bool shared_tiles = tiles && share_layout;
  detail::encoded::qtile_activations tiled;
  detail::encoded::qtile_weights tiled_w;
  if (tiles) {
    detail::encoded::reserve_tile_activations(x_batches * q.m, k / 32, tiled);
    tiled.chunk_bytes = static_cast<index_t>(tuned.gemm_a_block_bytes);
    for (index_t at = 0; at < x_batches * q.m; ++at)
      detail::encoded::pack_tile_activations(aq.data() + at * quants_per_vector, ad.data() + at * scales_per_vector,
                                             as.data() + at * sums_per_vector, qdot.tile_offset, at, tiled);
    if (shared_tiles) qdot.tile_pack(w.row(0), w.row_bytes(), q.n, k / 32, tiled_w);
  }
  // Quantized: activation vector m of batch b, as the kernels take it (burst: qactivation's).
  const auto activation = [&](index_t b, index_t mi, index_t burst) {
    const index_t at = (x_batches == 1 ? 0 : b) * q.m + mi;
    return detail::encoded::qactivation{aq.data() + at * quants_per_vector,
                                        ad.data() + at * scales_per_vector,
                                        as.data() + at * sums_per_vector,
                                        weight_prefetch,
                                        split_at(at),
                                        burst,
                                        aps.empty() ? nullptr : aps.data() + at * pair_sums_per_vector,
                                        ams.empty() ? nullptr : ams.data() + at * sums_per_vector};
  };
  // out(b, n, m) from a decoded weight row (exact) or the row's blocks (quantized).
  const auto element = [&](index_t b, index_t ni, index_t mi, const float* decoded, const settings& s) {
    const index_t xbatch = x_batches == 1 ? 0 : b;
    float r;
    if (quantized) {
      r = qdot.fn(wrow(b, ni), activation(b, mi, 0), wblocks);
    } else {
      r = detail::mm::dot<float>(k, decoded, 1, xd + xbatch * q.xb + mi * q.xm, q.xk, s);
    }
    yd[b * q.yb + ni * q.yn + mi * q.ym] = r;
  };
  // Quantized: out(b, n0..n1, m) in one call of the kernel's several-rows form (the same value
  // for each element as `element`).
  const auto rows_of = [&](index_t b, index_t n0, index_t n1, index_t mi) {
    qdot.run_rows(wrow(b, n0), w.row_bytes(), n1 - n0, activation(b, mi, weight_burst), wblocks,
                  yd + b * q.yb + n0 * q.yn + mi * q.ym, q.yn);
  };
  // Quantized with a multi-vector kernel: out(b, n0..n1, m) for m from m0 in whole calls of
  // qdot_multi_vectors vectors (each row's blocks unpacked once per call; the same values as
  // `element`). Returns the first m not done.
  const auto multi_of = [&](index_t b, index_t n0, index_t n1, index_t m0, index_t m1) {
    constexpr index_t nv = detail::encoded::qdot_multi_vectors;
    index_t mi = m0;
    for (; mi + nv <= m1; mi += nv) {
      detail::encoded::qactivation acts[nv];
      for (index_t v = 0; v < nv; ++v) acts[v] = activation(b, mi + v, 0);
      qdot.multi(wrow(b, n0), w.row_bytes(), n1 - n0, acts, wblocks, yd + b * q.yb + n0 * q.yn + mi * q.ym, q.yn, q.ym);
    }
    return mi;
  };
  // Exact mode with bf16 / f16 weights and a contiguous activation vector: the rows are
  // widened inside the dot product (half_dot.hpp), not decoded into scratch first; same bits.
  const settings caller = current_settings();
  const detail::encoded::half_dot_fn half_dot =
      !quantized && k > 0 && q.xk == 1 && caller.backend == backend::simd && (fname == "bf16" || fname == "f16")
          ? detail::encoded::simd_half_dot(fname == "bf16", caller.fma == fma_policy::fused)
          : nullptr;
  const auto gemv_prefetch = static_cast<index_t>(tuned.gemv_prefetch_bytes);
  const auto half_rows = [&](index_t b, index_t n0, index_t n1, index_t mi) {
    const float* xv = xd + (x_batches == 1 ? 0 : b) * q.xb + mi * q.xm;
    half_dot(wrow(b, n0), w.row_bytes(), n1 - n0, k, xv, yd + b * q.yb + n0 * q.yn + mi * q.ym, q.yn, gemv_prefetch);
  };
  const auto decode_into = [&](index_t b, index_t ni, float* row) {
    w.fmt().traits().decode_row(wrow(b, ni), row, k);
  };

  if (p.vector || q.groups_over_n) {
    // Groups (b, n): the weight row decoded once (exact mode), then every m.
    detail::schedule(op, q.batches * q.n, [&](index_t start, index_t end) {
      const settings s = current_settings();
      detail::aligned_vector<float> row(quantized || half_dot != nullptr ? 0 : static_cast<std::size_t>(k));
      // (b, ni) stepped, not divided out of g for every group (as above).
      index_t b = start / q.n, ni = start % q.n;
      if ((quantized || half_dot != nullptr) && q.m == 1) {  // matrix-vector: several rows per call, per batch
        for (index_t g = start; g < end;) {
          const index_t n1 = std::min(q.n, ni + (end - g));
          if (quantized) rows_of(b, ni, n1, 0);
          else half_rows(b, ni, n1, 0);
          g += n1 - ni;
          ni = 0, ++b;
        }
        return;
      }
      for (index_t g = start; g < end; ++g) {
        if (half_dot != nullptr) {
          for (index_t mi = 0; mi < q.m; ++mi) half_rows(b, ni, ni + 1, mi);
        } else {
          if (!quantized) decode_into(b, ni, row.data());
          index_t mi = 0;
          if (qdot.multi != nullptr) mi = multi_of(b, ni, ni + 1, 0, q.m);
          for (; mi < q.m; ++mi) element(b, ni, mi, row.data(), s);
        }
        if (++ni == q.n) ni = 0, ++b;
      }
    });
    return;
  }
  // Groups (b, m) of x·wᵀ: a callback decodes blocks of weight rows into its own scratch and
  // uses each block for all of its m.
  // The rows of a block take about the tuning's row_block_bytes (half of L2): decoded floats
  // (exact mode) or the encoded rows themselves (quantized mode), so every m of the callback
  // finds them in cache after the first.
  const index_t row_scratch = quantized ? static_cast<index_t>(w.fmt().row_bytes(k)) : 4 * k;
  index_t block_rows = std::max<index_t>(
      1, std::min<index_t>(q.n, static_cast<index_t>(tuned.row_block_bytes) / std::max<index_t>(row_scratch, 1)));
  if (tiles) block_rows = std::max<index_t>(4, block_rows / 4 * 4);  // the tile kernel's rows start at quads
  // The executor hint (range_callback::grain): every range streams all of the weight rows (about
  // the time of 8 vectors' products for q8_0 4096 x 4096: 17 MiB against 0.11 ms per vector)
  // and lays them out for the tile kernel, so ranges of a few vectors — a two-worker pool's
  // default chunk of a 128-token prompt is 4 — spent most of their time on the weights. Two
  // workers, 128 x 4096 x 4096, against one worker's 12.4-14.2 ms: q8_0 7.5-9.2 ms with a grain
  // of 64, 9.6-11.0 with 32, 21.6-30.6 with none.
  const index_t grain = weights_stream ? 4 * tile_min_serial : 1;
  detail::schedule(op, q.batches * q.m, [&](index_t start, index_t end) {
    const settings s = current_settings();
    detail::aligned_vector<float> rows(quantized ? 0 : static_cast<std::size_t>(block_rows * k));
    for (index_t g = start; g < end;) {
      const index_t b = g / q.m, m0 = g % q.m, m1 = std::min(q.m, m0 + (end - g));
      for (index_t n0 = 0; n0 < q.n; n0 += block_rows) {
        const index_t n1 = std::min(q.n, n0 + block_rows);
        if (!quantized)
          for (index_t ni = n0; ni < n1; ++ni) decode_into(b, ni, rows.data() + (ni - n0) * k);
        if (tiles && (shared_tiles || m1 - m0 >= tile_min_serial)) {
          const index_t v0 = (x_batches == 1 ? 0 : b) * q.m + m0;
          float* y0 = yd + b * q.yb + n0 * q.yn + m0 * q.ym;
          if (shared_tiles) {
            qdot.tile(tiled_w, n0, n1, tiled, v0, v0 + (m1 - m0), y0, q.yn, q.ym);
          } else {
            detail::encoded::qtile_weights block;
            qdot.tile_pack(wrow(b, n0), w.row_bytes(), n1 - n0, k / 32, block);
            qdot.tile(block, 0, n1 - n0, tiled, v0, v0 + (m1 - m0), y0, q.yn, q.ym);
          }
          continue;
        }
        index_t mi = m0;
        if (qdot.multi != nullptr) mi = multi_of(b, n0, n1, m0, m1);
        for (; mi < m1; ++mi)
          if (quantized)
            rows_of(b, n0, n1, mi);
          else
            for (index_t ni = n0; ni < n1; ++ni) element(b, ni, mi, rows.data() + (ni - n0) * k, s);
      }
      g += m1 - m0;
    }
  }, grain);
}

}  // namespace

void matmul(const encoded_tensor& w, const tensor<float>& x, const tensor<float>& out, encoded_mode mode) {
  const product p = plan("ct::matmul", w, x, true);
  run("ct::matmul", p, w, x, out, mode, true);
}
tensor<float> matmul(const encoded_tensor& w, const tensor<float>& x, encoded_mode mode) {
  const product p = plan("ct::matmul", w, x, true);
  tensor<float> out(p.result);
  run("ct::matmul", p, w, x, out, mode, true);
  return out;
}
void matmul(const tensor<float>& x, const encoded_tensor::transposed& wt, const tensor<float>& out, encoded_mode mode) {
  const product p = plan("ct::matmul", wt.of, x, false);
  run("ct::matmul", p, wt.of, x, out, mode, false);
}
tensor<float> matmul(const tensor<float>& x, const encoded_tensor::transposed& wt, encoded_mode mode) {
  const product p = plan("ct::matmul", wt.of, x, false);
  tensor<float> out(p.result);
  run("ct::matmul", p, wt.of, x, out, mode, false);
  return out;
}

}  // namespace ct
