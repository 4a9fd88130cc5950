#include "harness/launcher/agent_hub.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "harness/launcher/launch_command.h"

namespace lockstep {

Result<std::unique_ptr<AgentHub>> AgentHub::Open(std::string token, std::filesystem::path trace_dir,
                                                 std::filesystem::path log_dir) {
  LOCKSTEP_ASSIGN_OR_RETURN(std::unique_ptr<AgentListener> listener, AgentListener::Open());
  return std::unique_ptr<AgentHub>(
      new AgentHub(std::move(listener), std::move(token), std::move(trace_dir), std::move(log_dir)));
}

AgentHub::~AgentHub() {
  for (const auto& [key, fd] : files_) ::close(fd);
}

std::vector<std::string> AgentHub::Endpoints() const {
  std::vector<std::string> out;
  const std::string port = ":" + std::to_string(listener_->port());
  for (const std::string& a : HostAddresses()) out.push_back(a + port);
  char host[256] = {};
  if (::gethostname(host, sizeof(host) - 1) == 0) out.push_back(std::string(host) + port);
  return out;
}

void AgentHub::Greet(Peer& peer) {
  for (const AgentMessage& m : for_every_agent_) peer.conn->Send(m);
}

Status AgentHub::WriteAt(AgentFile file, int rank, uint64_t offset, const std::string& bytes) {
  const auto key = std::make_pair(static_cast<int>(file), rank);
  auto it = files_.find(key);
  if (it == files_.end()) {
    const std::filesystem::path path =
        file == AgentFile::kTrace ? RankTracePath(trace_dir_, rank) : RankLogPath(log_dir_, rank);
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return IoError("cannot write " + path.string() + ": " + std::strerror(errno));
    it = files_.emplace(key, fd).first;
  }
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::pwrite(it->second, bytes.data() + done, bytes.size() - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return IoError(std::string("cannot write a rank's streamed file: ") + std::strerror(errno));
    done += static_cast<size_t>(n);
  }
  return Status::Ok();
}

Status AgentHub::Apply(Peer& peer, const AgentMessage& m) {
  if (peer.host < 0) {
    // Only a hello with the launch's token makes a peer one of our agents; anything else ends it.
    if (m.type != AgentMessageType::kHello || m.token != token_) {
      peer.conn.reset();
      return Status::Ok();
    }
    Host h;
    h.name = m.host;
    h.address = peer.conn->peer_address();
    h.agent_pid = m.pid;
    h.free_port = m.port;
    h.last_heard = Clock::now();
    hosts_.push_back(h);
    peer.host = static_cast<int>(hosts_.size()) - 1;
    Greet(peer);
    return Status::Ok();
  }
  Host& h = hosts_[static_cast<size_t>(peer.host)];
  h.last_heard = Clock::now();
  switch (m.type) {
    case AgentMessageType::kFileData:
      if (m.rank < 0) return Status::Ok();
      return WriteAt(m.file, m.rank, m.offset, m.bytes);
    case AgentMessageType::kRankCpu: {
      RemoteRank& r = ranks_[m.rank];
      r.host = h.name;
      r.pid = m.pid;
      r.cpu_s = m.cpu_s;
      r.cpu_at = Clock::now();
      r.cpu_new = true;
      return Status::Ok();
    }
    case AgentMessageType::kRankEnding: {
      RemoteRank& r = ranks_[m.rank];
      r.host = h.name;
      r.pid = m.pid;
      r.ending_signal = m.signal;
      return Status::Ok();
    }
    case AgentMessageType::kRankGone: {
      RemoteRank& r = ranks_[m.rank];
      r.host = h.name;
      r.pid = m.pid;
      r.gone = true;
      return Status::Ok();
    }
    case AgentMessageType::kError:
      if (error_.empty()) error_ = h.name + ": " + m.text;
      return Status::Ok();
    case AgentMessageType::kBye:
      h.said_bye = true;
      return Status::Ok();
    default:
      return Status::Ok();  // heartbeats
  }
}

Status AgentHub::Poll() {
  const Clock::time_point now = Clock::now();
  const bool beat = std::chrono::duration<double>(now - beat_).count() >= kHeartbeatS;
  if (beat) beat_ = now;
  while (std::unique_ptr<AgentConnection> c = listener_->Accept()) {
    Peer p;
    p.conn = std::move(c);
    peers_.push_back(std::move(p));
  }
  for (Peer& peer : peers_) {
    if (!peer.conn) continue;
    std::vector<AgentMessage> in;
    const Status read = peer.conn->Receive(in);
    for (const AgentMessage& m : in) {
      LOCKSTEP_RETURN_IF_ERROR(Apply(peer, m));
      if (!peer.conn) break;
    }
    if (!peer.conn) continue;
    if (!read.ok() || peer.conn->closed()) {
      if (peer.host >= 0) hosts_[static_cast<size_t>(peer.host)].connected = false;
      if (!read.ok() && error_.empty() && peer.host >= 0) {
        error_ = hosts_[static_cast<size_t>(peer.host)].name + ": " + read.message();
      }
      peer.conn.reset();
      continue;
    }
    if (beat && peer.host >= 0) {
      AgentMessage m;
      m.type = AgentMessageType::kHeartbeat;
      peer.conn->Send(m);
    }
    (void)peer.conn->Flush();
  }
  return Status::Ok();
}

void AgentHub::PutFile(const std::string& relative_path, const std::string& bytes) {
  AgentMessage m;
  m.type = AgentMessageType::kPutFile;
  m.path = relative_path;
  m.bytes = bytes;
  for_every_agent_.push_back(m);
  for (Peer& p : peers_) {
    if (p.conn && p.host >= 0) p.conn->Send(m);
  }
}

void AgentHub::Stop() {
  AgentMessage m;
  m.type = AgentMessageType::kStop;
  for_every_agent_.push_back(m);
  for (Peer& p : peers_) {
    if (p.conn && p.host >= 0) p.conn->Send(m);
  }
}

const AgentHub::Host* AgentHub::host(const std::string& name) const {
  for (const Host& h : hosts_) {
    if (h.name == name) return &h;
  }
  return nullptr;
}

const AgentHub::RemoteRank* AgentHub::rank(int r) const {
  auto it = ranks_.find(r);
  return it == ranks_.end() ? nullptr : &it->second;
}

std::vector<int> AgentHub::TakeCpuSamples() {
  std::vector<int> out;
  for (auto& [r, rr] : ranks_) {
    if (rr.cpu_new) {
      rr.cpu_new = false;
      out.push_back(r);
    }
  }
  return out;
}

std::vector<std::string> AgentHub::LostHosts(double silent_s) const {
  std::vector<std::string> out;
  const Clock::time_point now = Clock::now();
  for (const Host& h : hosts_) {
    if (h.said_bye) continue;
    if (!h.connected || std::chrono::duration<double>(now - h.last_heard).count() > silent_s) out.push_back(h.name);
  }
  return out;
}

bool AgentHub::AllDone(double silent_s) const {
  const std::vector<std::string> lost = LostHosts(silent_s);
  for (const Host& h : hosts_) {
    if (!h.said_bye && std::find(lost.begin(), lost.end(), h.name) == lost.end()) return false;
  }
  return true;
}

}  // namespace lockstep
