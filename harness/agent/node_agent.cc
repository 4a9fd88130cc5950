#include "harness/agent/node_agent.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <thread>

#include "harness/agent_link/agent_connection.h"
#include "harness/core/proc_stat.h"
#include "harness/launcher/launch_command.h"
#include "harness/launcher/process_tree.h"
#include "harness/launcher/rank_cpu.h"
#include "harness/launcher/rendezvous_port.h"
#include "harness/launcher/trace_watcher.h"

namespace lockstep {
namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string HostName() {
  char host[256] = {};
  return ::gethostname(host, sizeof(host) - 1) == 0 ? std::string(host) : std::string("unknown");
}

// A marker per host in the stage: two hosts' markers in one stage folder mean the folder is
// shared between nodes, where each node's ranks would overwrite the others' files.
constexpr const char* kHostMarkerPrefix = ".host-";

// What has been sent of one file.
struct SentFile {
  fs::path path;
  uint64_t sent = 0;
  bool seen = false;  // said to exist (an empty log is a file too)
};

class NodeAgent {
 public:
  explicit NodeAgent(const NodeAgentOptions& o) : o_(o), host_(HostName()), watcher_(StageTraceDir(o.stage), o.ranks) {
    for (int r = 0; r < o.ranks; ++r) {
      traces_.push_back({RankTracePath(StageTraceDir(o.stage), r)});
      logs_.push_back({RankLogPath(StageLogDir(o.stage), r)});
    }
    ranks_.resize(static_cast<size_t>(o.ranks));
  }

  int Run();

 private:
  struct LocalRank {
    std::optional<pid_t> pid;
    bool ending_said = false;
    bool gone = false;
  };
  Status PrepareStage();
  void Say(const std::string& problem);
  void Apply(const AgentMessage& m);
  // Sends what the files gained; `all`: everything, whatever is queued.
  void Stream(bool all);
  void StreamFile(AgentFile kind, int rank, SentFile& f, bool all);
  void WatchProcesses();
  // SIGTERM, then SIGKILL after the grace, to every process of the launch on this node.
  void StopLocalProcesses();
  void RemoveStage();

  NodeAgentOptions o_;
  std::string host_;
  std::unique_ptr<AgentConnection> conn_;
  TraceWatcher watcher_;
  std::vector<SentFile> traces_, logs_;
  std::vector<LocalRank> ranks_;
  Clock::time_point heard_ = Clock::now();
  bool stopping_ = false;
  bool stage_made_ = false;
};

Status NodeAgent::PrepareStage() {
  std::error_code ec;
  for (const fs::path& d : {StageTraceDir(o_.stage), StageLogDir(o_.stage)}) {
    fs::create_directories(d, ec);
    if (ec) return IoError("cannot create the node folder " + d.string() + " on " + host_ + ": " + ec.message());
  }
  stage_made_ = true;
  std::ofstream(o_.stage / (kHostMarkerPrefix + host_)) << ::getpid() << "\n";
  for (const auto& entry : fs::directory_iterator(o_.stage, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(kHostMarkerPrefix, 0) == 0 && name != kHostMarkerPrefix + host_) {
      stage_made_ = false;  // the other host's agent made it too: never ours alone to remove
      fs::remove(o_.stage / (kHostMarkerPrefix + host_), ec);
      return InvalidArgumentError("the node folder " + o_.stage.string() + " is shared between " + host_ + " and " +
                                     name.substr(std::string(kHostMarkerPrefix).size()) +
                                     ": --node-dir must name a folder local to each node");
    }
  }
  return Status::Ok();
}

void NodeAgent::Say(const std::string& problem) {
  std::fprintf(stderr, "lockstep-agent on %s: %s\n", host_.c_str(), problem.c_str());
  if (!conn_) return;
  AgentMessage m;
  m.type = AgentMessageType::kError;
  m.host = host_;
  m.text = problem;
  conn_->Send(m);
  (void)conn_->Flush(5.0);
}

void NodeAgent::Apply(const AgentMessage& m) {
  heard_ = Clock::now();
  switch (m.type) {
    case AgentMessageType::kPutFile: {
      const fs::path rel(m.path);
      bool safe = !rel.empty() && rel.is_relative();
      for (const auto& part : rel) safe = safe && part != "..";
      if (!safe) {
        Say("refused a file outside the node folder: " + m.path);
        return;
      }
      std::error_code ec;
      fs::create_directories((o_.stage / rel).parent_path(), ec);
      std::ofstream out(o_.stage / rel, std::ios::binary | std::ios::trunc);
      out.write(m.bytes.data(), static_cast<std::streamsize>(m.bytes.size()));
      if (!out) Say("cannot write " + (o_.stage / rel).string());
      return;
    }
    case AgentMessageType::kStop:
      stopping_ = true;
      return;
    default:
      return;  // heartbeats; nothing else is the launcher's to send
  }
}

void NodeAgent::StreamFile(AgentFile kind, int rank, SentFile& f, bool all) {
  struct stat st {};
  if (::stat(f.path.c_str(), &st) != 0) return;
  if (!f.seen) {
    // The file exists, even empty: the launcher's copy must too.
    f.seen = true;
    AgentMessage m;
    m.type = AgentMessageType::kFileData;
    m.rank = rank;
    m.file = kind;
    conn_->Send(m);
  }
  if (static_cast<uint64_t>(st.st_size) <= f.sent) return;
  const int fd = ::open(f.path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  std::string piece;
  while (f.sent < static_cast<uint64_t>(st.st_size)) {
    // Keep the queue short while the network is slow; the rest goes on a later pass.
    if (!all && conn_->unsent() > 4 * kAgentFilePieceBytes) break;
    piece.resize(std::min<uint64_t>(kAgentFilePieceBytes, static_cast<uint64_t>(st.st_size) - f.sent));
    ssize_t n = ::pread(fd, piece.data(), piece.size(), static_cast<off_t>(f.sent));
    if (n <= 0) break;
    // A trace's writer grows its file ahead of its records (trace_writer.h): only what is written
    // up to the first zero byte is sent; the rest on a later pass.
    bool ends = false;
    if (kind == AgentFile::kTrace) {
      const size_t data = TraceDataLength(std::string_view(piece.data(), static_cast<size_t>(n)));
      ends = data < static_cast<size_t>(n);
      n = static_cast<ssize_t>(data);
    }
    if (n == 0) break;
    piece.resize(static_cast<size_t>(n));
    AgentMessage m;
    m.type = AgentMessageType::kFileData;
    m.rank = rank;
    m.file = kind;
    m.offset = f.sent;
    m.bytes = piece;
    conn_->Send(m);
    f.sent += static_cast<uint64_t>(n);
    if (all) (void)conn_->Flush(5.0);
    if (ends) break;
  }
  ::close(fd);
}

void NodeAgent::Stream(bool all) {
  for (int r = 0; r < o_.ranks; ++r) {
    StreamFile(AgentFile::kTrace, r, traces_[static_cast<size_t>(r)], all);
    StreamFile(AgentFile::kLog, r, logs_[static_cast<size_t>(r)], all);
  }
}

void NodeAgent::WatchProcesses() {
  watcher_.Poll();
  for (int r = 0; r < o_.ranks; ++r) {
    LocalRank& lr = ranks_[static_cast<size_t>(r)];
    const RankProgress& p = watcher_.rank(r);
    if (lr.gone || !p.pid || p.host != host_) continue;
    lr.pid = static_cast<pid_t>(*p.pid);
    AgentMessage m;
    m.rank = r;
    m.pid = *lr.pid;
    if (const std::optional<ProcStat> stat = ReadProcStat(*lr.pid); stat && IsEnding(*stat)) {
      if (!lr.ending_said) {
        lr.ending_said = true;
        m.type = AgentMessageType::kRankEnding;
        m.signal = EndingSignal(*stat).value_or(-1);
        conn_->Send(m);
      }
      continue;
    }
    if (const std::optional<double> cpu = ProcessTreeCpuSeconds(*lr.pid)) {
      m.type = AgentMessageType::kRankCpu;
      m.cpu_s = *cpu;
      conn_->Send(m);
      continue;
    }
    // Gone: its last bytes first, then the news of its end (the launcher reads the footer, if
    // the rank wrote one, before it hears that the process is gone).
    lr.gone = true;
    Stream(true);
    m.type = AgentMessageType::kRankGone;
    conn_->Send(m);
  }
}

void NodeAgent::StopLocalProcesses() {
  const pid_t self = ::getpid();
  auto members = [&] {
    std::vector<pid_t> out;
    for (pid_t pid : FindProcessesWithEnv(kLaunchIdEnv, o_.launch_id)) {
      if (pid != self && IsAlive(pid)) out.push_back(pid);
    }
    return out;
  };
  std::vector<pid_t> left = members();
  if (left.empty()) return;
  for (pid_t pid : left) ::kill(pid, SIGTERM);
  const auto until = Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(o_.kill_grace_s * 1000));
  while (Clock::now() < until && !(left = members()).empty()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  for (int round = 0; round < 50 && !(left = members()).empty(); ++round) {
    for (pid_t pid : left) ::kill(pid, SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

void NodeAgent::RemoveStage() {
  if (!stage_made_) return;
  std::error_code ec;
  fs::remove_all(o_.stage, ec);
}

int NodeAgent::Run() {
  Result<std::unique_ptr<AgentConnection>> conn = AgentConnection::Connect(o_.launcher, 10.0);
  if (!conn.ok()) {
    std::fprintf(stderr, "lockstep-agent on %s: %s\n", host_.c_str(), conn.status().message().c_str());
    return 3;
  }
  conn_ = std::move(conn).value();
  AgentMessage hello;
  hello.type = AgentMessageType::kHello;
  hello.token = o_.token;
  hello.host = host_;
  hello.pid = ::getpid();
  if (Result<int> port = PickFreePort(); port.ok()) hello.port = *port;
  conn_->Send(hello);
  // After the hello, so that the launcher hears why this node cannot take part.
  if (Status s = PrepareStage(); !s.ok()) {
    Say(s.message());
    RemoveStage();
    return 3;
  }

  Clock::time_point beat = Clock::now(), watched = Clock::now();
  int status = 0;
  for (;;) {
    std::vector<AgentMessage> in;
    if (Status s = conn_->Receive(in); !s.ok()) {
      std::fprintf(stderr, "lockstep-agent on %s: %s\n", host_.c_str(), s.message().c_str());
      status = 3;
      break;
    }
    for (const AgentMessage& m : in) Apply(m);
    if (stopping_) break;
    if (conn_->closed() || Since(heard_) > o_.launcher_timeout_s) {
      std::fprintf(stderr, "lockstep-agent on %s: the launcher is gone (%s); stopping this node's processes of the launch\n",
                   host_.c_str(), conn_->closed() ? "its connection closed" : "silent too long");
      status = 3;
      break;
    }
    Stream(false);
    if (Since(watched) >= 1.0) {
      watched = Clock::now();
      WatchProcesses();
    }
    if (Since(beat) >= o_.heartbeat_s) {
      beat = Clock::now();
      AgentMessage m;
      m.type = AgentMessageType::kHeartbeat;
      conn_->Send(m);
    }
    (void)conn_->Flush();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  StopLocalProcesses();
  if (status == 0) {
    // Every byte the ranks wrote, then bye: the launcher waits for it before it reads the traces.
    Stream(true);
    AgentMessage bye;
    bye.type = AgentMessageType::kBye;
    bye.text = "stopped by the launcher";
    conn_->Send(bye);
    (void)conn_->Flush(10.0);
  }
  RemoveStage();
  return status;
}

}  // namespace

int RunNodeAgent(const NodeAgentOptions& options) { return NodeAgent(options).Run(); }

}  // namespace lockstep
