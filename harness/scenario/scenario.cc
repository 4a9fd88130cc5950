#include "harness/scenario/scenario.h"

namespace lockstep {

const char* ToString(Backend v) {
  switch (v) {
    case Backend::kMpi: return "mpi";
    case Backend::kGloo: return "gloo";
    case Backend::kNccl: return "nccl";
  }
  return "unknown";
}

const char* ToString(ModelKind v) {
  switch (v) {
    case ModelKind::kMlp: return "mlp";
    case ModelKind::kTransformer: return "transformer";
  }
  return "unknown";
}

const char* ToString(AttentionKind v) {
  switch (v) {
    case AttentionKind::kNaive: return "naive";
    case AttentionKind::kFlash: return "flash";
    case AttentionKind::kSdpa: return "sdpa";
  }
  return "unknown";
}

const char* ToString(NormKind v) {
  switch (v) {
    case NormKind::kNone: return "none";
    case NormKind::kLayerNorm: return "layernorm";
    case NormKind::kBatchNorm: return "batchnorm";
  }
  return "unknown";
}

const char* ToString(ParallelMode v) {
  switch (v) {
    case ParallelMode::kDdp: return "ddp";
    case ParallelMode::kZero1: return "zero1";
  }
  return "unknown";
}

const char* ToString(OptimizerKind v) {
  switch (v) {
    case OptimizerKind::kSgd: return "sgd";
    case OptimizerKind::kAdamW: return "adamw";
  }
  return "unknown";
}

std::vector<std::string> DefaultChecks(const Scenario& scenario) {
  std::vector<std::string> checks = {"replica_weights", "synced_grads",    "optimizer_state",
                                     "buffers",         "collective_order", "discovery_count",
                                     "finite",          "hang",             "crash"};
  // The 1-rank reference only means something when the N-rank run must reproduce it: dropout
  // masks and per-rank BatchNorm statistics depend on the split, and an injection changes the
  // run on purpose.
  const bool comparable = scenario.ranks > 1 && scenario.model.dropout == 0.0 &&
                          scenario.model.norm != NormKind::kBatchNorm && scenario.inject.empty();
  if (comparable) checks.push_back("reference");
  return checks;
}

}  // namespace lockstep
