#include "harness/rank/step_recorder.h"

#include <gtest/gtest.h>
#include <torch/cuda.h>
#include <torch/torch.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "harness/capture/simulated_capture_device.h"
#include "harness/capture/tensor_digest.h"
#include "harness/comm/host_staging_communicator.h"
#include "harness/comm/thread_communicator.h"
#include "harness/capture/testing/tensor_record_oracle.h"
#include "harness/core/testing/build_paths.h"
#include "harness/core/testing/temp_dir.h"
#include "harness/scenario/scenario_loader.h"
#include "harness/trace/testing/norm_test_values.h"
#include "harness/trace/trace_reader.h"
#include "harness/trace/trace_writer.h"
#include "harness/trainer/testing/thread_training.h"

namespace lockstep {
namespace {

using ::lockstep::testing::Bits;  // harness/trace/testing/norm_test_values.h

std::vector<std::filesystem::path> CleanScenarios() {
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(std::filesystem::path(LOCKSTEP_SOURCE_DIR) / "scenarios" / "clean")) {
    if (e.path().extension() == ".yaml") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// Rank 0's trace in `dir`, with the current schema's header; null (and a test failure) when it
// cannot be opened.
std::unique_ptr<TraceWriter> OpenRankTrace(const testing::TempDir& dir) {
  TraceHeader header;
  header.schema = CurrentTraceSchema();
  Result<std::unique_ptr<TraceWriter>> writer = TraceWriter::Open(dir / "rank-0.trace", header);
  EXPECT_TRUE(writer.ok()) << writer.status().ToString();
  return writer.ok() ? std::move(writer).value() : nullptr;
}

// One rank's recorder and the record it keeps from step to step, as run_rank.cc keeps them.
struct RankCapture {
  StepRecorder recorder{nullptr};  // Capture never writes
  StepRecord record;
  int64_t steps = 0;
  int64_t tensors = 0;
};

// The one-pass capture (StepRecorder::Capture, MultiTensorDigest) against the per-tensor path
// (MakeTensorRecord of each tensor, what Capture did before issue 38), on every step of every rank
// of a real run of every clean suite scenario: the same records, digests and norms bit for bit.
TEST(StepRecorderTest, CaptureEqualsThePerTensorPathOnEveryStepOfEveryCleanScenario) {
  const std::vector<std::filesystem::path> files = CleanScenarios();
  ASSERT_GE(files.size(), 8u) << "scenarios/clean has fewer scenarios than when this test was written";
  for (const auto& file : files) {
    SCOPED_TRACE(file.filename().string());
    std::vector<Diagnostic> diagnostics;
    Result<Scenario> scenario = LoadScenarioFile(file, LoadOptions{}, &diagnostics);
    ASSERT_TRUE(scenario.ok()) << scenario.status().ToString();
    ASSERT_EQ(scenario->device, Device::kCpu);
    std::vector<std::unique_ptr<RankCapture>> ranks;
    for (int r = 0; r < scenario->ranks; ++r) ranks.push_back(std::make_unique<RankCapture>());
    trainer_testing::Train(*scenario, {}, [&](int rank, int64_t step, Trainer& trainer) {
      RankCapture& rc = *ranks[rank];
      StepStats stats;
      stats.loss = 0.5 * static_cast<double>(step);
      ASSERT_TRUE(rc.recorder.Capture(trainer, step, &stats, 1.0, rc.record).ok());
      std::vector<TensorRecord> expected;
      trainer.VisitState([&](const std::string& name, TensorKind kind, const torch::Tensor& t, bool replicated) {
        Result<TensorRecord> r = MakeTensorRecord(name, kind, t, replicated);
        ASSERT_TRUE(r.ok()) << r.status().ToString();
        expected.push_back(std::move(r).value());
      });
      EXPECT_EQ(rc.record.step, step);
      EXPECT_EQ(rc.record.loss, stats.loss);
      ASSERT_EQ(rc.record.tensors.size(), expected.size()) << "rank " << rank << " step " << step;
      for (size_t i = 0; i < expected.size(); ++i) {
        const TensorRecord& got = rc.record.tensors[i];
        const TensorRecord& want = expected[i];
        SCOPED_TRACE("rank " + std::to_string(rank) + " step " + std::to_string(step) + " " + want.name);
        EXPECT_EQ(got.name, want.name);
        EXPECT_EQ(got.kind, want.kind);
        EXPECT_EQ(got.numel, want.numel);
        EXPECT_EQ(got.dtype, want.dtype);
        EXPECT_EQ(got.replicated, want.replicated);
        EXPECT_EQ(got.group, nullptr);
        EXPECT_EQ(got.digest, want.digest);
        EXPECT_EQ(Bits(got.norm), Bits(want.norm)) << got.norm << " vs " << want.norm;
      }
      ++rc.steps;
      rc.tensors += static_cast<int64_t>(expected.size());
    });
    for (int r = 0; r < scenario->ranks; ++r) {
      // Step 0 and every step, on every rank: the comparison ran where it should.
      EXPECT_EQ(ranks[r]->steps, scenario->steps + 1) << "rank " << r;
      EXPECT_GT(ranks[r]->tensors, ranks[r]->steps) << "rank " << r;
    }
  }
}

// A record kept across steps is overwritten whole: a capture of fewer tensors leaves none of the
// last capture's behind, and the step's own fields are the new ones.
TEST(StepRecorderTest, AKeptRecordIsOverwrittenWhole) {
  Scenario scenario = trainer_testing::BaseScenario(ModelKind::kMlp);
  scenario.ranks = 1;
  scenario.steps = 1;
  StepRecorder recorder(nullptr);
  StepRecord record;
  record.loss_reported = false;
  record.tensors.resize(500);
  record.tensors[0].name = "stale";
  record.tensors[0].group = std::make_shared<const ReplicaGroup>();
  size_t at_step0 = 0;
  trainer_testing::Train(scenario, {}, [&](int, int64_t step, Trainer& trainer) {
    ASSERT_TRUE(recorder.Capture(trainer, step, nullptr, 2.0, record).ok());
    if (step == 0) at_step0 = record.tensors.size();
  });
  EXPECT_TRUE(record.loss_reported);
  EXPECT_TRUE(std::isnan(record.loss));
  EXPECT_EQ(record.step, 1);
  ASSERT_GT(at_step0, 0u);
  EXPECT_LT(at_step0, 500u);
  EXPECT_GT(record.tensors.size(), at_step0);  // gradients and optimizer state from step 1 on
  EXPECT_NE(record.tensors[0].name, "stale");
  EXPECT_EQ(record.tensors[0].group, nullptr);
}

// A capture that repeats the last list (the trainer's state epoch kept) records what the per-tensor
// path records, step after step, past the first repeat checked again (kRepeatCheckEvery: 32),
// and lists the state only at step 0 and step 1.
TEST(StepRecorderTest, RepeatedCapturesRecordWhatThePerTensorPathRecords) {
  Scenario scenario = trainer_testing::BaseScenario(ModelKind::kMlp);
  scenario.ranks = 2;
  scenario.steps = 40;
  scenario.optimizer.kind = OptimizerKind::kAdamW;
  scenario.model.norm = NormKind::kBatchNorm;  // an int64 buffer too
  std::vector<std::unique_ptr<RankCapture>> ranks;
  for (int r = 0; r < scenario.ranks; ++r) ranks.push_back(std::make_unique<RankCapture>());
  trainer_testing::Train(scenario, {}, [&](int rank, int64_t step, Trainer& trainer) {
    RankCapture& rc = *ranks[rank];
    Status captured = rc.recorder.Capture(trainer, step, nullptr, 1.0, rc.record);
    ASSERT_TRUE(captured.ok()) << captured.ToString();
    EXPECT_EQ(rc.recorder.repeats(), std::max<int64_t>(0, step - 1)) << "rank " << rank << " step " << step;
    size_t i = 0;
    trainer.VisitState([&](const std::string& name, TensorKind kind, const torch::Tensor& t, bool replicated) {
      Result<TensorRecord> want = MakeTensorRecord(name, kind, t, replicated);
      ASSERT_TRUE(want.ok());
      ASSERT_LT(i, rc.record.tensors.size());
      const TensorRecord& got = rc.record.tensors[i++];
      EXPECT_EQ(got.name, want->name);
      EXPECT_EQ(got.digest, want->digest) << "rank " << rank << " step " << step << " " << name;
      EXPECT_EQ(Bits(got.norm), Bits(want->norm)) << "rank " << rank << " step " << step << " " << name;
    });
    EXPECT_EQ(i, rc.record.tensors.size());
    ++rc.steps;
  });
  for (int r = 0; r < scenario.ranks; ++r) EXPECT_EQ(ranks[r]->steps, scenario.steps + 1);
}

// Replaces the storage of the first parameter after the optimizer step of `step`, with its values:
// a trainer that would break its state epoch's word (nothing of lockstep's does).
class ReplaceParameterStorage : public TrainingHooks {
 public:
  explicit ReplaceParameterStorage(int64_t step) : step_(step) {}
  void OnAfterOptimizerStep(int64_t step, torch::nn::Module& model) override {
    if (step != step_) return;
    torch::NoGradGuard no_grad;
    torch::Tensor p = model.parameters().front();
    p.set_data(p.detach().clone());
  }

 private:
  int64_t step_;
};

// The repeats' check: a tensor given new storage under a kept epoch is found at the next repeat
// checked, even with the same values, as an internal error naming it, and the capture after it
// lists the state anew.
TEST(StepRecorderTest, ARepeatOfAListThatNoLongerDescribesTheStateIsAnInternalError) {
  for (const bool async : {false, true}) {
    SCOPED_TRACE(async ? "asynchronous capture" : "synchronous capture");
    Scenario scenario = trainer_testing::BaseScenario(ModelKind::kMlp);
    scenario.ranks = 1;
    scenario.steps = 4;
    testing::TempDir dir("lockstep_repeat_check_");
    std::unique_ptr<TraceWriter> writer = OpenRankTrace(dir);
    ASSERT_NE(writer, nullptr);
    StepRecorder recorder(writer.get());
    StepRecord record;
    if (async) recorder.UseCaptureDeviceForTesting(std::make_unique<SimulatedCaptureDevice>());
    std::vector<Status> captured;
    std::vector<std::vector<int64_t>> in_flight;  // after each step's capture
    std::string first_param;
    trainer_testing::Train(
        scenario, [](int) { return std::make_unique<ReplaceParameterStorage>(2); },
        [&](int, int64_t step, Trainer& trainer) {
          if (step == 0) trainer.VisitState([&](const std::string& name, TensorKind, const torch::Tensor&, bool) {
            if (first_param.empty()) first_param = name;
          });
          if (!async) {
            captured.push_back(recorder.Capture(trainer, step, nullptr, 1.0, record));
            return;
          }
          captured.push_back(recorder.CaptureAsync(trainer, step, nullptr, 1.0));
          in_flight.push_back(recorder.CapturesInFlight());
          EXPECT_TRUE(recorder.FinishAsync(/*wait=*/true).ok());  // written before the next step
        });
    ASSERT_EQ(captured.size(), 5u);
    for (int64_t step : {0, 1}) EXPECT_TRUE(captured[step].ok()) << step << ": " << captured[step].ToString();
    // Step 2, the first repeat (checked), would read the old storage, which holds the same values.
    EXPECT_FALSE(captured[2].ok());
    EXPECT_EQ(captured[2].code(), StatusCode::kInternal);
    EXPECT_NE(captured[2].message().find("step 2: the trainer's state changed without a new state epoch (" +
                                         first_param + ", position 0)"),
              std::string::npos)
        << captured[2].ToString();
    if (async) {
      EXPECT_EQ(in_flight[2], std::vector<int64_t>{}) << "the device was handed the stale list";
    }
    EXPECT_TRUE(captured[3].ok()) << captured[3].ToString();
    EXPECT_TRUE(captured[4].ok()) << captured[4].ToString();
    EXPECT_EQ(recorder.repeats(), 1);  // step 3 listed the state, step 4 repeated it
  }
}

// The trace at `file` holds `expected`'s step records, in order, field for field (digests and norms
// bit for bit), and names, kinds, dtypes and element counts as the reader gives them from the
// `tensors` records: a layout id kept where it should not be has them wrong.
void ExpectTheTraceHolds(const std::filesystem::path& file, const std::vector<StepRecord>& expected) {
  Result<RankTrace> trace = ReadTrace(file);
  ASSERT_TRUE(trace.ok()) << trace.status().ToString();
  ASSERT_EQ(trace->steps.size(), expected.size());
  for (size_t s = 0; s < expected.size(); ++s) {
    const StepRecord& got = trace->steps[s];
    const StepRecord& want = expected[s];
    SCOPED_TRACE("step " + std::to_string(want.step));
    EXPECT_EQ(got.step, want.step);
    EXPECT_EQ(got.loss, want.loss);
    ASSERT_EQ(got.tensors.size(), want.tensors.size());
    for (size_t i = 0; i < want.tensors.size(); ++i) {
      SCOPED_TRACE(want.tensors[i].name);
      EXPECT_EQ(got.tensors[i].name, want.tensors[i].name);
      EXPECT_EQ(got.tensors[i].kind, want.tensors[i].kind);
      EXPECT_EQ(got.tensors[i].dtype, want.tensors[i].dtype);
      EXPECT_EQ(got.tensors[i].numel, want.tensors[i].numel);
      EXPECT_EQ(got.tensors[i].digest, want.tensors[i].digest);
      EXPECT_EQ(Bits(got.tensors[i].norm), Bits(want.tensors[i].norm));
    }
  }
}

// The asynchronous capture's wiring (CaptureAsync, FinishAsync; the CUDA device's place taken by
// the simulated one, reading host tensors): the trace holds the synchronous capture's records,
// every step once, in step order, digests and norms bit for bit. Batch norm's int64 counter is
// summed by the device too (since 2026-11-29). With a buffer the device cannot read where it lies
// (a strided view, made here: no trainer of lockstep's holds one), every step goes the synchronous
// way after the ones in flight.
TEST(StepRecorderTest, AsyncCaptureWritesTheSynchronousRecordsInStepOrder) {
  for (int variant = 0; variant < 3; ++variant) {
    const NormKind norm = variant == 0 ? NormKind::kLayerNorm : NormKind::kBatchNorm;
    const bool strided = variant == 2;
    SCOPED_TRACE(variant == 0 ? "layer norm" : variant == 1 ? "batch norm" : "batch norm, a strided buffer");
    Scenario scenario = trainer_testing::BaseScenario(ModelKind::kMlp);
    scenario.model.norm = norm;
    scenario.ranks = 1;
    scenario.steps = 6;
    testing::TempDir dir("lockstep_async_capture_");
    std::unique_ptr<TraceWriter> writer = OpenRankTrace(dir);
    ASSERT_NE(writer, nullptr);
    StepRecorder recorder(writer.get());
    auto device = std::make_unique<SimulatedCaptureDevice>();
    const SimulatedCaptureDevice* simulated = device.get();
    recorder.UseCaptureDeviceForTesting(std::move(device));
    StepRecorder sync_recorder(nullptr);
    std::vector<StepRecord> expected;
    trainer_testing::Train(scenario, {}, [&](int, int64_t step, Trainer& trainer) {
      if (strided && step == 0) {
        // The first float buffer (a running mean) moved into every other element of a storage
        // twice its size: the same values, not contiguous.
        bool done = false;
        trainer.VisitState([&](const std::string&, TensorKind kind, const torch::Tensor& t, bool) {
          if (done || kind != TensorKind::kBuffer || !t.is_floating_point() || t.dim() != 1) return;
          torch::Tensor wide = torch::zeros({2 * t.numel()}, t.options());
          wide.slice(0, 0, 2 * t.numel(), 2).copy_(t);
          t.set_(wide.storage(), 0, {t.numel()}, {2});
          done = true;
        });
        ASSERT_TRUE(done);
      }
      StepStats stats;
      stats.loss = 0.25 * static_cast<double>(step);
      StepRecord& want = expected.emplace_back();
      ASSERT_TRUE(sync_recorder.Capture(trainer, step, &stats, 1.0, want).ok());
      ASSERT_TRUE(recorder.CaptureAsync(trainer, step, &stats, 1.0).ok());
      // The trainer here runs on this thread, not on the simulated training stream: the capture
      // must land before the next step changes the tensors (the pipeline's ordering has its own
      // tests, capture_pipeline_test.cc).
      ASSERT_TRUE(recorder.FinishAsync(/*wait=*/true).ok());
      EXPECT_EQ(recorder.last_async_step_written(), step);
      EXPECT_TRUE(recorder.CapturesInFlight().empty());
    });
    ASSERT_TRUE(recorder.GuardOverwrite().ok());
    // Every step went through the device, but for the strided buffer's: none of those did. From
    // step 2 on, the list of step 1 was handed to the device again (the trainer's epoch kept).
    if (strided) {
      EXPECT_EQ(simulated->slots_used(), 0);
      EXPECT_EQ(recorder.repeats(), 0);
    } else {
      EXPECT_GT(simulated->slots_used(), 0);
      EXPECT_EQ(recorder.repeats(), scenario.steps - 1);
    }
    writer.reset();  // closes the trace
    ExpectTheTraceHolds(dir / "rank-0.trace", expected);
  }
}

// Several captures in flight at once, across a change of layout (step 0 has no gradients and no
// optimizer state): the records the asynchronous capture reuses keep what their own step said,
// and the trace gets a `tensors` record wherever the layout changed (a layout id kept where it
// should not be would have the reader name and count the tensors wrongly). Each state is captured
// three times (the pipeline's depth) with their landings held, as three steps of a host ahead of
// its device; the trainer steps only once they have landed.
TEST(StepRecorderTest, AsyncRecordsInFlightAreReusedWithTheirOwnLayouts) {
  Scenario scenario = trainer_testing::BaseScenario(ModelKind::kMlp);
  scenario.ranks = 1;
  scenario.steps = 3;
  testing::TempDir dir("lockstep_async_reuse_");
  std::unique_ptr<TraceWriter> writer = OpenRankTrace(dir);
  ASSERT_NE(writer, nullptr);
  StepRecorder recorder(writer.get());
  SimulatedCaptureOptions options;
  options.gate_landing = true;
  auto device = std::make_unique<SimulatedCaptureDevice>(options);
  SimulatedCaptureDevice* simulated = device.get();
  recorder.UseCaptureDeviceForTesting(std::move(device));
  StepRecorder sync_recorder(nullptr);
  std::vector<StepRecord> expected;
  constexpr int kCapturesPerState = 3;
  uint64_t queued = 0;  // the device's sequence numbers
  trainer_testing::Train(scenario, {}, [&](int, int64_t step, Trainer& trainer) {
    for (int k = 0; k < kCapturesPerState; ++k) {
      const int64_t id = 10 * step + k;
      StepStats stats;
      stats.loss = static_cast<double>(id);
      ASSERT_TRUE(sync_recorder.Capture(trainer, id, &stats, 1.0, expected.emplace_back()).ok());
      ASSERT_TRUE(recorder.CaptureAsync(trainer, id, &stats, 1.0).ok());
    }
    EXPECT_EQ(recorder.CapturesInFlight().size(), static_cast<size_t>(kCapturesPerState));
    for (int k = 0; k < kCapturesPerState; ++k) simulated->AllowLanding(queued++);
    ASSERT_TRUE(recorder.FinishAsync(/*wait=*/true).ok());
    EXPECT_EQ(recorder.last_async_step_written(), 10 * step + kCapturesPerState - 1);
  });
  // Step 0 and step 1 each listed once; the other captures since step 1's list (two of step 1,
  // three of steps 2 and 3) repeated it, in records that cycle through the captures in flight.
  EXPECT_EQ(recorder.repeats(), 8);
  writer.reset();
  ASSERT_LT(expected.front().tensors.size(), expected.back().tensors.size()) << "the layout never changed";
  ExpectTheTraceHolds(dir / "rank-0.trace", expected);
}

// On a GPU (ci/gpu-checks.sh, check `digest`): lockstep-rank's asynchronous capture of a CUDA
// trainer, over the CUDA capture device on the default stream, writes what the synchronous capture
// records, step by step, digests and norms bit for bit; the trainer's next step is queued behind the
// capture's reads (GuardOverwrite), as run_rank.cc orders it.
// A one-rank trainer of `scenario` on CUDA device 0, its collectives staged through the host.
struct CudaRank {
  explicit CudaRank(Scenario s) : scenario(std::move(s)), comm(world.Join(0)) {
    scenario.ranks = 1;
    scenario.device = Device::kCuda;
    groups.world = &comm;
    groups.slice = &comm;
    groups.slices = 1;
  }
  // Creates and initializes the trainer; false (with a test failure) when it cannot.
  bool Start() {
    Result<std::unique_ptr<Trainer>> made = Trainer::Create(scenario, groups, torch::Device(torch::kCUDA, 0), nullptr);
    EXPECT_TRUE(made.ok()) << made.status().ToString();
    if (!made.ok()) return false;
    trainer = std::move(made).value();
    const Status initialized = trainer->Initialize();
    EXPECT_TRUE(initialized.ok()) << initialized.ToString();
    return initialized.ok();
  }
  Scenario scenario;
  ThreadWorld world{1};
  HostStagingCommunicator comm;
  ProcessGroups groups;
  std::unique_ptr<Trainer> trainer;
};

// The repeated capture on CUDA tensors (the synchronous path's device batch, run again on the
// list's buffers): every step the per-tensor path's records, bit for bit.
TEST(CudaStepRecorderTest, RepeatedCapturesRecordWhatThePerTensorPathRecords) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device visible to LibTorch";
  Scenario scenario = trainer_testing::BaseScenario(ModelKind::kMlp);
  scenario.optimizer.kind = OptimizerKind::kAdamW;
  scenario.model.norm = NormKind::kBatchNorm;
  CudaRank rank(scenario);
  ASSERT_TRUE(rank.Start());
  StepRecorder recorder(nullptr);
  StepRecord record;
  for (int64_t step = 0; step <= 40; ++step) {
    if (step > 0) {
      ASSERT_TRUE(rank.trainer->Step(step).ok());
    }
    const Status captured = recorder.Capture(*rank.trainer, step, nullptr, 1.0, record);
    ASSERT_TRUE(captured.ok()) << captured.ToString();
    EXPECT_EQ(recorder.repeats(), std::max<int64_t>(0, step - 1)) << "step " << step;
    size_t i = 0;
    rank.trainer->VisitState([&](const std::string& name, TensorKind kind, const torch::Tensor& t, bool replicated) {
      Result<TensorRecord> want = MakeTensorRecord(name, kind, t, replicated);
      ASSERT_TRUE(want.ok());
      ASSERT_LT(i, record.tensors.size());
      const TensorRecord& got = record.tensors[i++];
      EXPECT_EQ(got.digest, want->digest) << "step " << step << " " << name;
      EXPECT_EQ(Bits(got.norm), Bits(want->norm)) << "step " << step << " " << name;
    });
    EXPECT_EQ(i, record.tensors.size());
  }
}

TEST(CudaStepRecorderTest, AsyncCaptureWritesTheSynchronousRecords) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device visible to LibTorch";
  const std::string unavailable = StepRecorder::AsyncCaptureUnavailable();
  if (!unavailable.empty()) GTEST_SKIP() << unavailable;
  CudaRank rank(trainer_testing::BaseScenario(ModelKind::kMlp));
  ASSERT_TRUE(rank.Start());
  Trainer* const trainer = rank.trainer.get();
  testing::TempDir dir("lockstep_cuda_async_capture_");
  std::unique_ptr<TraceWriter> writer = OpenRankTrace(dir);
  ASSERT_NE(writer, nullptr);
  StepRecorder recorder(writer.get());
  StepRecorder sync_recorder(nullptr);
  std::vector<StepRecord> expected;
  for (int64_t step = 0; step <= 5; ++step) {
    StepStats stats;
    if (step > 0) {
      ASSERT_TRUE(recorder.GuardOverwrite().ok());
      Result<StepStats> got = trainer->Step(step);
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      stats = *got;
    }
    ASSERT_TRUE(sync_recorder.Capture(*trainer, step, &stats, 1.0, expected.emplace_back()).ok());
    const Status begun = recorder.CaptureAsync(*trainer, step, &stats, 1.0);
    ASSERT_TRUE(begun.ok()) << begun.ToString();
  }
  ASSERT_TRUE(recorder.FinishAsync(/*wait=*/true).ok());
  EXPECT_EQ(recorder.last_async_step_written(), 5);
  writer.reset();
  ExpectTheTraceHolds(dir / "rank-0.trace", expected);
}

}  // namespace
}  // namespace lockstep
