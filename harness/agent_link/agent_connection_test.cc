// The launcher's listener and an agent's connection on loopback: messages both ways, a large
// file in pieces, the end of the peer seen.
#include "harness/agent_link/agent_connection.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>

namespace lockstep {
namespace {

std::vector<AgentMessage> ReceiveAtLeast(AgentConnection& c, size_t n) {
  std::vector<AgentMessage> got;
  for (int i = 0; i < 500 && got.size() < n && !c.closed(); ++i) {
    EXPECT_TRUE(c.Receive(got).ok());
    (void)c.Flush();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return got;
}

TEST(AgentConnectionTest, MessagesCrossBothWaysAndTheEndIsSeen) {
  Result<std::unique_ptr<AgentListener>> listener = AgentListener::Open();
  ASSERT_TRUE(listener.ok()) << listener.status().ToString();
  const std::string endpoint = "127.0.0.1:" + std::to_string((*listener)->port());
  // An endpoint that refuses comes first: the next one is tried.
  Result<std::unique_ptr<AgentConnection>> agent = AgentConnection::Connect({"127.0.0.1:1", endpoint}, 2.0);
  ASSERT_TRUE(agent.ok()) << agent.status().ToString();
  std::unique_ptr<AgentConnection> launcher;
  for (int i = 0; i < 200 && !launcher; ++i) {
    launcher = (*listener)->Accept();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_TRUE(launcher);
  EXPECT_EQ(launcher->peer_address(), "127.0.0.1");

  AgentMessage hello;
  hello.type = AgentMessageType::kHello;
  hello.host = "node9";
  (*agent)->Send(hello);
  AgentMessage data;
  data.type = AgentMessageType::kFileData;
  data.bytes.assign(3 * kAgentFilePieceBytes, 'z');  // more than a socket buffer holds
  (*agent)->Send(data);
  std::thread flusher([&] { EXPECT_TRUE((*agent)->Flush(20.0).ok()); });
  std::vector<AgentMessage> got = ReceiveAtLeast(*launcher, 2);
  flusher.join();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].host, "node9");
  EXPECT_EQ(got[1].bytes.size(), 3 * kAgentFilePieceBytes);

  AgentMessage stop;
  stop.type = AgentMessageType::kStop;
  launcher->Send(stop);
  ASSERT_TRUE(launcher->Flush(5.0).ok());
  got = ReceiveAtLeast(**agent, 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].type, AgentMessageType::kStop);

  agent->reset();  // the agent's end
  got = ReceiveAtLeast(*launcher, 1);
  EXPECT_TRUE(got.empty());
  EXPECT_TRUE(launcher->closed());
}

TEST(AgentConnectionTest, NoLauncherIsAnErrorNamingWhatWasTried) {
  Result<std::unique_ptr<AgentConnection>> agent = AgentConnection::Connect({"127.0.0.1:1", "no-such-host.invalid:5"}, 1.0);
  ASSERT_FALSE(agent.ok());
  EXPECT_THAT(agent.status().message(), ::testing::HasSubstr("cannot reach the launcher (127.0.0.1:1: Connection refused; no-such-host.invalid:5: "));
}

TEST(AgentConnectionTest, ThisHostsAddressesLeaveOutLoopback) {
  for (const std::string& a : HostAddresses()) EXPECT_NE(a.rfind("127.", 0), 0u) << a;
}

}  // namespace
}  // namespace lockstep
