// examples/llama/llama.hpp — a Llama-architecture decoder on ct: the reusable part of the
// example (docs/llama.md). A model is read from a GGUF file with the tensor and key names
// llama.cpp uses; every step of the forward pass is a ct expression or a ct matmul, so it runs
// under the executor bound on the calling thread. Token ids in, logits out: no tokenizer.
#pragma once
#include <cstdint>
#include <random>
#include <string>
#include <variant>
#include <vector>

#include "ct/ct.hpp"
#include "ct/io/gguf.hpp"

namespace llama {

/// The hyper-parameters, from the GGUF keys llama.cpp writes ("llama.block_count", …).
struct config {
  ct::index_t vocab = 0;        // rows of token_embd.weight
  ct::index_t embd = 0;         // llama.embedding_length
  ct::index_t layers = 0;       // llama.block_count
  ct::index_t heads = 0;        // llama.attention.head_count
  ct::index_t kv_heads = 0;     // llama.attention.head_count_kv (default: heads)
  ct::index_t ff = 0;           // llama.feed_forward_length
  ct::index_t context = 0;      // llama.context_length
  double rope_base = 10000.0;   // llama.rope.freq_base
  float rms_eps = 1e-5f;        // llama.attention.layer_norm_rms_epsilon
  ct::index_t head_dim() const { return embd / heads; }
  ct::index_t kv_dim() const { return kv_heads * head_dim(); }
};

/// A weight matrix [N, K] as the file holds it: f32 (dense) or any ct block format.
struct weight {
  std::variant<ct::tensor<float>, ct::encoded_tensor> w;
  ct::index_t rows() const;
  ct::index_t cols() const;
  /// x [T, K] times the weight's transpose: [T, N], through ct::matmul (mode: for encoded
  /// weights).
  ct::tensor<float> times_transpose(const ct::tensor<float>& x, ct::encoded_mode mode) const;
  /// Row r as floats (the embedding lookup).
  ct::tensor<float> row(ct::index_t r) const;
};

struct layer {
  ct::tensor<float> attn_norm, ffn_norm;
  weight q, k, v, o, gate, up, down;
};

/// A model over an open GGUF file: the views point into the file's mapping, which the model
/// keeps alive.
struct model {
  ct::gguf::file file;
  config cfg;
  weight token_embd, output;  // output is token_embd when the file has no output.weight
  ct::tensor<float> output_norm;
  std::vector<layer> layers;
  /// How products with encoded weights compute (ct/encoded/matmul.hpp): quantized
  /// activations (the default, as llama.cpp does) or exact float32.
  ct::encoded_mode mode = ct::encoded_mode::quantized;
};

/// Reads the hyper-parameters and weight views (ct::gguf_error for a missing key or tensor,
/// or one of the wrong shape, naming it).
model load(ct::gguf::file f);

/// The keys and values of one sequence's attention, per layer: keys [kv_dim, context] (position
/// last, so that the scores product reads them in place), values [context, kv_dim].
struct kv_cache {
  std::vector<ct::tensor<float>> k, v;
  ct::index_t length = 0;  // positions filled
  explicit kv_cache(const config& c);
};

/// Runs tokens (at positions cache.length, cache.length + 1, …) through the model, appends
/// their keys and values to the cache, and returns the logits of every token: [T, vocab].
/// ct::error when the tokens would run past the context or an id is out of range.
ct::tensor<float> forward(const model& m, kv_cache& cache, const std::vector<std::int32_t>& tokens);

/// Picks the next token from one row of logits: greedy (temperature 0 or top_k 1), or
/// sampling among the top_k most likely after dividing by temperature.
struct sampler {
  float temperature = 0.0f;
  int top_k = 40;
  std::mt19937_64 rng{1};
  std::int32_t next(const ct::tensor<float>& logits_row);
};

/// The sizes of the generator (examples/llama/generate.cpp).
struct generator_options {
  config cfg;
  std::string weight_format = "q8_0";  // of the 2-D weights: f32 or a ct block format
  std::uint64_t seed = 1;
};
/// A config of about `millions` million parameters, shaped like the small Llama models people
/// train (head size 64 or 48, feed-forward about 2.7 x the embedding, vocabulary 32000).
config sized_config(int millions);
/// Writes a Llama-architecture GGUF file of random weights (normal, scaled like a trained
/// model's so that activations stay in range).
void generate(const generator_options& o, const std::string& path);

}  // namespace llama
