// The corpus of real distributed-training bugs (examples/real_bugs/, docs/DETECTION.md): each bug
// program and its clean control (`*_fixed.py`) through `lockstep exec`, pinned to what lockstep
// reports TODAY by its `.expect.json` (a bug lockstep misses today pins no finding and says
// "today": "missed"). A change in detection, better or worse, fails here until the sidecar and the
// scoreboard of docs/DETECTION.md are updated with it.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "harness/core/testing/build_paths.h"
#include "probe/catalog_expectation.h"
#include "probe/tests/testing/catalog_exec.h"

namespace lockstep::probe {
namespace {

namespace fs = std::filesystem;

const fs::path kCorpus = fs::path(LOCKSTEP_SOURCE_DIR) / "examples" / "real_bugs";

// The corpus is in the soak tier (ctest label `soak`, LOCKSTEP_SOAK=1: the nightly job), where
// each program runs its sidecar's 3 times: one pass takes about 15 minutes of 2 cores, more than
// every push's test command can give it (docs/CI.md, docs/DETECTION.md).
void Exec(const std::string& name) {
  ExecCatalogEntry(kCorpus, "real_bug_corpus_test", name);
}

// Programs with a sidecar (for the scoreboard) that are not run here, and why: no verdict to pin
// (a clean control with a false finding would be listed here too, to fix in lockstep, not to pin).
// None today.
const std::vector<std::string> kNotRunHere = {};

TEST(RealBugCorpus, EveryProgramIsRunHere) {
  Result<std::vector<CatalogExpectation>> corpus = ReadCatalog(kCorpus);
  ASSERT_TRUE(corpus.ok()) << corpus.status().ToString();
  std::vector<std::string> names;
  for (const CatalogExpectation& e : corpus.value()) {
    const std::string name = e.program.stem().string();
    if (std::find(kNotRunHere.begin(), kNotRunHere.end(), name) == kNotRunHere.end()) names.push_back(name);
  }
  // Keep in step with the TESTs below: a program without one would never run.
  const std::vector<std::string> tested = {
      "all_to_all_split_mismatch",
      "all_to_all_split_mismatch_fixed",
      "amp_inf_check_unsynced_shards",
      "amp_inf_check_unsynced_shards_fixed",
      "bloom_tp_layernorm_drift",
      "bloom_tp_layernorm_drift_fixed",
      "bn_buffers_not_broadcast",
      "bn_buffers_not_broadcast_fixed",
      "ddp_converted_after_wrap",
      "ddp_converted_after_wrap_fixed",
      "ddp_param_replaced_after_wrap",
      "ddp_param_replaced_after_wrap_fixed",
      "ddp_rank0_eval_through_wrapper",
      "ddp_rank0_eval_through_wrapper_fixed",
      "ddp_unused_module",
      "ddp_unused_module_fixed",
      "early_stop_one_rank",
      "early_stop_one_rank_fixed",
      "ema_copy_rank0",
      "ema_copy_rank0_fixed",
      "fsdp1_hybrid_shard_size1",
      "fsdp1_hybrid_shard_size1_fixed",
      "fsdp_local_clip_grad_norm",
      "fsdp_local_clip_grad_norm_fixed",
      "fsdp_optimizer_before_wrap",
      "fsdp_optimizer_before_wrap_fixed",
      "funasr_no_sync_inverted",
      "funasr_no_sync_inverted_fixed",
      "hashseed_buffer_order",
      "hashseed_buffer_order_fixed",
      "lr_from_local_progress",
      "lr_from_local_progress_fixed",
      "muon_skip_none_grad",
      "muon_skip_none_grad_fixed",
      "nan_loss_skip_one_rank",
      "nan_loss_skip_one_rank_fixed",
      "nanogpt_sync_flag_after_forward",
      "nanogpt_sync_flag_after_forward_fixed",
      "new_group_own_ranks_only",
      "new_group_own_ranks_only_fixed",
      "no_initial_broadcast",
      "no_initial_broadcast_fixed",
      "plateau_lr_local_loss",
      "plateau_lr_local_loss_fixed",
      "resume_optimizer_rank0",
      "resume_optimizer_rank0_fixed",
      "sp_layernorm_grads_not_reduced",
      "sp_layernorm_grads_not_reduced_fixed",
      "stop_flag_barrier",
      "stop_flag_barrier_fixed",
      "tp_dropout_rng_rank0",
      "tp_dropout_rng_rank0_fixed",
      "uneven_inputs_hang",
      "uneven_inputs_hang_fixed",
      "zero_consolidate_rank0_only",
      "zero_consolidate_rank0_only_fixed"};
  EXPECT_EQ(names, tested);
}

// Every program of the directory has its sidecar: one without is in no scoreboard.
TEST(RealBugCorpus, EveryProgramHasASidecar) {
  for (const auto& entry : fs::directory_iterator(kCorpus)) {
    if (entry.path().extension() != ".py") continue;
    const fs::path sidecar = kCorpus / (entry.path().stem().string() + ".expect.json");
    EXPECT_TRUE(fs::exists(sidecar)) << "no " << sidecar;
  }
}

// At least 25 bugs, each with its control, each naming its public source.
TEST(RealBugCorpus, BugsHaveControlsAndSources) {
  Result<std::vector<CatalogExpectation>> corpus = ReadCatalog(kCorpus);
  ASSERT_TRUE(corpus.ok()) << corpus.status().ToString();
  int bugs = 0;
  for (const CatalogExpectation& e : corpus.value()) {
    const std::string name = e.program.stem().string();
    if (name.size() > 6 && name.compare(name.size() - 6, 6, "_fixed") == 0) {
      EXPECT_TRUE(e.findings.empty()) << name << ": a clean control pins no finding";
      continue;
    }
    ++bugs;
    EXPECT_FALSE(e.source.empty()) << name;
    EXPECT_FALSE(e.bug_class.empty()) << name;
    EXPECT_FALSE(e.today.empty()) << name;
    EXPECT_FALSE(e.best.empty()) << name;
    EXPECT_TRUE(e.onset.has_value()) << name;
    EXPECT_TRUE(fs::exists(kCorpus / (name + "_fixed.py"))) << name << " has no clean control";
  }
  EXPECT_GE(bugs, 25);
}

TEST(RealBugCorpus, AllToAllSplitMismatch) { Exec("all_to_all_split_mismatch"); }
TEST(RealBugCorpus, AllToAllSplitMismatchFixed) { Exec("all_to_all_split_mismatch_fixed"); }
TEST(RealBugCorpus, AmpInfCheckUnsyncedShards) { Exec("amp_inf_check_unsynced_shards"); }
TEST(RealBugCorpus, BloomTpLayernormDrift) { Exec("bloom_tp_layernorm_drift"); }
TEST(RealBugCorpus, AmpInfCheckUnsyncedShardsFixed) { Exec("amp_inf_check_unsynced_shards_fixed"); }
TEST(RealBugCorpus, BloomTpLayernormDriftFixed) { Exec("bloom_tp_layernorm_drift_fixed"); }
TEST(RealBugCorpus, BnBuffersNotBroadcast) { Exec("bn_buffers_not_broadcast"); }
TEST(RealBugCorpus, BnBuffersNotBroadcastFixed) { Exec("bn_buffers_not_broadcast_fixed"); }
TEST(RealBugCorpus, DdpConvertedAfterWrap) { Exec("ddp_converted_after_wrap"); }
TEST(RealBugCorpus, DdpConvertedAfterWrapFixed) { Exec("ddp_converted_after_wrap_fixed"); }
TEST(RealBugCorpus, DdpRank0EvalThroughWrapper) { Exec("ddp_rank0_eval_through_wrapper"); }
TEST(RealBugCorpus, DdpRank0EvalThroughWrapperFixed) { Exec("ddp_rank0_eval_through_wrapper_fixed"); }
TEST(RealBugCorpus, DdpParamReplacedAfterWrap) { Exec("ddp_param_replaced_after_wrap"); }
TEST(RealBugCorpus, DdpParamReplacedAfterWrapFixed) { Exec("ddp_param_replaced_after_wrap_fixed"); }
TEST(RealBugCorpus, DdpUnusedModule) { Exec("ddp_unused_module"); }
TEST(RealBugCorpus, DdpUnusedModuleFixed) { Exec("ddp_unused_module_fixed"); }
TEST(RealBugCorpus, EarlyStopOneRank) { Exec("early_stop_one_rank"); }
TEST(RealBugCorpus, EarlyStopOneRankFixed) { Exec("early_stop_one_rank_fixed"); }
TEST(RealBugCorpus, EmaCopyRank0) { Exec("ema_copy_rank0"); }
TEST(RealBugCorpus, EmaCopyRank0Fixed) { Exec("ema_copy_rank0_fixed"); }
TEST(RealBugCorpus, Fsdp1HybridShardSize1) { Exec("fsdp1_hybrid_shard_size1"); }
TEST(RealBugCorpus, Fsdp1HybridShardSize1Fixed) { Exec("fsdp1_hybrid_shard_size1_fixed"); }
TEST(RealBugCorpus, FsdpLocalClipGradNorm) { Exec("fsdp_local_clip_grad_norm"); }
TEST(RealBugCorpus, FsdpLocalClipGradNormFixed) { Exec("fsdp_local_clip_grad_norm_fixed"); }
TEST(RealBugCorpus, FsdpOptimizerBeforeWrap) { Exec("fsdp_optimizer_before_wrap"); }
TEST(RealBugCorpus, FsdpOptimizerBeforeWrapFixed) { Exec("fsdp_optimizer_before_wrap_fixed"); }
TEST(RealBugCorpus, FunasrNoSyncInverted) { Exec("funasr_no_sync_inverted"); }
TEST(RealBugCorpus, FunasrNoSyncInvertedFixed) { Exec("funasr_no_sync_inverted_fixed"); }
TEST(RealBugCorpus, HashseedBufferOrder) { Exec("hashseed_buffer_order"); }
TEST(RealBugCorpus, HashseedBufferOrderFixed) { Exec("hashseed_buffer_order_fixed"); }
TEST(RealBugCorpus, LrFromLocalProgress) { Exec("lr_from_local_progress"); }
TEST(RealBugCorpus, LrFromLocalProgressFixed) { Exec("lr_from_local_progress_fixed"); }
TEST(RealBugCorpus, MuonSkipNoneGrad) { Exec("muon_skip_none_grad"); }
TEST(RealBugCorpus, MuonSkipNoneGradFixed) { Exec("muon_skip_none_grad_fixed"); }
TEST(RealBugCorpus, NanLossSkipOneRank) { Exec("nan_loss_skip_one_rank"); }
TEST(RealBugCorpus, NanLossSkipOneRankFixed) { Exec("nan_loss_skip_one_rank_fixed"); }
TEST(RealBugCorpus, NanogptSyncFlagAfterForward) { Exec("nanogpt_sync_flag_after_forward"); }
TEST(RealBugCorpus, NanogptSyncFlagAfterForwardFixed) { Exec("nanogpt_sync_flag_after_forward_fixed"); }
TEST(RealBugCorpus, NewGroupOwnRanksOnly) { Exec("new_group_own_ranks_only"); }
TEST(RealBugCorpus, NewGroupOwnRanksOnlyFixed) { Exec("new_group_own_ranks_only_fixed"); }
TEST(RealBugCorpus, NoInitialBroadcast) { Exec("no_initial_broadcast"); }
TEST(RealBugCorpus, NoInitialBroadcastFixed) { Exec("no_initial_broadcast_fixed"); }
TEST(RealBugCorpus, PlateauLrLocalLoss) { Exec("plateau_lr_local_loss"); }
TEST(RealBugCorpus, PlateauLrLocalLossFixed) { Exec("plateau_lr_local_loss_fixed"); }
TEST(RealBugCorpus, ResumeOptimizerRank0) { Exec("resume_optimizer_rank0"); }
TEST(RealBugCorpus, ResumeOptimizerRank0Fixed) { Exec("resume_optimizer_rank0_fixed"); }
TEST(RealBugCorpus, SpLayernormGradsNotReduced) { Exec("sp_layernorm_grads_not_reduced"); }
TEST(RealBugCorpus, SpLayernormGradsNotReducedFixed) { Exec("sp_layernorm_grads_not_reduced_fixed"); }
TEST(RealBugCorpus, StopFlagBarrier) { Exec("stop_flag_barrier"); }
TEST(RealBugCorpus, StopFlagBarrierFixed) { Exec("stop_flag_barrier_fixed"); }
TEST(RealBugCorpus, TpDropoutRngRank0) { Exec("tp_dropout_rng_rank0"); }
TEST(RealBugCorpus, TpDropoutRngRank0Fixed) { Exec("tp_dropout_rng_rank0_fixed"); }
TEST(RealBugCorpus, UnevenInputsHang) { Exec("uneven_inputs_hang"); }
TEST(RealBugCorpus, UnevenInputsHangFixed) { Exec("uneven_inputs_hang_fixed"); }
TEST(RealBugCorpus, ZeroConsolidateRank0Only) { Exec("zero_consolidate_rank0_only"); }
TEST(RealBugCorpus, ZeroConsolidateRank0OnlyFixed) { Exec("zero_consolidate_rank0_only_fixed"); }

}  // namespace
}  // namespace lockstep::probe
