#include "harness/trainer/synthetic_data.h"

#include <cmath>
#include <vector>

namespace lockstep {
namespace {

// Counter-based randomness: every value is a hash of (seed, stream, indices), so sample i is a
// pure function of (seed, i) and any rank can make any sample without replaying an RNG stream.
uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

enum Stream : uint64_t { kMlpInput = 1, kTeacherWeight = 2, kTeacherBias = 3, kSequence = 4 };

uint64_t Hash(uint64_t seed, Stream stream, uint64_t a, uint64_t b = 0) {
  return SplitMix64(SplitMix64(SplitMix64(SplitMix64(seed) ^ stream) ^ a) ^ b);
}

// Uniform on [-1, 1) with the 53 high-quality bits of the hash.
double Symmetric(uint64_t h) { return static_cast<double>(h >> 11) * 0x1.0p-52 - 1.0; }

// mlp: x uniform with unit variance; y = tanh(W x + c) with a fixed "teacher" (W, c) drawn from
// the seed alone, scaled so W x has unit variance. The student can fit it, so the loss falls.
void FillMlp(const ModelSpec& spec, uint64_t seed, uint64_t first, int64_t count, Batch& batch) {
  const int64_t in = spec.input_dim;
  const int64_t out = spec.output_dim;
  std::vector<double> w(static_cast<size_t>(in * out));
  std::vector<double> c(static_cast<size_t>(out));
  const double w_scale = std::sqrt(3.0 / static_cast<double>(in));
  for (int64_t o = 0; o < out; ++o) {
    c[o] = 0.5 * Symmetric(Hash(seed, kTeacherBias, o));
    for (int64_t j = 0; j < in; ++j) w[o * in + j] = w_scale * Symmetric(Hash(seed, kTeacherWeight, o, j));
  }
  batch.inputs = torch::empty({count, in}, torch::kFloat);
  batch.targets = torch::empty({count, out}, torch::kFloat);
  float* x = batch.inputs.data_ptr<float>();
  float* y = batch.targets.data_ptr<float>();
  for (int64_t s = 0; s < count; ++s) {
    const uint64_t sample = first + static_cast<uint64_t>(s);
    float* xs = x + s * in;
    for (int64_t j = 0; j < in; ++j) {
      xs[j] = static_cast<float>(std::sqrt(3.0) * Symmetric(Hash(seed, kMlpInput, sample, j)));
    }
    for (int64_t o = 0; o < out; ++o) {
      double acc = c[o];
      for (int64_t j = 0; j < in; ++j) acc += w[o * in + j] * xs[j];
      y[s * out + o] = static_cast<float>(std::tanh(acc));
    }
  }
}

// transformer: each sample is an affine recurrence x[t+1] = (a * x[t] + b) mod vocab with a odd
// from {1, 3, 5, 7}, b from {1, 2} and x[0] from the sample's hash. With only 8 rules a token
// already narrows its successor to 8 candidates (the loss falls from log(vocab) towards log(8)
// within a few steps), and the earlier tokens of the sequence pin the rule down (towards 0).
// The model sees tokens 0..T-1 and predicts 1..T.
void FillTransformer(const ModelSpec& spec, uint64_t seed, uint64_t first, int64_t count, Batch& batch) {
  const int64_t t_len = spec.seq_len;
  const uint64_t vocab = static_cast<uint64_t>(spec.vocab);
  batch.inputs = torch::empty({count, t_len}, torch::kLong);
  batch.targets = torch::empty({count, t_len}, torch::kLong);
  int64_t* x = batch.inputs.data_ptr<int64_t>();
  int64_t* y = batch.targets.data_ptr<int64_t>();
  for (int64_t s = 0; s < count; ++s) {
    const uint64_t h = Hash(seed, kSequence, first + static_cast<uint64_t>(s));
    const uint64_t a = 1 + 2 * (h % 4);
    const uint64_t b = 1 + (h >> 8) % 2;
    uint64_t token = (h >> 16) % vocab;
    for (int64_t t = 0; t < t_len; ++t) {
      x[s * t_len + t] = static_cast<int64_t>(token);
      token = (a * token + b) % vocab;
      y[s * t_len + t] = static_cast<int64_t>(token);
    }
  }
}

}  // namespace

Batch MakeBatch(const ModelSpec& model, uint64_t seed, int batch_per_rank, int grad_accum,
                int64_t step, int micro, int rank, int world_size, torch::Device device) {
  TORCH_CHECK(batch_per_rank >= 1 && grad_accum >= 1 && world_size >= 1, "MakeBatch: sizes must be >= 1");
  TORCH_CHECK(step >= 1, "MakeBatch: step is 1-based, got ", step);
  TORCH_CHECK(micro >= 0 && micro < grad_accum, "MakeBatch: micro ", micro, " not in [0, ", grad_accum, ")");
  TORCH_CHECK(rank >= 0 && rank < world_size, "MakeBatch: rank ", rank, " not in [0, ", world_size, ")");
  const uint64_t global_batch = static_cast<uint64_t>(batch_per_rank) * static_cast<uint64_t>(world_size);
  const uint64_t micro_index = static_cast<uint64_t>(step - 1) * static_cast<uint64_t>(grad_accum) +
                               static_cast<uint64_t>(micro);
  const uint64_t first = micro_index * global_batch + static_cast<uint64_t>(rank) * batch_per_rank;
  Batch batch;
  switch (model.kind) {
    case ModelKind::kMlp:
      FillMlp(model, seed, first, batch_per_rank, batch);
      break;
    case ModelKind::kTransformer:
      FillTransformer(model, seed, first, batch_per_rank, batch);
      break;
  }
  TORCH_CHECK(batch.inputs.defined(), "MakeBatch: unknown model kind ", static_cast<int>(model.kind));
  if (device != batch.inputs.device()) {
    batch.inputs = batch.inputs.to(device);
    batch.targets = batch.targets.to(device);
  }
  return batch;
}

}  // namespace lockstep
