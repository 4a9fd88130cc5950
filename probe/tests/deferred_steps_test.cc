#include "probe/deferred_steps.h"

#include <gtest/gtest.h>
#include <torch/cuda.h>
#include <torch/torch.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "harness/capture/simulated_capture_device.h"
#include "harness/capture/testing/tensor_record_oracle.h"
#include "harness/trace/testing/norm_test_values.h"
#include "probe/capture_list.h"

namespace lockstep::probe {
namespace {

using ::lockstep::testing::Bits;  // harness/trace/testing/norm_test_values.h

std::vector<ListedTensor> Entries(const std::vector<std::string>& names) {
  std::vector<ListedTensor> out;
  for (const std::string& n : names) out.push_back(ListedTensor{n, true, nullptr});
  return out;
}

// Deferred steps over a simulated device whose captures land only when the test lets them
// (sequence 0 for the first capture begun, 1 for the next...), each on a side stream of its own so
// that a later one can land first.
struct Gated {
  Gated() {
    SimulatedCaptureOptions options;
    options.gate_landing = true;
    options.side_streams = 8;
    auto owned = std::make_unique<SimulatedCaptureDevice>(options);
    device = owned.get();
    deferred = std::make_shared<DeferredSteps>(std::move(owned), BufferPlace{false, -1}, 8);
  }
  SimulatedCaptureDevice* device;
  std::shared_ptr<DeferredSteps> deferred;
  std::vector<StepRecord> written;
  DeferredSteps::Write write = [this](const StepRecord& r) {
    written.push_back(r);
    return Status::Ok();
  };
};

// A step's record: its parts' records in order, as the probe assembles it.
DeferredSteps::Assemble Concatenate(int64_t step) {
  return [step](const std::vector<Captured>& parts, const Captured* watched) {
    StepRecord r;
    r.step = step;
    for (const Captured& p : parts) r.tensors.insert(r.tensors.end(), p.records.begin(), p.records.end());
    if (watched != nullptr) r.tensors.insert(r.tensors.end(), watched->records.begin(), watched->records.end());
    return r;
  };
}

void ExpectDefinition(const TensorRecord& got, const torch::Tensor& t) {
  Result<TensorRecord> want = MakeTensorRecord(got.name, got.kind, t, got.replicated);
  ASSERT_TRUE(want.ok()) << want.status().ToString();
  EXPECT_EQ(got.digest, want->digest) << got.name;
  EXPECT_EQ(Bits(got.norm), Bits(want->norm)) << got.name;
  EXPECT_EQ(got.numel, want->numel) << got.name;
  EXPECT_EQ(got.dtype, want->dtype) << got.name;
}

// Every step added, waiting for the device, into `written`.
Status FlushAll(DeferredSteps& deferred, std::vector<StepRecord>& written) {
  return deferred.Flush(true, [&](const StepRecord& r) {
    written.push_back(r);
    return Status::Ok();
  });
}

std::vector<int64_t> Steps(const std::vector<StepRecord>& records) {
  std::vector<int64_t> steps;
  for (const StepRecord& r : records) steps.push_back(r.step);
  return steps;
}

// A step is written once every part of it has landed, after every step added before it, with the
// digests and norms of the per-tensor definition: a later step that lands first waits.
TEST(DeferredStepsTest, AStepIsWrittenWhenAllItsPartsHaveLandedInStepOrder) {
  Gated g;
  CaptureList params(TensorKind::kParam, Entries({"w", "b"}), g.deferred);
  CaptureList grads(TensorKind::kGrad, Entries({"w"}), g.deferred);
  torch::manual_seed(7);
  std::vector<torch::Tensor> values[2] = {{torch::randn({8, 4}), torch::randn({4}, torch::kFloat64)},
                                          {torch::randn({8, 4}), torch::randn({4}, torch::kFloat64)}};
  std::vector<torch::Tensor> grad_values[2] = {{torch::randn({8, 4})}, {torch::randn({8, 4})}};
  for (int64_t step = 1; step <= 2; ++step) {
    Result<Captured> g_part = grads.Capture(grad_values[step - 1], /*may_defer=*/true);
    Result<Captured> p_part = params.Capture(values[step - 1], /*may_defer=*/true);
    ASSERT_TRUE(g_part.ok() && p_part.ok());
    EXPECT_NE(g_part->pending, 0);
    EXPECT_NE(p_part->pending, 0);
    g.deferred->Add(step, {*p_part, *g_part}, std::nullopt, Concatenate(step));
  }
  ASSERT_TRUE(g.deferred->Flush(false, g.write).ok());
  EXPECT_TRUE(g.written.empty()) << "nothing landed yet";
  EXPECT_EQ(g.deferred->StepsInFlight(), (std::vector<int64_t>{1, 2}));

  // Step 2's captures (sequences 2 and 3) land; step 1's (0 and 1) have not.
  g.device->AllowLanding(2);
  g.device->AllowLanding(3);
  g.device->AwaitLanded({2, 3});
  ASSERT_TRUE(g.deferred->Flush(false, g.write).ok());
  EXPECT_TRUE(g.written.empty()) << "step 2 was written before step 1";

  g.device->AllowLanding(0);
  ASSERT_TRUE(g.deferred->Flush(false, g.write).ok());  // may see it or not: no order is promised here
  g.device->AllowLanding(1);
  g.device->AwaitLanded({0, 1});
  ASSERT_TRUE(g.deferred->Flush(false, g.write).ok());
  ASSERT_EQ(Steps(g.written), (std::vector<int64_t>{1, 2}));
  EXPECT_TRUE(g.deferred->StepsInFlight().empty());
  for (int s = 0; s < 2; ++s) {
    const StepRecord& r = g.written[s];
    ASSERT_EQ(r.tensors.size(), 3u);
    EXPECT_EQ(r.tensors[0].name, "w");
    EXPECT_EQ(r.tensors[2].kind, TensorKind::kGrad);
    ExpectDefinition(r.tensors[0], values[s][0]);
    ExpectDefinition(r.tensors[1], values[s][1]);
    ExpectDefinition(r.tensors[2], grad_values[s][0]);
  }
}

// Flush(wait) waits for the device: every step added is written when it returns.
TEST(DeferredStepsTest, AFlushThatWaitsWritesEveryStep) {
  Gated g;
  CaptureList params(TensorKind::kParam, Entries({"w"}), g.deferred);
  const torch::Tensor w = torch::randn({16});
  for (int64_t step = 1; step <= 3; ++step) {
    Result<Captured> part = params.Capture({w}, /*may_defer=*/true);
    ASSERT_TRUE(part.ok());
    g.deferred->Add(step, {*part}, std::nullopt, Concatenate(step));
  }
  g.device->AllowAllLandings();
  ASSERT_TRUE(g.deferred->Flush(true, g.write).ok());
  EXPECT_EQ(Steps(g.written), (std::vector<int64_t>{1, 2, 3}));
  for (const StepRecord& r : g.written) ExpectDefinition(r.tensors[0], w);
}

// What a device cannot read where it is (a view, an integer tensor whose norm is LibTorch's), or a
// capture the caller may not defer, is digested at once; such a step waits for the earlier ones
// all the same.
TEST(DeferredStepsTest, WhatTheDeviceCannotReadIsDigestedAtOnceAndWrittenInOrder) {
  Gated g;
  CaptureList floats(TensorKind::kParam, Entries({"w"}), g.deferred);
  CaptureList mixed(TensorKind::kBuffer, Entries({"wt", "count"}), g.deferred);
  const torch::Tensor w = torch::randn({4, 3});
  Result<Captured> deferred_part = floats.Capture({w}, /*may_defer=*/true);
  ASSERT_TRUE(deferred_part.ok());
  ASSERT_NE(deferred_part->pending, 0);
  g.deferred->Add(1, {*deferred_part}, std::nullopt, Concatenate(1));

  Result<Captured> now = mixed.Capture({w.t(), torch::arange(5, torch::kInt64)}, /*may_defer=*/true);
  ASSERT_TRUE(now.ok());
  EXPECT_EQ(now->pending, 0);
  ExpectDefinition(now->records[0], w.t());
  ExpectDefinition(now->records[1], torch::arange(5, torch::kInt64));
  Result<Captured> not_deferred = floats.Capture({w}, /*may_defer=*/false);
  ASSERT_TRUE(not_deferred.ok());
  EXPECT_EQ(not_deferred->pending, 0);
  ExpectDefinition(not_deferred->records[0], w);
  g.deferred->Add(2, {*now, *not_deferred}, std::nullopt, Concatenate(2));

  ASSERT_TRUE(g.deferred->Flush(false, g.write).ok());
  EXPECT_TRUE(g.written.empty()) << "step 2 was written before step 1";
  g.device->AllowAllLandings();
  ASSERT_TRUE(g.deferred->Flush(true, g.write).ok());
  EXPECT_EQ(Steps(g.written), (std::vector<int64_t>{1, 2}));
}

// A step's `watched` capture (its parameters right after the optimizer step) lands into the
// record's assembly as its parts do.
TEST(DeferredStepsTest, TheWatchedCaptureIsFilledBeforeTheStepIsAssembled) {
  Gated g;
  CaptureList params(TensorKind::kParam, Entries({"w"}), g.deferred);
  const torch::Tensor before = torch::randn({6});
  const torch::Tensor after = before + 1;
  Result<Captured> watched = params.Capture({before}, true);
  Result<Captured> part = params.Capture({after}, true);
  ASSERT_TRUE(watched.ok() && part.ok());
  g.deferred->Add(1, {*part}, *watched, Concatenate(1));
  g.device->AllowAllLandings();
  ASSERT_TRUE(g.deferred->Flush(true, g.write).ok());
  ASSERT_EQ(g.written.size(), 1u);
  ASSERT_EQ(g.written[0].tensors.size(), 2u);
  ExpectDefinition(g.written[0].tensors[0], after);
  ExpectDefinition(g.written[0].tensors[1], before);
}

// One capture held twice by a step (a part that is also its watched list) fills both, and results
// no step holds any more are let go of without touching a later step's.
TEST(DeferredStepsTest, ACaptureHeldTwiceFillsBothPlaces) {
  Gated g;
  CaptureList params(TensorKind::kParam, Entries({"w"}), g.deferred);
  const torch::Tensor w = torch::randn({9});
  Result<Captured> part = params.Capture({w}, true);
  ASSERT_TRUE(part.ok());
  g.deferred->Add(1, {*part, *part}, *part, Concatenate(1));
  Result<Captured> unwritten = params.Capture({w + 1}, true);  // captured, never added
  Result<Captured> next = params.Capture({w + 2}, true);
  ASSERT_TRUE(unwritten.ok() && next.ok());
  g.device->AllowAllLandings();
  ASSERT_TRUE(g.deferred->Flush(true, g.write).ok());
  g.deferred->Add(2, {*next}, std::nullopt, Concatenate(2));
  ASSERT_TRUE(g.deferred->Flush(true, g.write).ok());
  ASSERT_EQ(Steps(g.written), (std::vector<int64_t>{1, 2}));
  ASSERT_EQ(g.written[0].tensors.size(), 3u);
  for (const TensorRecord& t : g.written[0].tensors) ExpectDefinition(t, w);
  ExpectDefinition(g.written[1].tensors[0], w + 2);
}

// A device that dies with captures in flight: the flush fails, and the steps not written are named.
TEST(DeferredStepsTest, ADeadDeviceFailsTheFlushAndLeavesItsStepsInFlight) {
  Gated g;
  CaptureList params(TensorKind::kParam, Entries({"w"}), g.deferred);
  const torch::Tensor w = torch::randn({5});
  for (int64_t step = 1; step <= 2; ++step) {
    Result<Captured> part = params.Capture({w}, true);
    ASSERT_TRUE(part.ok());
    g.deferred->Add(step, {*part}, std::nullopt, Concatenate(step));
  }
  g.device->AllowLanding(0);
  g.device->AwaitLanded({0});
  g.device->Crash();
  EXPECT_FALSE(g.deferred->Flush(true, g.write).ok());
  EXPECT_EQ(Steps(g.written), (std::vector<int64_t>{1})) << "what landed is written";
  EXPECT_EQ(g.deferred->StepsInFlight(), (std::vector<int64_t>{2}));
}

TEST(DeferredStepsTest, TheSettingIsOneHostOrOffAndAnythingElseNamesTheVariable) {
  for (const char* off : {"", "0"}) {
    Result<std::shared_ptr<DeferredSteps>> d = DeferredSteps::FromSetting(off);
    ASSERT_TRUE(d.ok());
    EXPECT_EQ(*d, nullptr) << "'" << off << "'";
  }
  Result<std::shared_ptr<DeferredSteps>> host = DeferredSteps::FromSetting("host");
  ASSERT_TRUE(host.ok());
  EXPECT_NE(*host, nullptr);
  Result<std::shared_ptr<DeferredSteps>> wrong = DeferredSteps::FromSetting("yes");
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().ToString().find("LOCKSTEP_ASYNC_CAPTURE='yes'"), std::string::npos)
      << wrong.status().ToString();
}

// The host device of LOCKSTEP_ASYNC_CAPTURE=host: a program's host thread may write a tensor as
// soon as its capture was begun (the reads are done by then), and the record holds the values
// as they were at the capture.
TEST(DeferredStepsTest, OnTheHostDeviceATensorWrittenRightAfterItsCaptureIsRecordedAsItWas) {
  Result<std::shared_ptr<DeferredSteps>> host = DeferredSteps::FromSetting("host");
  ASSERT_TRUE(host.ok() && *host);
  CaptureList params(TensorKind::kParam, Entries({"w"}), *host);
  torch::Tensor w = torch::randn({1024});
  const torch::Tensor then = w.clone();
  Result<Captured> part = params.Capture({w}, true);
  ASSERT_TRUE(part.ok());
  ASSERT_NE(part->pending, 0);
  w.add_(1.0f);  // the program's next step
  (*host)->Add(1, {*part}, std::nullopt, Concatenate(1));
  std::vector<StepRecord> written;
  ASSERT_TRUE(FlushAll(**host, written).ok());
  ASSERT_EQ(written.size(), 1u);
  ExpectDefinition(written[0].tensors[0], then);
}

// LOCKSTEP_ASYNC_CAPTURE=1 on a GPU: CUDA lists on the default stream are deferred to the CUDA
// device made at the first capture, and land with the per-tensor definition's bits; the program's
// next write to a captured tensor, queued right after the capture, is not in the record. A list of
// another device is digested at once. (ci/gpu-checks.sh's probe check names this test.)
TEST(DeferredStepsTest, CudaListsLandWithTheDefinitionsBits) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device visible to LibTorch";
  Result<std::shared_ptr<DeferredSteps>> cuda = DeferredSteps::FromSetting("1");
  ASSERT_TRUE(cuda.ok()) << cuda.status().ToString();
  CaptureList params(TensorKind::kParam, Entries({"w", "b"}), *cuda);
  torch::manual_seed(3);
  const torch::Device device(torch::kCUDA, 0);
  torch::Tensor w = torch::randn({1000, 300}, device);  // over one 1 MiB chunk
  torch::Tensor b = torch::randn({7}, torch::TensorOptions().dtype(torch::kFloat64).device(device));
  const torch::Tensor w_then = w.cpu();
  const torch::Tensor b_then = b.cpu();
  Result<Captured> part = params.Capture({w, b}, true);
  ASSERT_TRUE(part.ok()) << part.status().ToString();
  ASSERT_NE(part->pending, 0) << "not deferred";
  w.add_(1.0f);  // queued after the capture on the default stream: waits for its reads
  Result<Captured> host = params.Capture({w_then, b_then}, true);
  ASSERT_TRUE(host.ok());
  EXPECT_EQ(host->pending, 0) << "host tensors in a CUDA setting";
  (*cuda)->Add(1, {*part}, std::nullopt, Concatenate(1));
  std::vector<StepRecord> written;
  ASSERT_TRUE(FlushAll(**cuda, written).ok());
  ASSERT_EQ(written.size(), 1u);
  ExpectDefinition(written[0].tensors[0], w_then);
  ExpectDefinition(written[0].tensors[1], b_then);
  EXPECT_EQ((*cuda)->Summary(), "1 lists deferred, 1 digested at once");
}

}  // namespace
}  // namespace lockstep::probe
