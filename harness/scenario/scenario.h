// A scenario: one training run on the reference trainer plus what to check about it.
// Loaded and validated from YAML by scenario_loader; the keys and defaults are documented in
// docs/SCENARIOS.md. Plain data: no YAML or LibTorch types leak out of here.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "harness/core/name_table.h"
#include "harness/scenario/source_location.h"

namespace lockstep {

enum class Backend { kMpi, kGloo, kNccl };
// Where the trainer's tensors live. nccl always runs on cuda (EffectiveDevice).
enum class Device { kCpu, kCuda };
enum class ModelKind { kMlp, kTransformer };
enum class AttentionKind { kNaive, kFlash, kSdpa };
enum class NormKind { kNone, kLayerNorm, kBatchNorm };
enum class ParallelMode { kDdp, kZero1 };
enum class OptimizerKind { kSgd, kAdamW };

// Each enum's names: one table (harness/core/name_table.h), read both ways (ToString,
// FromString<E>), also by the loader, the CLI's flags and lockstep-rank. Adding a value means
// adding its row in scenario.cc and nowhere else.
template <> const NameTable<Backend>& NamesOf<Backend>();
template <> const NameTable<Device>& NamesOf<Device>();
template <> const NameTable<ModelKind>& NamesOf<ModelKind>();
template <> const NameTable<AttentionKind>& NamesOf<AttentionKind>();
template <> const NameTable<NormKind>& NamesOf<NormKind>();
template <> const NameTable<ParallelMode>& NamesOf<ParallelMode>();
template <> const NameTable<OptimizerKind>& NamesOf<OptimizerKind>();

const char* ToString(Backend v);
const char* ToString(Device v);
const char* ToString(ModelKind v);
const char* ToString(AttentionKind v);
const char* ToString(NormKind v);
const char* ToString(ParallelMode v);
const char* ToString(OptimizerKind v);

struct ModelSpec {
  ModelKind kind = ModelKind::kMlp;
  int layers = 2;
  int hidden = 64;
  int heads = 4;            // transformer only; must divide hidden
  int seq_len = 32;         // transformer only
  int vocab = 128;          // transformer only
  int input_dim = 32;       // mlp only: features per sample
  int output_dim = 8;       // mlp only: regression targets per sample
  AttentionKind attention = AttentionKind::kNaive;
  NormKind norm = NormKind::kLayerNorm;
  double dropout = 0.0;
};

struct DataSpec {
  int batch_per_rank = 4;
};

struct ParallelSpec {
  ParallelMode mode = ParallelMode::kDdp;
  double bucket_mb = 1.0;
  int grad_accum = 1;  // micro-steps per optimizer step
};

struct OptimizerSpec {
  OptimizerKind kind = OptimizerKind::kSgd;
  double lr = 0.01;
  double momentum = 0.9;       // sgd
  double beta1 = 0.9;          // adamw
  double beta2 = 0.999;        // adamw
  double eps = 1e-8;           // adamw
  double weight_decay = 0.0;
  double clip_grad_norm = 0.0;  // 0: no clipping
  int warmup_steps = 0;         // linear warm-up of lr over this many steps
};

// One injected fault (docs/SCENARIOS.md lists the kinds and the public bugs they model).
struct Injection {
  std::string kind;
  std::vector<int> ranks;       // `rank: 1` or `ranks: [1, 2]`
  int64_t step = 1;             // onset: the first optimizer step it acts in
  std::string tensor;           // optional glob on tensor names ("" = any/default)
  std::map<std::string, std::string> params;  // kind-specific, as written
  SourceLocation location;
};

// A finding an injection must produce.
struct ExpectedFinding {
  std::string checker;
  std::optional<int64_t> step;
  std::vector<int> ranks;       // empty: any
  std::string tensor;           // "" : any
  SourceLocation location;
};

struct Tolerances {
  double reference_rtol = 1e-5;   // N-rank loss vs the 1-rank run
  double reference_atol = 1e-6;
  double golden_rtol = 0.0;       // 0: exact
};

struct Scenario {
  std::string name;             // id
  std::string description;
  int ranks = 2;
  int slices = 1;
  Backend backend = Backend::kMpi;
  Device device = Device::kCpu;  // see EffectiveDevice
  int64_t steps = 10;
  uint64_t seed = 1234;
  double timeout_s = 300;       // whole scenario
  double hang_timeout_s = 30;   // no progress while the ranks wait on each other: a hang (after start-up)
  // No progress while some rank still computes outside any collective (an evaluation, a
  // checkpoint): a hang only after this long. c10d's own default collective timeout.
  double quiet_timeout_s = 1800;
  double startup_timeout_s = 300;  // until every rank has recorded step 0 (communicators, init)
  ModelSpec model;
  DataSpec data;
  ParallelSpec parallel;
  OptimizerSpec optimizer;
  std::vector<std::string> checks;   // resolved: LoadOptions::default_checks when absent
  bool checks_defaulted = true;      // `checks:` was absent
  std::vector<Injection> inject;
  std::vector<ExpectedFinding> expect_fail;
  // `expect.discovery`: discovery calls (harness/discovery/discovery_calls.h) this scenario may
  // make at any time, and how many times per process in all. A call not named here may run only
  // at start-up, and a once-per-process call only once (docs/CHECKERS.md#discovery_count).
  std::map<std::string, int> discovery_allowed;
  Tolerances tolerances;
  SourceLocation location;      // the file, line 1
  // A resolved scenario's (scenario_writer.h) `resolved_from`: the user's file it was resolved
  // from; "" for a scenario read from the user's own file.
  std::string resolved_from;
};

// The device a scenario's ranks train on: `device`, except that nccl moves only CUDA tensors, so a
// nccl scenario runs on cuda whatever `device` says (mpi and gloo stage CUDA tensors through host
// memory, harness/comm/host_staging_communicator.h).
Device EffectiveDevice(const Scenario& s);

}  // namespace lockstep
