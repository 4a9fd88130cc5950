#include "harness/trace/world_settings.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "harness/core/testing/build_paths.h"
#include "harness/core/testing/temp_dir.h"
#include "harness/trace/trace_reader.h"
#include "harness/trace/trace_writer.h"

namespace lockstep {
namespace {

TEST(WorldSettingsTest, RecordsTheListedVariablesThatAreSetAndNoOthers) {
  ::setenv("NCCL_ALGO", "Tree", 1);
  ::unsetenv("NCCL_PROTO");
  ::setenv("NCCL_SOCKET_IFNAME", "eth0", 1);  // differs per node by design: not recorded
  const std::map<std::string, std::string> env = RecordedEnvironment();
  EXPECT_EQ(env.at("NCCL_ALGO"), "Tree");
  EXPECT_EQ(env.count("NCCL_PROTO"), 0u);
  EXPECT_EQ(env.count("NCCL_SOCKET_IFNAME"), 0u);
  ::unsetenv("NCCL_ALGO");
  ::unsetenv("NCCL_SOCKET_IFNAME");
}

// The header's `environment` goes through the writer and the reader unchanged.
TEST(WorldSettingsTest, TheHeaderEnvironmentRoundTrips) {
  testing::TempDir dir("world_settings_test");
  TraceHeader header;
  header.environment = {{"NCCL_ALGO", "Ring"}, {"TORCH_NCCL_BLOCKING_WAIT", "1"}};
  const std::filesystem::path path = dir.path() / TraceFileName(0);
  ASSERT_TRUE(TraceWriter::Open(path, header).ok());
  Result<RankTrace> trace = ReadTrace(path);
  ASSERT_TRUE(trace.ok()) << trace.status().ToString();
  EXPECT_EQ(trace->header.environment, header.environment);
  EXPECT_EQ(trace->header.schema, CurrentTraceSchema());
}

TEST(WorldSettingsTest, TraceDocsListEveryVariable) {
  std::ifstream in(std::string(LOCKSTEP_SOURCE_DIR) + "/docs/TRACE.md");
  ASSERT_TRUE(in);
  std::stringstream text;
  text << in.rdbuf();
  for (std::string_view name : WorldSettingVariables()) {
    EXPECT_NE(text.str().find("`" + std::string(name) + "`"), std::string::npos) << name;
  }
}

}  // namespace
}  // namespace lockstep
