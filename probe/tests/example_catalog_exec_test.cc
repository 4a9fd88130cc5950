// The example catalog (examples/*.py: plain PyTorch programs, no lockstep import) the way a user
// checks their own program: `lockstep exec --ranks N --out DIR -- python3 examples/X.py`, with the
// probe attached by the interpreter at start, the ranks watched by exec's watchdog, and the
// findings read back from DIR/report.json. Each must be exactly what the program's
// `.expect.json` sidecar names (probe/catalog_expectation.h), in every repeat, and exec's exit
// code must agree (0 clean, 1 a finding). probe_catalog_test runs the probe's own cases under
// the bare launcher; this is the catalog end to end.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "harness/core/testing/build_paths.h"
#include "probe/catalog_expectation.h"
#include "probe/tests/testing/catalog_exec.h"

namespace lockstep::probe {
namespace {

namespace fs = std::filesystem;

const fs::path kExamples = fs::path(LOCKSTEP_SOURCE_DIR) / "examples";

void ExecCatalogEntry(const std::string& name, const std::string& launcher = "", int repeats = 0) {
  probe::ExecCatalogEntry(kExamples, "example_catalog_exec_test", name, launcher, repeats);
}

TEST(ExampleCatalogExec, EveryExampleIsRunHere) {
  Result<std::vector<CatalogExpectation>> catalog = ReadCatalog(kExamples);
  ASSERT_TRUE(catalog.ok()) << catalog.status().ToString();
  std::vector<std::string> names;
  for (const CatalogExpectation& e : catalog.value()) names.push_back(e.program.stem().string());
  // Keep in step with the TESTs below: an example without one would never run.
  const std::vector<std::string> tested = {"accelerate_no_sync", "accelerate_test_script",
                                           "allreduce_peer_never_calls",
                                           "batchnorm_no_broadcast_buffers", "clean_accelerate",
                                           "clean_compiled_ddp", "clean_ddp_adamw", "clean_ddp_batchnorm_join",
                                           "clean_fsdp2", "clean_fsdp2_compile",
                                           "clean_hf_trainer", "clean_hsdp",
                                           "clean_lightning", "clean_manual_allreduce",
                                           "clean_mpi_ddp", "clean_no_forward",
                                           "clean_pipeline_dp", "clean_sparse_embedding",
                                           "clean_tp_dp", "compiled_ddp_weight_edit",
                                           "ddp_long_evaluation", "ddp_tutorial_spawn", "ddp_tutorial_spawn_resume_rank0",
                                           "dist_tuto_processes", "dist_tuto_processes_bad_sample",
                                           "early_stop_one_rank_spawn", "ema_copy_two_ranks", "fabric_clip_on_rank0_only",
                                           "fabric_language_model", "forgot_divide", "fsdp2_branch_per_rank", "fsdp2_meta_init", "group_churn",
                                           "hsdp_replica_seed", "hsdp_skipped_allreduce",
                                           "inplace_weight_edit", "lightning_log_on_rank0_only",
                                           "lightning_manual_loss_backward", "lightning_transformer",
                                           "model_not_wrapped_in_ddp",
                                           "nccl_algo_on_one_rank", "rank0_metric_allreduce",
                                           "rank_killed", "regroup_in_attention",
                                           "scheduler_on_rank0_only", "skip_step_on_local_loss", "split_in_forward_mpi", "teardown_abort", "tp_mesh_only",
                                           "tp_mesh_only_bias_edit", "tp_norm_edit"};
  EXPECT_EQ(names, tested);
}

TEST(ExampleCatalogExec, CleanDdpAdamw) { ExecCatalogEntry("clean_ddp_adamw"); }
TEST(ExampleCatalogExec, CleanManualAllreduce) { ExecCatalogEntry("clean_manual_allreduce"); }
// No module forward: the steps end at backward() and the optimizer step (the last loss was NaN, and
// every loss landed one step late); the program checks its own trace's losses.
TEST(ExampleCatalogExec, CleanNoForward) { ExecCatalogEntry("clean_no_forward"); }
// A sparse gradient was a probe internal error.
TEST(ExampleCatalogExec, CleanSparseEmbedding) { ExecCatalogEntry("clean_sparse_embedding"); }
TEST(ExampleCatalogExec, BatchnormNoBroadcastBuffers) { ExecCatalogEntry("batchnorm_no_broadcast_buffers"); }
TEST(ExampleCatalogExec, CleanDdpBatchnormJoin) { ExecCatalogEntry("clean_ddp_batchnorm_join"); }
TEST(ExampleCatalogExec, ForgotDivide) { ExecCatalogEntry("forgot_divide"); }
TEST(ExampleCatalogExec, InplaceWeightEdit) { ExecCatalogEntry("inplace_weight_edit"); }
TEST(ExampleCatalogExec, EmaCopyTwoRanks) { ExecCatalogEntry("ema_copy_two_ranks"); }
TEST(ExampleCatalogExec, SkipStepOnLocalLoss) { ExecCatalogEntry("skip_step_on_local_loss"); }
TEST(ExampleCatalogExec, ModelNotWrappedInDdp) { ExecCatalogEntry("model_not_wrapped_in_ddp"); }
TEST(ExampleCatalogExec, NcclAlgoOnOneRank) { ExecCatalogEntry("nccl_algo_on_one_rank"); }
TEST(ExampleCatalogExec, Rank0MetricAllreduce) { ExecCatalogEntry("rank0_metric_allreduce"); }
TEST(ExampleCatalogExec, RankKilled) { ExecCatalogEntry("rank_killed"); }
// A rank that dies after its last step and its footer: teardown, not a crash in training.
TEST(ExampleCatalogExec, TeardownAbort) { ExecCatalogEntry("teardown_abort"); }
// A learning rate that differs while the weights still agree (zero gradients): optimizer_settings
// names it at its first step, replica_weights only once a gradient moves the weights.
TEST(ExampleCatalogExec, SchedulerOnRank0Only) { ExecCatalogEntry("scheduler_on_rank0_only"); }
TEST(ExampleCatalogExec, RegroupInAttention) { ExecCatalogEntry("regroup_in_attention"); }
TEST(ExampleCatalogExec, GroupChurn) { ExecCatalogEntry("group_churn"); }
// Sharded and model-parallel programs (DTensor, 4 ranks): each tensor compared within its replica group.
TEST(ExampleCatalogExec, CleanFsdp2) { ExecCatalogEntry("clean_fsdp2"); }
TEST(ExampleCatalogExec, CleanFsdp2Compile) { ExecCatalogEntry("clean_fsdp2_compile"); }
TEST(ExampleCatalogExec, CleanHsdp) { ExecCatalogEntry("clean_hsdp"); }
TEST(ExampleCatalogExec, CleanTpDp) { ExecCatalogEntry("clean_tp_dp"); }
TEST(ExampleCatalogExec, CleanPipelineDp) { ExecCatalogEntry("clean_pipeline_dp"); }
TEST(ExampleCatalogExec, HsdpReplicaSeed) { ExecCatalogEntry("hsdp_replica_seed"); }
TEST(ExampleCatalogExec, HsdpSkippedAllreduce) { ExecCatalogEntry("hsdp_skipped_allreduce"); }
TEST(ExampleCatalogExec, TpNormEdit) { ExecCatalogEntry("tp_norm_edit"); }
// torch's own TP example: init_device_mesh is the program's only entry into torch.distributed.
TEST(ExampleCatalogExec, TpMeshOnly) { ExecCatalogEntry("tp_mesh_only"); }
// pytorch/examples' FSDP2 training on 2 ranks: nothing replicated, and the pass says so.
TEST(ExampleCatalogExec, Fsdp2MetaInit) { ExecCatalogEntry("fsdp2_meta_init"); }
// A branch chosen per rank under FSDP2: no shard has a replica, only gradient presence tells.
TEST(ExampleCatalogExec, Fsdp2BranchPerRank) { ExecCatalogEntry("fsdp2_branch_per_rank"); }
TEST(ExampleCatalogExec, TpMeshOnlyBiasEdit) { ExecCatalogEntry("tp_mesh_only_bias_edit"); }
// A hang is ranks waiting on each other: an evaluation phase longer than --hang-timeout is none,
// and a rank waiting in an all-reduce its idle peer never calls still is one.
TEST(ExampleCatalogExec, DdpLongEvaluation) { ExecCatalogEntry("ddp_long_evaluation"); }
TEST(ExampleCatalogExec, AllreducePeerNeverCalls) { ExecCatalogEntry("allreduce_peer_never_calls"); }
// Programs that start their own ranks (mp.spawn), given as one process (--ranks 1): each spawning
// is judged as a world of its own, none overwriting another, a finding named by its spawning.
// PyTorch's DDP tutorial spawns three times; its faulty variant is caught in its second spawning.
TEST(ExampleCatalogExec, DdpTutorialSpawn) { ExecCatalogEntry("ddp_tutorial_spawn"); }
TEST(ExampleCatalogExec, DdpTutorialSpawnResumeRank0) { ExecCatalogEntry("ddp_tutorial_spawn_resume_rank0"); }
// A spawned world that hangs: the watchdog follows it (the launched process records nothing while
// it waits for its ranks) and judges the hang there after --hang-timeout, naming the spawning.
TEST(ExampleCatalogExec, EarlyStopOneRankSpawn) { ExecCatalogEntry("early_stop_one_rank_spawn"); }
// Ranks started with multiprocessing.Process, one per rank (PyTorch's "Writing Distributed
// Applications" tutorial): each finds its spawning's folder at init_process_group; a rank that dies
// is a crash of that world although the program exits 0.
TEST(ExampleCatalogExec, DistTutoProcesses) { ExecCatalogEntry("dist_tuto_processes"); }
TEST(ExampleCatalogExec, DistTutoProcessesBadSample) { ExecCatalogEntry("dist_tuto_processes_bad_sample"); }
// The same under the fork start method, with a Process subclass whose run() is its own: its
// processes leave by os._exit (no exit handlers) and bypass Process.run; the probe's cases.
TEST(ExampleCatalogExec, SelfStartedForkedProcesses) {
  probe::ExecCatalogEntry(fs::path(LOCKSTEP_SOURCE_DIR) / "probe" / "tests" / "programs", "example_catalog_exec_test",
                          "self_started_fork");
}
TEST(ExampleCatalogExec, SelfStartedForkedProcessThatRaises) {
  probe::ExecCatalogEntry(fs::path(LOCKSTEP_SOURCE_DIR) / "probe" / "tests" / "programs", "example_catalog_exec_test",
                          "self_started_fork_raises");
}
// MPI programs (mpi4py) under mpirun: the PMPI recorder, preloaded by exec, sees their MPI calls.
TEST(ExampleCatalogExec, CleanMpiDdp) { ExecCatalogEntry("clean_mpi_ddp"); }
TEST(ExampleCatalogExec, SplitInForwardMpi) { ExecCatalogEntry("split_in_forward_mpi"); }

// The frameworks, used as their documentation does (ci/requirements.txt pins them).
TEST(ExampleCatalogExec, CleanAccelerate) { ExecCatalogEntry("clean_accelerate"); }
// accelerate's test_sync pattern with a plain Accelerator() under accelerate launch on CPU: the
// ranks must train together (ACCELERATE_USE_CPU), not each alone.
TEST(ExampleCatalogExec, AccelerateNoSync) { ExecCatalogEntry("accelerate_no_sync"); }
// Lightning sees torchrun's environment and runs as the rank it is given (no spawning of its own).
TEST(ExampleCatalogExec, CleanLightning) { ExecCatalogEntry("clean_lightning"); }
TEST(ExampleCatalogExec, LightningLogOnRank0Only) { ExecCatalogEntry("lightning_log_on_rank0_only"); }
// Manual optimization with a plain loss.backward(): DDP's reducer is never prepared, no gradient is synced.
TEST(ExampleCatalogExec, LightningManualLossBackward) { ExecCatalogEntry("lightning_manual_loss_backward"); }
// Public programs re-created (issue 37), each with the upstream file and commit in its header.
// accelerate's own test_script (`accelerate test`): six trainings, each a fresh prepare() after a
// model trained alone on every rank, beside gather/broadcast/pad/split and the RNG sync.
TEST(ExampleCatalogExec, AccelerateTestScript) { ExecCatalogEntry("accelerate_test_script"); }
// Lightning's Trainer transformer example: validation between epochs, trainer.test after fit.
TEST(ExampleCatalogExec, LightningTransformer) { ExecCatalogEntry("lightning_transformer"); }
// Fabric's language-model example: once a false hang (validation has no collective).
TEST(ExampleCatalogExec, FabricLanguageModel) { ExecCatalogEntry("fabric_language_model"); }
// The same with clip_gradients on rank 0 only: 2 ranks, no majority, so rank 1 is never named alone.
TEST(ExampleCatalogExec, FabricClipOnRank0Only) { ExecCatalogEntry("fabric_clip_on_rank0_only"); }
TEST(ExampleCatalogExec, CleanHfTrainer) { ExecCatalogEntry("clean_hf_trainer"); }
TEST(ExampleCatalogExec, CleanCompiledDdp) { ExecCatalogEntry("clean_compiled_ddp"); }
TEST(ExampleCatalogExec, CompiledDdpWeightEdit) { ExecCatalogEntry("compiled_ddp_weight_edit"); }

// The launchers people type (`--launcher torchrun`, `--launcher accelerate`): the same programs
// and expectations, the ranks started by torchrun or accelerate launch instead of lockstep.
TEST(ExampleCatalogExec, CleanDdpAdamwUnderTorchrun) { ExecCatalogEntry("clean_ddp_adamw", "torchrun", 1); }
TEST(ExampleCatalogExec, InplaceWeightEditUnderTorchrun) { ExecCatalogEntry("inplace_weight_edit", "torchrun"); }
// torchrun stops the other ranks itself; the crash is rank 1's, read from torchrun's summary.
TEST(ExampleCatalogExec, RankKilledUnderTorchrun) { ExecCatalogEntry("rank_killed", "torchrun"); }
TEST(ExampleCatalogExec, TeardownAbortUnderTorchrun) { ExecCatalogEntry("teardown_abort", "torchrun", 1); }
TEST(ExampleCatalogExec, CleanLightningUnderTorchrun) { ExecCatalogEntry("clean_lightning", "torchrun", 1); }
TEST(ExampleCatalogExec, CleanAccelerateUnderAccelerateLaunch) {
  ExecCatalogEntry("clean_accelerate", "accelerate", 1);
}

}  // namespace
}  // namespace lockstep::probe
