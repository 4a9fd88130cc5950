// lockstep-synthetic-run: writes the traces of a synthetic training run (R ranks x S steps x T
// tensors, default the nightly job: 64 x 1000 x 300) through lockstep's own TraceWriter,
// so they are in the current trace format, into a folder `lockstep check` reads. What analysis at
// scale costs is measured on it (bench/check_scale.sh, docs/PERFORMANCE.md#analysis-at-scale).
//
//   lockstep-synthetic-run --out DIR [--ranks 64] [--steps 1000] [--tensors 300]
//                          [--diverge-rank R --diverge-step S] [--jobs N]
//
// A transformer's tensors (as many blocks as T needs, cut at T): parameters, their synced
// gradients and AdamW's exp_avg / exp_avg_sq, all replicated, with digests equal on every rank
// (a clean data-parallel run). Per step: three gradient all-reduce buckets (begin and end), a
// heartbeat, the step record; step 0 after a broadcast; a footer. --diverge-rank/--diverge-step:
// from that step on, that rank's parameters (and so what follows from them) carry other digests
// and norms, so `lockstep check` has a finding to make (replica_weights and co. at that step).
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "harness/trace/trace_record.h"
#include "harness/trace/trace_writer.h"

namespace lockstep {
namespace {

struct Options {
  std::string out;
  int ranks = 64;
  int64_t steps = 1000;
  int tensors = 300;
  int diverge_rank = -1;
  int64_t diverge_step = -1;
  int jobs = 0;  // 0: the machine's cores
};

struct Spec {
  std::string name;
  TensorKind kind;
  int64_t numel;
};

// The model's tensors in recording order: params, grads, then optimizer state, as lockstep-rank
// records a step.
std::vector<Spec> ModelTensors(int count) {
  const char* block_params[][2] = {{"ln1.weight", "512"},         {"ln1.bias", "512"},
                                   {"attn.qkv.weight", "786432"}, {"attn.qkv.bias", "1536"},
                                   {"attn.proj.weight", "262144"}, {"attn.proj.bias", "512"},
                                   {"ln2.weight", "512"},         {"ln2.bias", "512"},
                                   {"mlp.fc1.weight", "1048576"}, {"mlp.fc1.bias", "2048"},
                                   {"mlp.fc2.weight", "1048576"}, {"mlp.fc2.bias", "512"}};
  std::vector<std::pair<std::string, int64_t>> params = {{"embed.weight", 16384000}, {"pos_embed", 524288}};
  for (int layer = 0; static_cast<int>(params.size()) * 4 < count + 8; ++layer) {
    for (const auto& p : block_params) {
      params.emplace_back("blocks." + std::to_string(layer) + "." + p[0], std::atoll(p[1]));
    }
  }
  params.emplace_back("ln_f.weight", 512);
  params.emplace_back("head.weight", 16384000);
  std::vector<Spec> out;
  for (const auto& [name, numel] : params) out.push_back({name, TensorKind::kParam, numel});
  for (const auto& [name, numel] : params) out.push_back({name, TensorKind::kGrad, numel});
  for (const auto& [name, numel] : params) out.push_back({name + "#exp_avg", TensorKind::kOptimizerState, numel});
  for (const auto& [name, numel] : params) out.push_back({name + "#exp_avg_sq", TensorKind::kOptimizerState, numel});
  out.resize(static_cast<size_t>(count));
  return out;
}

uint64_t Mix(uint64_t x) {  // splitmix64: a digest that stands for a value
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

int WriteRank(const Options& o, int rank, const std::vector<Spec>& model) {
  TraceHeader header;
  header.rank = rank;
  header.world_size = o.ranks;
  header.local_rank = rank % 8;
  header.slice = 0;
  header.host = "node" + std::to_string(rank / 8);
  header.pid = 10000 + rank;
  header.device = "cuda:" + std::to_string(rank % 8);
  header.backend = "nccl";
  header.scenario_id = "synthetic_scale";
  auto opened = TraceWriter::Open(std::filesystem::path(o.out) / TraceFileName(rank), header);
  if (!opened.ok()) {
    std::cerr << "lockstep-synthetic-run: " << opened.status().ToString() << "\n";
    return 1;
  }
  TraceWriter& w = **opened;
  auto check = [](const Status& s) {
    if (!s.ok()) {
      std::cerr << "lockstep-synthetic-run: " << s.ToString() << "\n";
      std::exit(1);
    }
  };
  check(w.WriteDiscovery(DiscoveryRecord{1, "startup", 0, kTopologyDiscovery, "", ""}));
  uint64_t seq = 0;
  double t = 0.5;
  std::vector<uint64_t> name_hash;
  for (const Spec& s : model) name_hash.push_back(std::hash<std::string>{}(s.name) ^ static_cast<uint64_t>(s.kind));
  StepRecord step;
  for (int64_t k = 0; k <= o.steps; ++k) {
    const int buckets = k == 0 ? 1 : 3;
    for (int b = 0; b < buckets; ++b) {
      CollectiveRecord c;
      c.group = "world";
      c.seq = seq++;
      c.op = k == 0 ? "broadcast" : "all_reduce";
      c.dtype = "float32";
      c.count = 8388608;
      c.root = k == 0 ? 0 : -1;
      c.reduce = k == 0 ? "" : "avg";
      c.step = k;
      c.start_s = t;
      check(w.WriteCollectiveBegin(c));
      t += 0.004;
      check(w.WriteCollectiveEnd(c.group, c.seq, t));
    }
    const bool odd = rank == o.diverge_rank && o.diverge_step >= 0 && k >= o.diverge_step;
    step.step = k;
    step.loss = k == 0 ? NAN : 2.0 + 8.0 / (1.0 + 0.01 * static_cast<double>(k)) + (odd ? 1e-3 : 0.0);
    step.grad_norm = k == 0 ? NAN : 1.0 / std::sqrt(1.0 + static_cast<double>(k));
    step.lr = 3e-4;
    step.wall_s = t;
    step.tensors.resize(model.size());
    for (size_t i = 0; i < model.size(); ++i) {
      TensorRecord& r = step.tensors[i];
      r.name = model[i].name;
      r.kind = model[i].kind;
      r.numel = model[i].numel;
      r.dtype = "float32";
      r.replicated = true;
      if (k == 0 && r.kind != TensorKind::kParam) {
        r.norm = 0.0;  // no gradient or optimizer state yet; still recorded, as zeros
      } else {
        r.norm = 1.0 + 0.001 * static_cast<double>(i) + 1e-4 * static_cast<double>(k);
      }
      // Parameters of the odd rank differ from its onset; gradients and state a step later.
      const bool differs = odd && (r.kind == TensorKind::kParam || k > o.diverge_step);
      const uint64_t salt = differs ? 0x5eedULL + static_cast<uint64_t>(rank) : 0;
      r.digest.high = Mix(name_hash[i] ^ (static_cast<uint64_t>(k) << 20) ^ salt);
      r.digest.low = Mix(r.digest.high ^ salt);
      if (differs) r.norm *= 1.0 + 1e-3;
    }
    check(w.WriteHeartbeat(k, t));
    check(w.WriteStep(step));
    t += 0.25;
  }
  check(w.WriteFooter(TraceFooter{o.steps, "ok"}));
  return 0;
}

int Main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << "lockstep-synthetic-run: " << a << " needs a value\n";
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--out") o.out = value();
    else if (a == "--ranks") o.ranks = std::atoi(value().c_str());
    else if (a == "--steps") o.steps = std::atoll(value().c_str());
    else if (a == "--tensors") o.tensors = std::atoi(value().c_str());
    else if (a == "--diverge-rank") o.diverge_rank = std::atoi(value().c_str());
    else if (a == "--diverge-step") o.diverge_step = std::atoll(value().c_str());
    else if (a == "--jobs") o.jobs = std::atoi(value().c_str());
    else if (a == "-h" || a == "--help") {
      std::cout << "usage: lockstep-synthetic-run --out DIR [--ranks 64] [--steps 1000] [--tensors 300] "
                   "[--diverge-rank R --diverge-step S] [--jobs N]\n";
      return 0;
    } else {
      std::cerr << "lockstep-synthetic-run: unknown argument " << a << "\n";
      return 2;
    }
  }
  if (o.out.empty() || o.ranks < 1 || o.steps < 0 || o.tensors < 1 || o.diverge_rank >= o.ranks ||
      (o.diverge_rank >= 0) != (o.diverge_step >= 0)) {
    std::cerr << "lockstep-synthetic-run: need --out, ranks >= 1, steps >= 0, tensors >= 1, and --diverge-rank "
                 "(below --ranks) with --diverge-step\n";
    return 2;
  }
  const std::vector<Spec> model = ModelTensors(o.tensors);
  const int jobs = o.jobs > 0 ? o.jobs : std::max(1u, std::thread::hardware_concurrency());
  std::vector<int> failed(static_cast<size_t>(o.ranks), 0);
  std::vector<std::thread> workers;
  for (int j = 0; j < jobs; ++j) {
    workers.emplace_back([&, j] {
      for (int r = j; r < o.ranks; r += jobs) failed[static_cast<size_t>(r)] = WriteRank(o, r, model);
    });
  }
  for (auto& w : workers) w.join();
  for (int f : failed) {
    if (f) return 1;
  }
  return 0;
}

}  // namespace
}  // namespace lockstep

int main(int argc, char** argv) { return lockstep::Main(argc, argv); }
