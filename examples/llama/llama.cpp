// examples/llama/llama.cpp — the forward pass, loading, sampling and the model generator.
#include "llama.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace llama {

using ct::index_t;

// ---- weights

index_t weight::rows() const {
  return std::visit([](const auto& t) { return t.shape()[0]; }, w);
}
index_t weight::cols() const {
  return std::visit([](const auto& t) { return t.shape()[1]; }, w);
}

ct::tensor<float> weight::times_transpose(const ct::tensor<float>& x, ct::encoded_mode mode) const {
  // One token (generation): a vector-matrix product, whose groups are the output elements
  // (CONTRACT §4), so the executor's workers share the weight rows; a [1, K] matrix would be
  // one group (one output row), run by one worker.
  if (x.shape()[0] == 1) {
    const auto v = x.reshape({x.shape()[1]});
    if (const auto* d = std::get_if<ct::tensor<float>>(&w)) return ct::matmul(v, d->permute({1, 0})).reshape({1, rows()});
    return ct::matmul(v, std::get<ct::encoded_tensor>(w).transpose(), mode).reshape({1, rows()});
  }
  if (const auto* d = std::get_if<ct::tensor<float>>(&w)) return ct::matmul(x, d->permute({1, 0}));
  return ct::matmul(x, std::get<ct::encoded_tensor>(w).transpose(), mode);
}

ct::tensor<float> weight::row(index_t r) const {
  if (const auto* d = std::get_if<ct::tensor<float>>(&w)) return d->slice(0, r, r + 1).reshape({d->shape()[1]}).clone();
  const auto& e = std::get<ct::encoded_tensor>(w);
  const auto one = ct::encoded_tensor::view(e.fmt(), {1, e.cols()}, e.row(r), e.row_bytes());
  return ct::decode(one).reshape({e.cols()});
}

// ---- loading

namespace {

weight weight_of(const ct::gguf::file& f, const std::string& name, index_t rows, index_t cols) {
  const auto& info = f.tensor(name);
  if (info.shape != ct::dims{rows, cols})
    throw ct::gguf_error("llama: tensor \"" + name + "\" has shape " + info.shape.str() + ", expected " +
                         ct::dims{rows, cols}.str());
  if (info.type == static_cast<std::uint32_t>(ct::gguf::tensor_type::f32)) return weight{f.dense<float>(name)};
  return weight{f.encoded(name)};
}

ct::tensor<float> norm_of(const ct::gguf::file& f, const std::string& name, index_t n) {
  const auto& info = f.tensor(name);
  if (info.shape != ct::dims{n})
    throw ct::gguf_error("llama: tensor \"" + name + "\" has shape " + info.shape.str() + ", expected [" +
                         std::to_string(n) + "]");
  return f.dense<float>(name);
}

index_t key(const ct::gguf::file& f, const std::string& k) { return static_cast<index_t>(f.get_uint("llama." + k)); }

}  // namespace

model load(ct::gguf::file f) {
  if (const auto* arch = f.find("general.architecture"); arch && arch->as_string() != "llama")
    throw ct::gguf_error("llama: general.architecture is \"" + arch->as_string() + "\", not \"llama\"");
  model m{f, {}, {}, {}, {}, {}, ct::encoded_mode::quantized};
  config& c = m.cfg;
  c.embd = key(f, "embedding_length");
  c.layers = key(f, "block_count");
  c.heads = key(f, "attention.head_count");
  c.kv_heads = f.find("llama.attention.head_count_kv") ? key(f, "attention.head_count_kv") : c.heads;
  c.ff = key(f, "feed_forward_length");
  c.context = key(f, "context_length");
  if (const auto* v = f.find("llama.rope.freq_base")) c.rope_base = v->as_float();
  if (const auto* v = f.find("llama.attention.layer_norm_rms_epsilon")) c.rms_eps = static_cast<float>(v->as_float());
  if (c.heads <= 0 || c.kv_heads <= 0 || c.embd % c.heads != 0 || c.heads % c.kv_heads != 0 || c.head_dim() % 2 != 0)
    throw ct::gguf_error("llama: " + std::to_string(c.heads) + " heads and " + std::to_string(c.kv_heads) +
                         " key/value heads do not divide an embedding of " + std::to_string(c.embd) +
                         " into even-sized heads");
  const auto& embd_info = f.tensor("token_embd.weight");
  if (embd_info.shape.size() != 2) throw ct::gguf_error("llama: token_embd.weight is not a matrix");
  c.vocab = embd_info.shape[0];
  m.token_embd = weight_of(f, "token_embd.weight", c.vocab, c.embd);
  m.output = f.find_tensor("output.weight") ? weight_of(f, "output.weight", c.vocab, c.embd) : m.token_embd;
  m.output_norm = norm_of(f, "output_norm.weight", c.embd);
  for (index_t l = 0; l < c.layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    m.layers.push_back(layer{norm_of(f, p + "attn_norm.weight", c.embd), norm_of(f, p + "ffn_norm.weight", c.embd),
                             weight_of(f, p + "attn_q.weight", c.embd, c.embd),
                             weight_of(f, p + "attn_k.weight", c.kv_dim(), c.embd),
                             weight_of(f, p + "attn_v.weight", c.kv_dim(), c.embd),
                             weight_of(f, p + "attn_output.weight", c.embd, c.embd),
                             weight_of(f, p + "ffn_gate.weight", c.ff, c.embd), weight_of(f, p + "ffn_up.weight", c.ff, c.embd),
                             weight_of(f, p + "ffn_down.weight", c.embd, c.ff)});
  }
  return m;
}

kv_cache::kv_cache(const config& c) {
  for (index_t l = 0; l < c.layers; ++l) {
    // Keys position-last ([kv_dim, context]): the scores product reads a head's keys as a
    // row-contiguous B in place, where the position-first layout's column-major B was packed
    // on every call (a tenth of a token's time in the Llama bench's generation).
    k.emplace_back(ct::dims{c.kv_dim(), c.context});
    v.emplace_back(ct::dims{c.context, c.kv_dim()});
  }
}

// ---- the forward pass

namespace {

// Rotary position embedding of x [T, heads * hd] (adjacent pairs (2i, 2i+1) rotated by
// position * base^(-2i / hd), the layout of llama.cpp's GGUF files): a new [T, heads, hd].
ct::tensor<float> rope(const ct::tensor<float>& x, index_t heads, index_t hd, const ct::tensor<float>& cos,
                       const ct::tensor<float>& sin) {
  const index_t t = x.shape()[0];
  const auto x3 = x.reshape({t, heads, hd});
  const auto even = x3.slice(2, 0, hd, 2), odd = x3.slice(2, 1, hd, 2);
  ct::tensor<float> out({t, heads, hd});
  ct::eval(even * cos - odd * sin, out.slice(2, 0, hd, 2));
  ct::eval(even * sin + odd * cos, out.slice(2, 1, hd, 2));
  return out;
}

}  // namespace

ct::tensor<float> forward(const model& m, kv_cache& cache, const std::vector<std::int32_t>& tokens) {
  const config& c = m.cfg;
  const index_t t = static_cast<index_t>(tokens.size()), p0 = cache.length, len = p0 + t;
  if (t == 0) throw ct::error("llama::forward: no tokens");
  if (len > c.context)
    throw ct::error("llama::forward: positions " + std::to_string(p0) + " to " + std::to_string(len - 1) +
                    " exceed the context of " + std::to_string(c.context));
  for (std::int32_t id : tokens)
    if (id < 0 || id >= c.vocab)
      throw ct::error("llama::forward: token id " + std::to_string(id) + " outside [0, " + std::to_string(c.vocab) + ")");
  const index_t hd = c.head_dim(), group = c.heads / c.kv_heads;

  ct::tensor<float> x({t, c.embd});
  for (index_t i = 0; i < t; ++i) ct::eval(m.token_embd.row(tokens[static_cast<std::size_t>(i)]), x.slice(0, i, i + 1).reshape({c.embd}));

  // Rotation angles per position and pair, in double, rounded once: [T, 1, hd/2].
  ct::tensor<float> cos({t, 1, hd / 2}), sin({t, 1, hd / 2});
  for (index_t i = 0; i < t; ++i)
    for (index_t j = 0; j < hd / 2; ++j) {
      const double angle = static_cast<double>(p0 + i) * std::pow(c.rope_base, -2.0 * static_cast<double>(j) / static_cast<double>(hd));
      cos(i, 0, j) = static_cast<float>(std::cos(angle));
      sin(i, 0, j) = static_cast<float>(std::sin(angle));
    }
  // Causal mask: token i (position p0 + i) sees positions 0 .. p0 + i.
  const auto cols = ct::arange<std::int64_t>(0, len);
  const auto rows = ct::arange<std::int64_t>(p0, len).reshape({t, 1});
  const ct::tensor<bool> masked = ct::eval(cols > rows);
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));

  for (index_t l = 0; l < c.layers; ++l) {
    const layer& w = m.layers[static_cast<std::size_t>(l)];
    const auto h = ct::eval(ct::rms_norm(x, -1, c.rms_eps, w.attn_norm));
    const auto q = rope(w.q.times_transpose(h, m.mode), c.heads, hd, cos, sin);
    const auto k = rope(w.k.times_transpose(h, m.mode), c.kv_heads, hd, cos, sin);
    const auto v = w.v.times_transpose(h, m.mode);
    ct::eval(k.reshape({t, c.kv_dim()}).permute({1, 0}), cache.k[static_cast<std::size_t>(l)].slice(1, p0, len));
    ct::eval(v, cache.v[static_cast<std::size_t>(l)].slice(0, p0, len));
    // Attention for all heads in three calls: batch dimensions [kv_heads, group], the keys
    // and values of a key/value head shared by its group's query heads (grouped-query
    // attention: query head g * group + j reads key/value head g) through a broadcast batch
    // dimension of extent 1.
    const auto keys = cache.k[static_cast<std::size_t>(l)].slice(1, 0, len).reshape({c.kv_heads, 1, hd, len});
    const auto values = cache.v[static_cast<std::size_t>(l)].slice(0, 0, len).reshape({len, c.kv_heads, 1, hd}).permute({1, 2, 0, 3});
    // Queries [kv_heads, group, T, hd]; for one token [kv_heads, 1, group, hd] instead (the same
    // elements), so each key/value head's product is one matrix of `group` rows, its keys read
    // once rather than once per query head (in place: a head's keys are a row-contiguous
    // [hd, len] in the position-last cache).
    const ct::dims order = t == 1 ? ct::dims{1, 0, 2, 3} : ct::dims{1, 2, 0, 3};
    const auto queries = q.reshape({t, c.kv_heads, group, hd}).permute(order);
    const auto scores = ct::matmul(queries, keys);  // [kv_heads, group, T, len] (or [.., 1, group, len])
    const auto probs = ct::eval(ct::softmax(ct::where(masked, -INFINITY, scores * scale), -1));
    ct::tensor<float> att({t, c.heads, hd});
    ct::matmul(probs, values, att.reshape({t, c.kv_heads, group, hd}).permute(order));
    x = ct::eval(x + w.o.times_transpose(att.reshape({t, c.embd}), m.mode));
    const auto h2 = ct::eval(ct::rms_norm(x, -1, c.rms_eps, w.ffn_norm));
    const auto gate = w.gate.times_transpose(h2, m.mode);
    const auto up = w.up.times_transpose(h2, m.mode);
    const auto f = ct::eval(ct::silu(gate) * up);
    x = ct::eval(x + w.down.times_transpose(f, m.mode));
  }
  // The logits first: their allocations may fail too, and a failed call must not commit the
  // positions it wrote (the flaky "a failed allocation anywhere" test caught it here).
  auto logits = m.output.times_transpose(ct::eval(ct::rms_norm(x, -1, c.rms_eps, m.output_norm)), m.mode);
  cache.length = len;
  return logits;
}

// ---- sampling

std::int32_t sampler::next(const ct::tensor<float>& logits_row) {
  const auto l = logits_row.contiguous();
  const index_t n = l.size();
  const float* p = l.data();
  if (temperature <= 0.0f || top_k == 1) return static_cast<std::int32_t>(std::max_element(p, p + n) - p);
  const index_t k = std::min<index_t>(n, top_k <= 0 ? n : top_k);
  std::vector<std::int32_t> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](std::int32_t a, std::int32_t b) {
    return p[a] > p[b] || (p[a] == p[b] && a < b);
  });
  std::vector<double> weights(static_cast<std::size_t>(k));
  double total = 0;
  for (index_t i = 0; i < k; ++i) {
    weights[static_cast<std::size_t>(i)] =
        std::exp((static_cast<double>(p[order[static_cast<std::size_t>(i)]]) - p[order[0]]) / temperature);
    total += weights[static_cast<std::size_t>(i)];
  }
  // A uniform draw from the 53 high bits of the generator: the same sequence on every platform.
  double u = static_cast<double>(rng() >> 11) * 0x1p-53 * total;
  for (index_t i = 0; i < k; ++i) {
    u -= weights[static_cast<std::size_t>(i)];
    if (u < 0) return order[static_cast<std::size_t>(i)];
  }
  return order[static_cast<std::size_t>(k - 1)];
}

// ---- the generator

config sized_config(int millions) {
  config c;
  c.vocab = 32000;
  if (millions == 15) {  // the shape of the "stories15M" Llama
    c.embd = 288, c.layers = 6, c.heads = 6, c.kv_heads = 6, c.ff = 768, c.context = 256;
  } else if (millions == 100) {  // 8 layers of 768 with grouped-query attention: 4 key/value heads
    c.embd = 768, c.layers = 8, c.heads = 12, c.kv_heads = 4, c.ff = 2048, c.context = 512;
  } else {
    throw ct::error("llama::sized_config: sizes 15 and 100 (million parameters), not " + std::to_string(millions));
  }
  return c;
}

void generate(const generator_options& o, const std::string& path) {
  const config& c = o.cfg;
  if (c.embd % c.heads != 0 || c.heads % c.kv_heads != 0 || c.head_dim() % 2 != 0)
    throw ct::error("llama::generate: heads do not divide the embedding into even-sized heads");
  ct::gguf::writer out;
  using ct::gguf::value;
  using ct::gguf::value_type;
  out.set("general.architecture", value::string("llama"));
  out.set("general.name", value::string("ct random llama (" + o.weight_format + ")"));
  auto u32 = [&](const std::string& k, index_t v) {
    out.set("llama." + k, value::unsigned_integer(value_type::u32, static_cast<std::uint64_t>(v)));
  };
  u32("context_length", c.context);
  u32("embedding_length", c.embd);
  u32("block_count", c.layers);
  u32("feed_forward_length", c.ff);
  u32("attention.head_count", c.heads);
  u32("attention.head_count_kv", c.kv_heads);
  u32("rope.dimension_count", c.head_dim());
  out.set("llama.rope.freq_base", value::floating(value_type::f32, c.rope_base));
  out.set("llama.attention.layer_norm_rms_epsilon", value::floating(value_type::f32, c.rms_eps));
  std::uint64_t seed = o.seed;
  // Weights ~ N(0, 1/sqrt(fan_in)) keep every activation near unit scale through the layers;
  // norm weights near 1.
  auto matrix = [&](const std::string& name, index_t rows, index_t cols) {
    const auto w = ct::random_normal<float>({rows, cols}, seed++, 0.0f, 1.0f / std::sqrt(static_cast<float>(cols)));
    if (o.weight_format == "f32") out.add(name, w);
    else out.add(name, ct::encode(w, ct::find_format(o.weight_format)));
  };
  auto norm = [&](const std::string& name) { out.add(name, ct::random_normal<float>({c.embd}, seed++, 1.0f, 0.1f)); };
  matrix("token_embd.weight", c.vocab, c.embd);
  for (index_t l = 0; l < c.layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    norm(p + "attn_norm.weight");
    matrix(p + "attn_q.weight", c.embd, c.embd);
    matrix(p + "attn_k.weight", c.kv_dim(), c.embd);
    matrix(p + "attn_v.weight", c.kv_dim(), c.embd);
    matrix(p + "attn_output.weight", c.embd, c.embd);
    norm(p + "ffn_norm.weight");
    matrix(p + "ffn_gate.weight", c.ff, c.embd);
    matrix(p + "ffn_up.weight", c.ff, c.embd);
    matrix(p + "ffn_down.weight", c.embd, c.ff);
  }
  norm("output_norm.weight");
  matrix("output.weight", c.vocab, c.embd);
  out.write(path);
}

}  // namespace llama
