#include "harness/agent_link/agent_message.h"

#include <cstring>

namespace lockstep {
namespace {

template <typename T>
void Put(std::string& out, T v) {
  unsigned char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  // Little-endian on the wire whatever the host (x86 and Arm hosts are little-endian already).
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  for (size_t i = 0; i < sizeof(T) / 2; ++i) std::swap(b[i], b[sizeof(T) - 1 - i]);
#endif
  out.append(reinterpret_cast<const char*>(b), sizeof(T));
}

void PutString(std::string& out, const std::string& s) {
  Put<uint32_t>(out, static_cast<uint32_t>(s.size()));
  out += s;
}

class Cursor {
 public:
  Cursor(const char* data, size_t n) : p_(data), end_(data + n) {}
  template <typename T>
  bool Get(T& v) {
    if (static_cast<size_t>(end_ - p_) < sizeof(T)) return false;
    unsigned char b[sizeof(T)];
    std::memcpy(b, p_, sizeof(T));
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    for (size_t i = 0; i < sizeof(T) / 2; ++i) std::swap(b[i], b[sizeof(T) - 1 - i]);
#endif
    std::memcpy(&v, b, sizeof(T));
    p_ += sizeof(T);
    return true;
  }
  bool GetString(std::string& s) {
    uint32_t n = 0;
    if (!Get(n) || static_cast<size_t>(end_ - p_) < n) return false;
    s.assign(p_, n);
    p_ += n;
    return true;
  }
  bool done() const { return p_ == end_; }

 private:
  const char* p_;
  const char* end_;
};

bool KnownType(uint8_t t) {
  return t >= static_cast<uint8_t>(AgentMessageType::kHello) && t <= static_cast<uint8_t>(AgentMessageType::kStop);
}

}  // namespace

std::string EncodeAgentMessage(const AgentMessage& m) {
  std::string body;
  Put<uint8_t>(body, static_cast<uint8_t>(m.type));
  Put<int32_t>(body, m.rank);
  Put<int64_t>(body, m.pid);
  Put<int32_t>(body, m.port);
  Put<int32_t>(body, m.signal);
  Put<uint8_t>(body, static_cast<uint8_t>(m.file));
  Put<uint64_t>(body, m.offset);
  Put<double>(body, m.cpu_s);
  for (const std::string* s : {&m.token, &m.host, &m.text, &m.path, &m.bytes}) PutString(body, *s);
  std::string frame;
  Put<uint32_t>(frame, static_cast<uint32_t>(body.size()));
  return frame + body;
}

Status AgentMessageReader::Feed(const char* data, size_t n) {
  if (!error_.ok()) return error_;
  buffer_.append(data, n);
  size_t at = 0;
  while (buffer_.size() - at >= 4) {
    uint32_t len = 0;
    Cursor head(buffer_.data() + at, 4);
    head.Get(len);
    if (len > kMaxAgentFrameBytes) {
      error_ = InvalidArgumentError("agent stream: a frame of " + std::to_string(len) + " bytes (at most " +
                                    std::to_string(kMaxAgentFrameBytes) + ")");
      return error_;
    }
    if (buffer_.size() - at - 4 < len) break;
    Cursor c(buffer_.data() + at + 4, len);
    AgentMessage m;
    uint8_t type = 0, file = 0;
    bool ok = c.Get(type) && KnownType(type) && c.Get(m.rank) && c.Get(m.pid) && c.Get(m.port) && c.Get(m.signal) &&
              c.Get(file) && file <= static_cast<uint8_t>(AgentFile::kLog) && c.Get(m.offset) && c.Get(m.cpu_s);
    for (std::string* s : {&m.token, &m.host, &m.text, &m.path, &m.bytes}) ok = ok && c.GetString(*s);
    if (!ok || !c.done()) {
      error_ = InvalidArgumentError("agent stream: a malformed frame (" + std::to_string(len) + " bytes, type " +
                                    std::to_string(type) + ")");
      return error_;
    }
    m.type = static_cast<AgentMessageType>(type);
    m.file = static_cast<AgentFile>(file);
    ready_.push_back(std::move(m));
    at += 4 + len;
  }
  buffer_.erase(0, at);
  return Status::Ok();
}

std::optional<AgentMessage> AgentMessageReader::Next() {
  if (ready_.empty()) return std::nullopt;
  AgentMessage m = std::move(ready_.front());
  ready_.pop_front();
  return m;
}

}  // namespace lockstep
