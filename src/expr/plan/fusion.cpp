// Planning the kernels: each varying float operation resolved to its tile function, the
// neighbouring operations folded into one kernel, and the root writing with non-temporal
// stores. Every fused kernel does exactly the separate operations lane by lane, so the bits
// are unchanged (tested against step-by-step evaluation and the scalar backend).
#include <algorithm>

#include "ct/exec/settings.hpp"
#include "src/kernels/kernels.hpp"
#include "src/expr/dtype_dispatch.hpp"
#include "src/expr/one_value.hpp"
#include "src/expr/plan/stages.hpp"
#include "src/expr/tuning.hpp"

namespace ct::detail::evaluator {

namespace {

// Row mode only: the column walk runs instructions on blocks whose operands may be scalar
// where the row walk's are not, so the uniform flags baked into the functions would differ.
void resolve_direct(plan& pl) {
  const auto& code = pl.prog.code();
  pl.direct.assign(code.size(), direct_op{});
  const settings s = current_settings();
  for (std::size_t i = 0; i < code.size(); ++i) {
    const instruction& in = code[i];
    if (in.type != dtype::f32 && in.type != dtype::f64) continue;
    direct_op& d = pl.direct[i];
    d.f64 = in.type == dtype::f64;
    if (pl.uniform[i]) {
      using B = kernels::binary_op;
      const auto b = static_cast<B>(in.sub);
      if ((in.op == opcode::binary && (b == B::add || b == B::sub || b == B::mul || b == B::div)) ||
          (in.op == opcode::unary && exactly_rounded(static_cast<kernels::unary_op>(in.sub))))
        d.kind = direct_op::one_value;
      continue;
    }
    auto u = [&](int k) { return pl.uniform[static_cast<std::size_t>(in.args[k])] != 0; };
    auto pick = [&](auto tag) {
      using T = decltype(tag);
      if (in.op == opcode::unary) {
        const auto op = static_cast<kernels::unary_op>(in.sub);
        d.fn = reinterpret_cast<void (*)()>(kernels::resolve_unary<T>(op, s));
        d.kind = direct_op::unary;
        d.sum_store = reinterpret_cast<void (*)()>(kernels::resolve_unary_sum<T>(op, true, s));
        d.sum_only = reinterpret_cast<void (*)()>(kernels::resolve_unary_sum<T>(op, false, s));
        d.after_sub = reinterpret_cast<void (*)()>(kernels::resolve_sub_unary<T>(op, s));
        d.after_sub_prefetch = reinterpret_cast<void (*)()>(kernels::resolve_sub_unary_prefetch<T>(op, s));
        d.fn_prefetch = reinterpret_cast<void (*)()>(kernels::resolve_unary_prefetch<T>(op, s));
        d.sum_after_sub = reinterpret_cast<void (*)()>(kernels::resolve_sub_unary_sum<T>(op, s));
        d.keep_after_sub = reinterpret_cast<void (*)()>(kernels::resolve_sub_keep_unary<T>(op, false, s));
        d.keep_after_sub_prefetch = reinterpret_cast<void (*)()>(kernels::resolve_sub_keep_unary<T>(op, true, s));
      } else if (in.op == opcode::binary) {
        d.fn = reinterpret_cast<void (*)()>(kernels::resolve_binary<T>(static_cast<kernels::binary_op>(in.sub), u(0), u(1), s));
        d.kind = direct_op::binary;
        if (in.sub == static_cast<std::uint8_t>(kernels::binary_op::mul) && !u(0) && !u(1))
          d.scale_then = reinterpret_cast<void (*)()>(kernels::resolve_scale_then<T>(false, false, s));
      } else if (in.op == opcode::muladd) {
        d.fn = reinterpret_cast<void (*)()>(kernels::resolve_muladd<T>(u(0), u(1), u(2), s));
        d.kind = direct_op::muladd;
        if (!u(0) && !u(1)) d.scale_then = reinterpret_cast<void (*)()>(kernels::resolve_scale_then<T>(true, u(2), s));
      }
      if (d.fn == nullptr) d.kind = direct_op::none;
    };
    if (d.f64) pick(double{});
    else pick(float{});
  }
}

// Whether instruction b is x - u with x varying and u one value per group.
bool minus_one_value(const plan& pl, int b) {
  const instruction& d = pl.prog.code()[static_cast<std::size_t>(b)];
  return d.op == opcode::binary && d.sub == static_cast<std::uint8_t>(kernels::binary_op::sub) &&
         !pl.uniform[static_cast<std::size_t>(b)] && !pl.uniform[static_cast<std::size_t>(d.args[0])] &&
         pl.uniform[static_cast<std::size_t>(d.args[1])];
}

// Whether `value`, computed in pass ps, is read by anything but `user` (an instruction or a
// reducer of that pass): another instruction or reducer of the pass, the row cache (a later
// pass), or the destination.
bool needed_besides(const plan& pl, const pass_plan& pp, std::size_t ps, int value, int user) {
  const program& p = pl.prog;
  const auto& code = p.code();
  if (pl.cache_store_pass[static_cast<std::size_t>(value)] == static_cast<int>(ps) || value == pl.root) return true;
  for (int i : pp.varying)
    if (i != user)
      for (int arg : all_args(p, code[static_cast<std::size_t>(i)]))
        if (arg == value) return true;
  for (int r : pp.reducers)
    if (r != user && code[static_cast<std::size_t>(r)].args[0] == value) return true;
  return false;
}

// A sum whose argument is a unary function computed in the same pass (square in the norms'
// variance) is fed by that function's kernel while the tile is in registers: the same lanes
// bitwise, one pass over the tile fewer. Layer norm 8192x1024 2.75 -> 2.65 ms, rms norm
// 1.97 -> 1.81 ms. (Fusing exp into its sum made softmax and logsumexp ~12% slower; the
// kernels resolve only square.)
void plan_fused_feeds(plan& pl) {
  const auto& code = pl.prog.code();
  const auto& direct = pl.direct;
  const auto& uniform = pl.uniform;
  const std::size_t n = code.size();
  const auto computed_in = [](const pass_plan& pp, int i) {
    return std::find(pp.varying.begin(), pp.varying.end(), i) != pp.varying.end();
  };
  for (std::size_t ps = 0; ps < pl.passes.size(); ++ps) {
    pass_plan& pp = pl.passes[ps];
    pp.feeds.assign(n, -1);
    pp.feed_store.assign(n, 0);
    pp.fed.assign(n, 0);
    pp.sub_feeds.assign(n, -1);
    pp.skip.assign(n, 0);
    pp.sub_first.assign(n, 0);
    pp.sub_keep.assign(n, 0);
    pp.scale_first.assign(n, -1);
    if (pl.column) continue;
    for (int r : pp.reducers) {
      const instruction& red = code[static_cast<std::size_t>(r)];
      const auto a = static_cast<std::size_t>(red.args[0]);
      if (red.sub != static_cast<std::uint8_t>(reduce_op::sum) || uniform[a] || direct[a].kind != direct_op::unary ||
          direct[a].sum_store == nullptr || direct[a].sum_only == nullptr || pp.feeds[a] >= 0 ||
          !computed_in(pp, static_cast<int>(a)))
        continue;
      pp.feeds[a] = r;
      pp.feed_store[a] = needed_besides(pl, pp, ps, static_cast<int>(a), r);
      pp.fed[static_cast<std::size_t>(r)] = 1;
    }
    // x - u written and its square summed in one kernel (layer norm's variance pass), when the
    // squares themselves are not needed. Layer norm 8192x1024 2.48-2.59 -> 2.27-2.34 ms, with
    // weight and bias 3.06-3.14 -> 2.84-2.91 ms (best of 61, alternating A/B).
    for (int a : pp.varying) {
      const auto ua = static_cast<std::size_t>(a);
      const int b = code[ua].args[0];
      if (pp.feeds[ua] < 0 || pp.feed_store[ua] || direct[ua].sum_after_sub == nullptr || !minus_one_value(pl, b) ||
          direct[static_cast<std::size_t>(b)].kind != direct_op::binary || pp.sub_feeds[static_cast<std::size_t>(b)] >= 0 ||
          !computed_in(pp, b))
        continue;
      pp.sub_feeds[static_cast<std::size_t>(b)] = a;
      pp.skip[ua] = 1;
    }
    // exp(x - u), u one value, as one kernel. When nothing else reads x - u (softmax,
    // logsumexp) the kernel only computes exp(x - u): logsumexp 4096x4096 5.50-5.71 ->
    // 5.12-5.22 ms, softmax 7.2-8.2 -> 6.8-7.2 ms (best of 41 calls, three A/B alternations).
    // When x - u is needed besides (log-softmax keeps x - max for its output) the kernel writes
    // it too, one pass over the tile instead of two, if x - u keeps a place of its own (the row
    // cache or a tile slot) and exp is not the root (whose streaming variant has another
    // signature): log-softmax 4096x4096 4.86-4.94 -> 4.39-4.43 ms (medians of 21 calls, three
    // alternations).
    for (auto at = pp.varying.begin(); at != pp.varying.end(); ++at) {
      const int a = *at;
      const auto ua = static_cast<std::size_t>(a);
      const int b = code[ua].args[0];
      if (direct[ua].kind != direct_op::unary || pp.feeds[ua] >= 0 || pp.skip[ua] || !minus_one_value(pl, b)) continue;
      // b must come right before a: then nothing can reuse x's tile slot in between (a may
      // write into it, position by position after reading it, which is safe).
      if (at == pp.varying.begin() || *(at - 1) != b) continue;
      const auto ub = static_cast<std::size_t>(b);
      if (!needed_besides(pl, pp, ps, b, a)) {
        if (direct[ua].after_sub == nullptr) continue;
        pp.skip[ub] = 1;
        pp.sub_first[ua] = 1;
        continue;
      }
      if (a == pl.root || direct[ua].keep_after_sub == nullptr || pp.skip[ub] || pp.sub_feeds[ub] >= 0 ||
          direct[ub].kind != direct_op::binary || (pl.cache_store_pass[ub] != static_cast<int>(ps) && pp.slot[ub] < 0))
        continue;
      pp.skip[ub] = 1;
      pp.sub_keep[ua] = 1;
    }
    // (x * u) * w [+ c], u one value, when nothing else reads x * u: one kernel (the output pass
    // of layer norm with weight and bias, RMS norm with weight). Loads of w and c may sit between
    // x * u and its user; none of the instructions in between may own x's tile slot (x's last
    // use was x * u when the slots were assigned). Layer norm 8192x1024 with weight and bias
    // 2.64-2.91 -> 2.43-2.52 ms (best of 31 calls, alternating A/B, busy host).
    for (auto at = pp.varying.begin(); at != pp.varying.end(); ++at) {
      const auto uy = static_cast<std::size_t>(*at);
      if (direct[uy].scale_then == nullptr || pp.skip[uy] || pp.feeds[uy] >= 0 || pp.sub_feeds[uy] >= 0) continue;
      const instruction& y = code[uy];
      for (int t_pos = 0; t_pos < 2; ++t_pos) {
        const int t = y.args[t_pos];
        const auto ut = static_cast<std::size_t>(t);
        const instruction& m = code[ut];
        if (y.args[1 - t_pos] == t || y.args[2] == t || m.op != opcode::binary ||
            m.sub != static_cast<std::uint8_t>(kernels::binary_op::mul) || m.type != y.type || uniform[ut] ||
            pp.skip[ut] || pp.feeds[ut] >= 0 || pp.sub_feeds[ut] >= 0 || pp.sub_first[ut])
          continue;
        const auto from = std::find(pp.varying.begin(), at, t);
        if (from == at) continue;  // not computed in this pass
        const bool u0 = uniform[static_cast<std::size_t>(m.args[0])], u1 = uniform[static_cast<std::size_t>(m.args[1])];
        if (u0 == u1 || needed_besides(pl, pp, ps, t, static_cast<int>(uy))) continue;
        const int x = m.args[u0 ? 1 : 0];
        bool clobbered = false;
        if (std::find(pp.varying.begin(), at, x) != at)
          for (auto k = from + 1; k != at; ++k)
            clobbered = clobbered || pp.slot[static_cast<std::size_t>(*k)] == pp.slot[static_cast<std::size_t>(x)];
        if (clobbered) continue;
        pp.skip[ut] = 1;
        pp.scale_first[uy] = static_cast<signed char>(t_pos + 2 * (u0 ? 0 : 1));
        break;
      }
    }
  }
}

/// No transcendental, pow or user functor is evaluated per element in the output pass.
bool light_output_pass(const plan& pl) {
  for (int i : pl.passes.back().varying) {
    const instruction& in = pl.prog.code()[static_cast<std::size_t>(i)];
    if (in.op == opcode::map) return false;
    if (in.op == opcode::binary && in.sub == static_cast<std::uint8_t>(kernels::binary_op::pow)) return false;
    if (in.op == opcode::unary && !exactly_rounded(static_cast<kernels::unary_op>(in.sub))) return false;
  }
  return true;
}

// The root's kernel writes the destination with non-temporal stores itself when it can
// (binary or multiply-add): the scratch tile and its copy-out loop cost a pass over L1 and
// sent the stores in bursts. Softmax 4096x4096 7.1-7.3 -> 5.8-6.3 ms, layer norm 8192x1024
// with weight and bias 2.9-3.2 -> 2.75-3.05 ms, x*y+z over 16M floats 7.7-8.9 -> 6.5-7.4 ms
// (best of 15 calls, alternating A/B, busy host).
void resolve_root_stream(plan& pl) {
  const direct_op& f = pl.direct[static_cast<std::size_t>(pl.root)];
  const instruction& in = pl.prog.code()[static_cast<std::size_t>(pl.root)];
  if (f.kind != direct_op::binary && f.kind != direct_op::muladd) return;
  const settings s = current_settings();
  auto u = [&](int k) { return pl.uniform[static_cast<std::size_t>(in.args[k])] != 0; };
  const bool scaled = pl.passes.back().scale_first[static_cast<std::size_t>(pl.root)] >= 0;
  auto pick = [&](auto tag) {
    using T = decltype(tag);
    if (scaled)
      pl.root_stream = reinterpret_cast<void (*)()>(kernels::resolve_scale_then<T>(f.kind == direct_op::muladd, f.kind == direct_op::muladd && u(2), s, true));
    else if (f.kind == direct_op::binary)
      pl.root_stream = reinterpret_cast<void (*)()>(kernels::resolve_binary<T>(static_cast<kernels::binary_op>(in.sub), u(0), u(1), s, true));
    else
      pl.root_stream = reinterpret_cast<void (*)()>(kernels::resolve_muladd<T>(u(0), u(1), u(2), s, true));
  };
  if (f.f64) pick(double{});
  else pick(float{});
}

// Non-temporal stores for a large result (the tuning's stream_store_bytes, tuning.hpp's stream_min_tile), only
// when the output pass is light: unless the root's kernel streams itself (root_stream), the
// tile is computed into scratch and copied out in a burst, which cannot overlap heavy
// per-element work (elementwise exp of 4096x4096 went from 3.3 to 4.0 ms with streaming,
// while x*2 went from 3.1 to 2.4 ms and softmax from 9.3 to 7.8).
void decide_stream(plan& pl, bool may_stream) {
  const geometry& g = pl.geo;
  const auto esize = static_cast<index_t>(dtype_bytes(pl.dest.type));
  // A 16-bit destination streams its rounded tiles (narrowed in the runner, then copied out
  // with non-temporal stores); its tiles are computed in float32, hence the tile test in 4 bytes.
  const index_t tile_bytes = pl.tile * (pl.narrow_dest ? index_t{4} : esize);
  const index_t result_elements = pl.whole_result_elements > 0 ? pl.whole_result_elements : g.groups * g.reduced;
  pl.stream = may_stream && !pl.column && !pl.root_uniform && light_output_pass(pl) && g.walk.back().strides.back() == 1 &&
              result_elements * esize >= pl.stream_threshold && tile_bytes >= stream_min_tile;
  if (pl.stream && !pl.narrow_dest) resolve_root_stream(pl);
}

}  // namespace

void plan_fusion(plan& pl, bool may_stream) {
  resolve_direct(pl);
  plan_fused_feeds(pl);
  decide_stream(pl, may_stream);
}

}  // namespace ct::detail::evaluator
