// bench/torch_profile.h: what the GPU run's cost check relies on, on the CPU (the CUDA activities
// are the device's: ci/gpu-checks.sh, check `cost`).
#include "bench/torch_profile.h"

#include <ATen/record_function.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <fstream>
#include <sstream>
#include <string>

#include "harness/core/testing/temp_dir.h"

namespace lockstep::bench {
namespace {

std::string ReadFile(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(TorchProfileTest, EachStepIsInItsRangeWithTheRangesInsideIt) {
  const testing::TempDir temp("lockstep_torch_profile_");
  const std::filesystem::path trace = temp.path() / "steps.json";
  int ran = 0;
  Status st = ProfileSteps(trace, false, 3, [&] {
    ++ran;
    torch::Tensor x = torch::ones({8, 8});
    RECORD_USER_SCOPE("lockstep.capture");
    x.mm(x).sum();
    return Status::Ok();
  });
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(ran, 3);
  const std::string text = ReadFile(trace);
  EXPECT_EQ(Count(text, "\"name\": \"profile.step\""), 3u) << text.substr(0, 2000);
  EXPECT_EQ(Count(text, "\"name\": \"lockstep.capture\""), 3u);
  EXPECT_THAT(text, ::testing::HasSubstr("aten::mm"));
}

// A step's error is returned, no trace is claimed, and the profiler is off again: a second
// profile in the same process works.
TEST(TorchProfileTest, AFailedStepIsReturnedAndTheProfilerLeftOff) {
  const testing::TempDir temp("lockstep_torch_profile_");
  int ran = 0;
  Status st = ProfileSteps(temp.path() / "failed.json", false, 5, [&] {
    return ++ran == 2 ? InternalError("step 2 broke") : Status::Ok();
  });
  EXPECT_FALSE(st.ok());
  EXPECT_THAT(st.ToString(), ::testing::HasSubstr("step 2 broke"));
  EXPECT_EQ(ran, 2);
  EXPECT_FALSE(std::filesystem::exists(temp.path() / "failed.json"));
  st = ProfileSteps(temp.path() / "again.json", false, 1, [] { return Status::Ok(); });
  EXPECT_TRUE(st.ok()) << st.ToString();
}

}  // namespace
}  // namespace lockstep::bench
