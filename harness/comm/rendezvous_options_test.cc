#include "harness/comm/rendezvous_options.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <optional>
#include <string>

namespace lockstep {
namespace {

class RendezvousOptionsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : {"MASTER_ADDR", "MASTER_PORT", "LOCKSTEP_STORE_FILE", "LOCKSTEP_COMM_TIMEOUT_S"}) {
      const char* v = std::getenv(name);
      saved_[name] = v ? std::optional<std::string>(v) : std::nullopt;
      unsetenv(name);
    }
  }
  void TearDown() override {
    for (const auto& [name, v] : saved_) {
      if (v) {
        setenv(name.c_str(), v->c_str(), 1);
      } else {
        unsetenv(name.c_str());
      }
    }
  }

 private:
  std::map<std::string, std::optional<std::string>> saved_;
};

TEST_F(RendezvousOptionsTest, TorchrunVariables) {
  setenv("MASTER_ADDR", "10.0.0.7", 1);
  setenv("MASTER_PORT", "29511", 1);
  Result<RendezvousOptions> o = RendezvousOptions::FromEnvironment(3, 4);
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->rank, 3);
  EXPECT_EQ(o->world_size, 4);
  EXPECT_EQ(o->master_addr, "10.0.0.7");
  EXPECT_EQ(o->master_port, 29511);
  EXPECT_TRUE(o->store_file.empty());
}

TEST_F(RendezvousOptionsTest, StoreFileWinsAndTimeoutIsRead) {
  setenv("LOCKSTEP_STORE_FILE", "/tmp/x/store", 1);
  setenv("LOCKSTEP_COMM_TIMEOUT_S", "12", 1);
  Result<RendezvousOptions> o = RendezvousOptions::FromEnvironment(0, 2);
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->store_file, "/tmp/x/store");
  EXPECT_EQ(o->timeout, std::chrono::seconds(12));
}

TEST_F(RendezvousOptionsTest, MissingOrBadVariablesAreErrors) {
  Result<RendezvousOptions> o = RendezvousOptions::FromEnvironment(0, 2);
  ASSERT_FALSE(o.ok());
  EXPECT_NE(o.status().message().find("MASTER_ADDR and MASTER_PORT"), std::string::npos);
  setenv("MASTER_ADDR", "localhost", 1);
  setenv("MASTER_PORT", "99999", 1);
  o = RendezvousOptions::FromEnvironment(0, 2);
  ASSERT_FALSE(o.ok());
  EXPECT_EQ(o.status().message(), "MASTER_PORT='99999' must be an integer in [1, 65535]");
}

}  // namespace
}  // namespace lockstep
