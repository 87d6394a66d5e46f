// llama_run: loads a Llama-architecture GGUF file, feeds a prompt of token ids and generates
// tokens under a Boost.Asio pool, printing the ids and the speed. No tokenizer: ids in, ids out.
//   llama_run MODEL.gguf [--threads N] [--tokens N] [--prompt "1 2 3"] [--temperature T] [--top-k K]
#include <boost/asio/thread_pool.hpp>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>

#include "ct/asio.hpp"
#include "llama.hpp"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: llama_run MODEL.gguf [--threads N] [--tokens N] [--prompt \"ids\"] [--temperature T] [--top-k K]\n";
    return 2;
  }
  int threads = 2, generate = 32;
  std::vector<std::int32_t> prompt{1};
  llama::sampler sampler;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--threads") threads = std::atoi(v.c_str());
    else if (k == "--tokens") generate = std::atoi(v.c_str());
    else if (k == "--temperature") sampler.temperature = std::strtof(v.c_str(), nullptr);
    else if (k == "--top-k") sampler.top_k = std::atoi(v.c_str());
    else if (k == "--prompt") {
      prompt.clear();
      std::istringstream in(v);
      for (std::int32_t id; in >> id;) prompt.push_back(id);
    } else {
      std::cerr << "llama_run: unknown option " << k << "\n";
      return 2;
    }
  }
  try {
    using clock = std::chrono::steady_clock;
    const auto t0 = clock::now();
    const auto m = llama::load(ct::gguf::file::open(argv[1]));
    const auto& c = m.cfg;
    std::cout << argv[1] << ": " << c.layers << " layers, embedding " << c.embd << ", " << c.heads << " heads ("
              << c.kv_heads << " key/value), feed-forward " << c.ff << ", vocabulary " << c.vocab << ", context "
              << c.context << "; loaded in "
              << std::chrono::duration<double, std::milli>(clock::now() - t0).count() << " ms\n";
    boost::asio::thread_pool pool(static_cast<std::size_t>(std::max(1, threads - 1)));
    // A generated token is a few hundred short calls (tens of microseconds each): a helper
    // posted afresh for every call waits on the pool's wake-up (the executor then keeps calls
    // shorter than twice that on this thread), so the helpers linger between calls instead and
    // can share them (docs/executor.md). bench/llama's generate/…/2t_linger measures it.
    ct::asio_options options;
    options.linger = std::chrono::microseconds(100);
    ct::executor_scope scope(ct::asio_executor(pool, threads, options));
    llama::kv_cache cache(c);
    const auto t1 = clock::now();
    auto logits = llama::forward(m, cache, prompt);
    const double prompt_s = std::chrono::duration<double>(clock::now() - t1).count();
    std::int32_t next = sampler.next(logits.slice(0, logits.shape()[0] - 1, logits.shape()[0]).reshape({c.vocab}));
    std::cout << "prompt of " << prompt.size() << " tokens: " << prompt.size() / prompt_s << " tokens/s\ngenerated:";
    const int n = static_cast<int>(std::min<ct::index_t>(generate, c.context - static_cast<ct::index_t>(prompt.size())));
    const auto t2 = clock::now();
    for (int i = 0; i < n; ++i) {
      std::cout << ' ' << next << std::flush;
      logits = llama::forward(m, cache, {next});
      next = sampler.next(logits.reshape({c.vocab}));
    }
    const double gen_s = std::chrono::duration<double>(clock::now() - t2).count();
    std::cout << "\n" << n << " tokens generated with " << threads << " threads: " << n / gen_s << " tokens/s\n";
    pool.join();
  } catch (const std::exception& e) {
    std::cerr << "llama_run: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
