#include "harness/agent_link/agent_message.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace lockstep {
namespace {

AgentMessage FileData(int rank, uint64_t offset, std::string bytes) {
  AgentMessage m;
  m.type = AgentMessageType::kFileData;
  m.rank = rank;
  m.file = AgentFile::kLog;
  m.offset = offset;
  m.bytes = std::move(bytes);
  return m;
}

TEST(AgentMessageTest, EveryFieldComesBack) {
  AgentMessage m;
  m.type = AgentMessageType::kHello;
  m.rank = -1;
  m.pid = 123456789012;
  m.port = 29500;
  m.signal = 11;
  m.file = AgentFile::kLog;
  m.offset = 1ull << 40;
  m.cpu_s = 12.5;
  m.token = "secret";
  m.host = "node1";
  m.text = "why";
  m.path = "run/scenario.yaml";
  m.bytes = std::string("a\0b\n", 4);
  AgentMessageReader reader;
  const std::string frame = EncodeAgentMessage(m);
  ASSERT_TRUE(reader.Feed(frame.data(), frame.size()).ok());
  std::optional<AgentMessage> back = reader.Next();
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->type, m.type);
  EXPECT_EQ(back->pid, m.pid);
  EXPECT_EQ(back->port, m.port);
  EXPECT_EQ(back->signal, m.signal);
  EXPECT_EQ(back->file, m.file);
  EXPECT_EQ(back->offset, m.offset);
  EXPECT_EQ(back->cpu_s, m.cpu_s);
  EXPECT_EQ(back->token, m.token);
  EXPECT_EQ(back->host, m.host);
  EXPECT_EQ(back->text, m.text);
  EXPECT_EQ(back->path, m.path);
  EXPECT_EQ(back->bytes, m.bytes);
  EXPECT_FALSE(reader.Next().has_value());
}

// TCP delivers a stream: frames split anywhere and several in one read.
TEST(AgentMessageTest, FramesSplitAnywhereAreReassembled) {
  std::string stream;
  for (int i = 0; i < 5; ++i) stream += EncodeAgentMessage(FileData(i, 10u * i, std::string(static_cast<size_t>(i) * 7, 'x')));
  for (size_t cut = 1; cut < 40; cut += 3) {
    AgentMessageReader reader;
    for (size_t at = 0; at < stream.size(); at += cut) {
      ASSERT_TRUE(reader.Feed(stream.data() + at, std::min(cut, stream.size() - at)).ok());
    }
    for (int i = 0; i < 5; ++i) {
      std::optional<AgentMessage> m = reader.Next();
      ASSERT_TRUE(m.has_value()) << "cut " << cut << " message " << i;
      EXPECT_EQ(m->rank, i);
      EXPECT_EQ(m->offset, 10u * i);
      EXPECT_EQ(m->bytes.size(), static_cast<size_t>(i) * 7);
    }
    EXPECT_EQ(reader.pending(), 0u);
  }
}

TEST(AgentMessageTest, MalformedFramesAreErrors) {
  // An unknown type.
  std::string frame = EncodeAgentMessage(FileData(0, 0, "x"));
  frame[4] = 99;
  AgentMessageReader reader;
  EXPECT_FALSE(reader.Feed(frame.data(), frame.size()).ok());
  // After an error the stream is not read further.
  const std::string good = EncodeAgentMessage(FileData(0, 0, "x"));
  EXPECT_FALSE(reader.Feed(good.data(), good.size()).ok());
  // A frame longer than allowed.
  AgentMessageReader big;
  const char huge[4] = {'\xff', '\xff', '\xff', '\x7f'};
  EXPECT_FALSE(big.Feed(huge, 4).ok());
  // A string length past the frame's end.
  std::string cut = EncodeAgentMessage(FileData(0, 0, "abcdef"));
  cut[0] = static_cast<char>(cut[0] - 3);
  AgentMessageReader short_reader;
  EXPECT_FALSE(short_reader.Feed(cut.data(), cut.size() - 3).ok());
}

}  // namespace
}  // namespace lockstep
