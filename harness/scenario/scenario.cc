#include "harness/scenario/scenario.h"

namespace lockstep {

// The order is the one error messages list the choices in.
template <>
const NameTable<Backend>& NamesOf<Backend>() {
  static const NameTable<Backend> kTable = {{"mpi", Backend::kMpi}, {"gloo", Backend::kGloo}, {"nccl", Backend::kNccl}};
  return kTable;
}
template <>
const NameTable<Device>& NamesOf<Device>() {
  static const NameTable<Device> kTable = {{"cpu", Device::kCpu}, {"cuda", Device::kCuda}};
  return kTable;
}
template <>
const NameTable<ModelKind>& NamesOf<ModelKind>() {
  static const NameTable<ModelKind> kTable = {{"mlp", ModelKind::kMlp}, {"transformer", ModelKind::kTransformer}};
  return kTable;
}
template <>
const NameTable<AttentionKind>& NamesOf<AttentionKind>() {
  static const NameTable<AttentionKind> kTable = {
      {"naive", AttentionKind::kNaive}, {"flash", AttentionKind::kFlash}, {"sdpa", AttentionKind::kSdpa}};
  return kTable;
}
template <>
const NameTable<NormKind>& NamesOf<NormKind>() {
  static const NameTable<NormKind> kTable = {
      {"layernorm", NormKind::kLayerNorm}, {"batchnorm", NormKind::kBatchNorm}, {"none", NormKind::kNone}};
  return kTable;
}
template <>
const NameTable<ParallelMode>& NamesOf<ParallelMode>() {
  static const NameTable<ParallelMode> kTable = {{"ddp", ParallelMode::kDdp}, {"zero1", ParallelMode::kZero1}};
  return kTable;
}
template <>
const NameTable<OptimizerKind>& NamesOf<OptimizerKind>() {
  static const NameTable<OptimizerKind> kTable = {{"sgd", OptimizerKind::kSgd}, {"adamw", OptimizerKind::kAdamW}};
  return kTable;
}

const char* ToString(Backend v) { return NameOf(v); }
const char* ToString(Device v) { return NameOf(v); }
const char* ToString(ModelKind v) { return NameOf(v); }
const char* ToString(AttentionKind v) { return NameOf(v); }
const char* ToString(NormKind v) { return NameOf(v); }
const char* ToString(ParallelMode v) { return NameOf(v); }
const char* ToString(OptimizerKind v) { return NameOf(v); }

Device EffectiveDevice(const Scenario& s) { return s.backend == Backend::kNccl ? Device::kCuda : s.device; }

}  // namespace lockstep
