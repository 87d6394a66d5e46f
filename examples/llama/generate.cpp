// llama_generate: writes a Llama-architecture GGUF file of random weights (no model can be
// downloaded on the machines ct is built on; the loader is the one real files go through).
//   llama_generate OUT.gguf [--size 15|100] [--format q8_0|q4_0|q4_K|q6_K|f16|bf16|f32] [--seed N]
#include <cstdlib>
#include <iostream>
#include <string>

#include "llama.hpp"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: llama_generate OUT.gguf [--size 15|100] [--format FORMAT] [--seed N]\n";
    return 2;
  }
  llama::generator_options o;
  int size = 15;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--size") size = std::atoi(v.c_str());
    else if (k == "--format") o.weight_format = v;
    else if (k == "--seed") o.seed = std::strtoull(v.c_str(), nullptr, 10);
    else {
      std::cerr << "llama_generate: unknown option " << k << "\n";
      return 2;
    }
  }
  try {
    o.cfg = llama::sized_config(size);
    llama::generate(o, argv[1]);
  } catch (const std::exception& e) {
    std::cerr << "llama_generate: " << e.what() << "\n";
    return 1;
  }
  std::cout << "wrote " << argv[1] << " (" << size << "M parameters, " << o.weight_format << ")\n";
  return 0;
}
