// The capture pipeline's ordering on the simulated device (threads as streams, gates for delays):
// every test puts the streams where it wants them with gates and waits, never with time, so it
// gives the same answer on a loaded machine.
#include "harness/capture/capture_pipeline.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <algorithm>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "harness/capture/simulated_capture_device.h"
#include "harness/trace/digest.h"

namespace lockstep {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// A "tensor" of float32 values in host memory, standing in for device memory.
struct Values {
  explicit Values(size_t n, float first) : v(n) {
    for (size_t i = 0; i < n; ++i) v[i] = first + static_cast<float>(i);
  }
  CaptureBuffer Buffer() const {
    CaptureBuffer b;
    b.data = v.data();
    b.nbytes = v.size() * sizeof(float);
    const int64_t shape = static_cast<int64_t>(v.size());
    b.seed = DescriptorSeed(DigestDescriptor("float32", &shape, 1, b.nbytes));
    b.squares = SquaredAs::kFloat32;
    return b;
  }
  // What the synchronous path records for these values now.
  Digest128 Digest() const {
    const int64_t shape = static_cast<int64_t>(v.size());
    return DigestBytes(v.data(), v.size() * sizeof(float), "float32", &shape, 1);
  }
  std::vector<float> v;
};

std::vector<int64_t> Steps(const std::vector<CapturedStep>& captured) {
  std::vector<int64_t> steps;
  for (const CapturedStep& c : captured) steps.push_back(c.step);
  return steps;
}

// The guard: with a capture's reads held in progress, a write queued on the training stream after
// GuardOverwrite waits for them on the device. Remove the guard (or make TrainingWaitsForReads
// queue nothing) and the write runs in the middle of the read: a violation, and the capture's
// digest is the new values', not the step's.
TEST(CapturePipelineTest, TheTrainingStreamWaitsForTheReadsBeforeItOverwrites) {
  SimulatedCaptureDevice device({.gate_reads = true});
  CapturePipeline pipeline(&device, 2);
  Values w(1000, 1.0f);
  const Digest128 at_step = w.Digest();
  ASSERT_TRUE(pipeline.Begin(1, {w.Buffer()}).ok());
  device.AwaitReadsHeld(1);  // the capture is inside its read
  ASSERT_TRUE(pipeline.GuardOverwrite().ok());
  device.QueueTrainingWrite(w.v.data(), w.v.size() * sizeof(float), [&] { w.v[0] = -7.0f; });  // the next step
  EXPECT_EQ(device.AwaitTrainingSettled(), SimStreamState::kWaitingEvent) << "the overwrite did not wait";
  EXPECT_EQ(w.v[0], 1.0f);
  device.AllowAllReads();
  std::vector<CapturedStep> out;
  ASSERT_TRUE(pipeline.Drain(out).ok());
  EXPECT_EQ(device.AwaitTrainingSettled(), SimStreamState::kIdle);
  EXPECT_EQ(w.v[0], -7.0f);  // the write ran once the reads were done
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].digests[0], at_step);
  EXPECT_THAT(device.violations(), IsEmpty());
}

// The guard waits for the reads, not for the landing: the training stream goes on while the
// results are still on their way to the host, and Poll has nothing until they land.
TEST(CapturePipelineTest, TheTrainingStreamGoesOnOnceTheReadsAreDoneNotWhenTheyLand) {
  SimulatedCaptureDevice device({.gate_landing = true});
  CapturePipeline pipeline(&device, 2);
  Values w(64, 2.0f);
  ASSERT_TRUE(pipeline.Begin(1, {w.Buffer()}).ok());
  ASSERT_TRUE(pipeline.GuardOverwrite().ok());
  device.QueueTrainingWrite(w.v.data(), w.v.size() * sizeof(float), [&] { w.v[3] = 0.0f; });
  EXPECT_EQ(device.AwaitTrainingSettled(), SimStreamState::kIdle);
  EXPECT_EQ(w.v[3], 0.0f);
  EXPECT_EQ(device.AwaitSideSettled(0), SimStreamState::kWaitingGate);  // the landing copy is held
  std::vector<CapturedStep> out;
  ASSERT_TRUE(pipeline.Poll(out).ok());
  EXPECT_THAT(out, IsEmpty());
  EXPECT_THAT(pipeline.InFlight(), ElementsAre(1));
  device.AllowAllLandings();
  ASSERT_TRUE(pipeline.Drain(out).ok());
  EXPECT_THAT(Steps(out), ElementsAre(1));
  EXPECT_EQ(out[0].digests[0], Values(64, 2.0f).Digest());  // the values at the step, not after
  EXPECT_THAT(device.violations(), IsEmpty());
}

// A second GuardOverwrite with nothing new begun queues no second wait: the training stream is
// in order, so one wait per capture covers everything queued after it.
TEST(CapturePipelineTest, EachCaptureIsGuardedOnce) {
  SimulatedCaptureDevice device({.gate_reads = true});
  CapturePipeline pipeline(&device, 2);
  Values w(8, 1.0f);
  ASSERT_TRUE(pipeline.Begin(1, {w.Buffer()}).ok());
  ASSERT_TRUE(pipeline.GuardOverwrite().ok());
  device.AllowAllReads();
  std::vector<CapturedStep> out;
  ASSERT_TRUE(pipeline.Drain(out).ok());
  EXPECT_EQ(device.AwaitTrainingSettled(), SimStreamState::kIdle);
  ASSERT_TRUE(pipeline.GuardOverwrite().ok());  // nothing in flight: nothing to wait for
  EXPECT_EQ(device.AwaitTrainingSettled(), SimStreamState::kIdle);
}

// The capture reads what the training stream queued before Begin, however late the device runs
// it: the side stream waits for the event, and the bytes it digests are the step's.
TEST(CapturePipelineTest, TheCaptureReadsAfterTheStepsWorkOnTheTrainingStream) {
  SimulatedCaptureDevice device({.gate_training = true});
  CapturePipeline pipeline(&device, 2);
  Values w(300, 0.5f);
  device.QueueTrainingWrite(w.v.data(), w.v.size() * sizeof(float), [&] { w.v[10] = 99.0f; });  // the step
  ASSERT_EQ(device.AwaitTrainingSettled(), SimStreamState::kWaitingGate);  // the step is still running
  ASSERT_TRUE(pipeline.Begin(1, {w.Buffer()}).ok());  // returned at once: the host did not wait
  EXPECT_EQ(device.AwaitSideSettled(0), SimStreamState::kWaitingEvent);
  device.AllowTrainingWrites(1);
  std::vector<CapturedStep> out;
  ASSERT_TRUE(pipeline.Drain(out).ok());
  Values expected(300, 0.5f);
  expected.v[10] = 99.0f;
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].digests[0], expected.Digest());
  EXPECT_THAT(device.violations(), IsEmpty());
}

// Records complete in step order. On one side stream a later capture cannot land first (a CUDA
// stream runs in order); on two (or two devices) it can, and Poll holds it until the earlier one
// lands. Poll taking whatever has landed would hand out step 2 before step 1 here.
TEST(CapturePipelineTest, ALaterStepThatLandsFirstWaitsForTheEarlierOne) {
  SimulatedCaptureDevice device({.side_streams = 2, .gate_landing = true});
  CapturePipeline pipeline(&device, 4);
  Values a(16, 1.0f), b(16, 2.0f);
  ASSERT_TRUE(pipeline.Begin(1, {a.Buffer()}).ok());
  ASSERT_TRUE(pipeline.Begin(2, {b.Buffer()}).ok());
  device.AllowLanding(1);  // step 2's capture
  device.AwaitLanded({1});
  std::vector<CapturedStep> out;
  ASSERT_TRUE(pipeline.Poll(out).ok());
  EXPECT_THAT(out, IsEmpty()) << "step " << out.front().step << " came out before step 1";
  EXPECT_THAT(pipeline.InFlight(), ElementsAre(1, 2));
  device.AllowLanding(0);
  device.AwaitLanded({0});
  ASSERT_TRUE(pipeline.Poll(out).ok());
  EXPECT_THAT(Steps(out), ElementsAre(1, 2));
  EXPECT_EQ(out[0].digests[0], a.Digest());
  EXPECT_EQ(out[1].digests[0], b.Digest());
  EXPECT_THAT(pipeline.InFlight(), IsEmpty());
}

// Backpressure: with max_in_flight captures in flight, Begin waits on the host for the oldest to
// land, and no more slots (pinned buffers, kept tensors) than that are ever used. The one it waited
// for comes out of the next Poll, before the rest.
TEST(CapturePipelineTest, BeginWaitsForTheOldestCaptureAtFullDepth) {
  SimulatedCaptureDevice device({.gate_landing = true});
  CapturePipeline pipeline(&device, 2);
  Values a(4, 1.0f), b(4, 2.0f), c(4, 3.0f);
  ASSERT_TRUE(pipeline.Begin(1, {a.Buffer()}).ok());
  ASSERT_TRUE(pipeline.Begin(2, {b.Buffer()}).ok());
  EXPECT_EQ(pipeline.host_waits(), 0);
  Status third;
  std::thread host([&] { third = pipeline.Begin(3, {c.Buffer()}); });
  device.AwaitHostWaiting();  // Begin(3) is blocked on the oldest capture
  device.AllowLanding(0);
  host.join();
  ASSERT_TRUE(third.ok()) << third.ToString();
  EXPECT_EQ(pipeline.host_waits(), 1);
  EXPECT_EQ(device.slots_used(), 2);
  EXPECT_THAT(pipeline.InFlight(), ElementsAre(1, 2, 3));
  std::vector<CapturedStep> out;
  ASSERT_TRUE(pipeline.Poll(out).ok());
  EXPECT_THAT(Steps(out), ElementsAre(1));
  device.AllowAllLandings();
  ASSERT_TRUE(pipeline.Drain(out).ok());
  EXPECT_THAT(Steps(out), ElementsAre(1, 2, 3));
  EXPECT_EQ(out[2].digests[0], c.Digest());
}

// A device (or rank) that dies with captures in flight: what landed comes out, and InFlight names
// exactly the steps begun and never landed; waiting for them fails instead of hanging.
TEST(CapturePipelineTest, ACrashWithCapturesInFlightNamesThem) {
  SimulatedCaptureDevice device({.gate_landing = true});
  CapturePipeline pipeline(&device, 4);
  Values a(4, 1.0f), b(4, 2.0f), c(4, 3.0f);
  ASSERT_TRUE(pipeline.Begin(1, {a.Buffer()}).ok());
  ASSERT_TRUE(pipeline.Begin(2, {b.Buffer()}).ok());
  ASSERT_TRUE(pipeline.Begin(3, {c.Buffer()}).ok());
  device.AllowLanding(0);
  device.AwaitLanded({0});
  device.Crash();
  std::vector<CapturedStep> out;
  ASSERT_TRUE(pipeline.Poll(out).ok());
  EXPECT_THAT(Steps(out), ElementsAre(1));
  EXPECT_THAT(pipeline.InFlight(), ElementsAre(2, 3));
  const Status drained = pipeline.Drain(out);
  EXPECT_FALSE(drained.ok());
  EXPECT_THAT(drained.ToString(), ::testing::HasSubstr("step 2"));
  EXPECT_THAT(pipeline.InFlight(), ElementsAre(2, 3));
  EXPECT_FALSE(pipeline.Begin(4, {a.Buffer()}).ok());  // a failed pipeline stays failed
}

TEST(CapturePipelineTest, StepsMustIncrease) {
  SimulatedCaptureDevice device;
  CapturePipeline pipeline(&device, 2);
  Values a(4, 1.0f);
  ASSERT_TRUE(pipeline.Begin(5, {a.Buffer()}).ok());
  EXPECT_FALSE(pipeline.Begin(5, {a.Buffer()}).ok());
}

// Many steps with the landings released in a shuffled order, several side streams and a small
// depth: every step comes out once, in order, with the digest and norm of its own values, and the
// training stream's writes (each step rewrites the buffer after the guard) never meet a read.
TEST(CapturePipelineTest, ManyStepsInAnyLandingOrderComeOutInOrderWithTheirOwnValues) {
  SimulatedCaptureDevice device({.side_streams = 3, .gate_landing = true});
  CapturePipeline pipeline(&device, 3);
  Values w(2000, 0.0f);
  std::vector<Digest128> expected_digest;
  std::vector<CapturedStep> out;
  std::mt19937 shuffle(47);
  std::vector<uint64_t> begun;
  constexpr int kSteps = 40;
  for (int step = 1; step <= kSteps; ++step) {
    // The step's work on the training stream, after the guard of the last capture.
    ASSERT_TRUE(pipeline.GuardOverwrite().ok());
    device.QueueTrainingWrite(w.v.data(), w.v.size() * sizeof(float), [&w, step] {
      for (size_t i = 0; i < w.v.size(); ++i) w.v[i] = static_cast<float>(step) * 0.25f + static_cast<float>(i % 7);
    });
    Values at_step(2000, 0.0f);
    for (size_t i = 0; i < at_step.v.size(); ++i) {
      at_step.v[i] = static_cast<float>(step) * 0.25f + static_cast<float>(i % 7);
    }
    expected_digest.push_back(at_step.Digest());
    // Release the landings of the captures begun so far in a shuffled order, some of them now.
    std::shuffle(begun.begin(), begun.end(), shuffle);
    while (begun.size() > 1) {
      device.AllowLanding(begun.back());
      begun.pop_back();
    }
    begun.push_back(static_cast<uint64_t>(step - 1));
    // At full depth Begin waits for the oldest: let it land whenever it is held.
    if (const std::vector<int64_t> in_flight = pipeline.InFlight(); in_flight.size() >= 3) {
      device.AllowLanding(static_cast<uint64_t>(in_flight.front() - 1));  // capture k is sequence k-1
    }
    ASSERT_TRUE(pipeline.Begin(step, {w.Buffer()}).ok());
    ASSERT_TRUE(pipeline.Poll(out).ok());
  }
  device.AllowAllLandings();
  ASSERT_TRUE(pipeline.Drain(out).ok());
  ASSERT_EQ(out.size(), static_cast<size_t>(kSteps));
  for (int i = 0; i < kSteps; ++i) {
    EXPECT_EQ(out[i].step, i + 1);
    EXPECT_EQ(out[i].digests[0], expected_digest[i]) << "step " << i + 1;
    EXPECT_GT(out[i].norms[0], 0.0);
  }
  EXPECT_THAT(device.violations(), IsEmpty());
  EXPECT_LE(device.slots_used(), 3);
}

}  // namespace
}  // namespace lockstep
