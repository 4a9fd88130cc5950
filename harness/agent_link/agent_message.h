// What lockstep's launcher and its agent on each node say to each other over one TCP connection
// (docs/LAUNCHER.md, "Several hosts"): the agent streams its node's rank traces and logs, their
// processes' CPU use and ends, and heartbeats; the launcher sends the run folder's files the
// ranks read and, at the end, stop. One frame per message: a little-endian u32 length of what
// follows, then the message's fields in a fixed order (every message carries every field; the
// unused ones are empty), so a reader checks one layout. Plain data, no sockets here.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>

#include "harness/core/status.h"

namespace lockstep {

enum class AgentMessageType : uint8_t {
  kHello = 1,       // agent: token, host, its pid, a port free on its host (port)
  kFileData = 2,    // agent: `bytes` of rank `rank`'s trace (file 0) or log (file 1) at `offset`
  kRankCpu = 3,     // agent: rank, pid, CPU seconds its process tree used so far (cpu_s)
  kRankEnding = 4,  // agent: rank, pid, the signal its process is ending by (-1: not known)
  kRankGone = 5,    // agent: rank, pid: its process is gone (every byte of its files sent before)
  kHeartbeat = 6,   // either side: still here
  kError = 7,       // agent: it cannot do its job (text); the launch fails with that message
  kBye = 8,         // agent: every byte is sent; it ends (text: why)
  kPutFile = 9,     // launcher: a file of the run folder for the node's stage (path, bytes)
  kStop = 10,       // launcher: the launch ends: stop this node's processes, send the rest, bye
};

enum class AgentFile : uint8_t { kTrace = 0, kLog = 1 };

struct AgentMessage {
  AgentMessageType type = AgentMessageType::kHeartbeat;
  int32_t rank = -1;
  int64_t pid = 0;
  int32_t port = 0;
  int32_t signal = -1;
  AgentFile file = AgentFile::kTrace;
  uint64_t offset = 0;
  double cpu_s = 0.0;
  std::string token;
  std::string host;
  std::string text;
  std::string path;
  std::string bytes;
};

// The largest frame either side sends or accepts: a file is sent in pieces well under it.
inline constexpr uint32_t kMaxAgentFrameBytes = 8u << 20;
inline constexpr size_t kAgentFilePieceBytes = 1u << 20;

// One frame: length, then the fields.
std::string EncodeAgentMessage(const AgentMessage& m);

// Frames from a byte stream: Feed what arrived, then take the whole messages. A malformed frame
// (an unknown type, a length past the frame or over kMaxAgentFrameBytes) is an error, after which
// the stream is not read further.
class AgentMessageReader {
 public:
  Status Feed(const char* data, size_t n);
  std::optional<AgentMessage> Next();
  // Bytes of an incomplete frame still waiting for the rest.
  size_t pending() const { return buffer_.size(); }

 private:
  std::string buffer_;
  std::deque<AgentMessage> ready_;
  Status error_;
};

}  // namespace lockstep
