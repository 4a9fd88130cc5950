// The launcher's end of a multi-host launch (docs/LAUNCHER.md, "Several hosts"): it listens for
// the node agents (node_agent.h), writes every trace and log byte they stream into the run's own
// folders at the offsets they give (so the copies are byte for byte what the ranks wrote, and a
// node that dies keeps everything it sent), and keeps what they say of their ranks' processes
// (CPU use, ending, gone) and when each host was last heard. launcher.cc reads it as it reads
// /proc for local ranks.
#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "harness/agent_link/agent_connection.h"
#include "harness/core/status.h"

namespace lockstep {

class AgentHub {
 public:
  using Clock = std::chrono::steady_clock;

  struct Host {
    std::string name;     // its hostname, from the hello
    std::string address;  // its address as this side sees it: routable from here
    int64_t agent_pid = 0;
    int free_port = 0;    // a port that was free on it
    Clock::time_point last_heard{};
    bool connected = true;
    bool said_bye = false;
  };
  struct RemoteRank {
    std::string host;
    int64_t pid = 0;
    std::optional<double> cpu_s;   // its process tree's CPU seconds at cpu_at
    Clock::time_point cpu_at{};
    bool cpu_new = false;          // a sample since TakeCpuSamples
    std::optional<int> ending_signal;  // seen ending (-1 inside: the signal unknown)
    bool gone = false;             // its process is gone (its files' last bytes arrived before)
  };

  // Listens on every interface for agents that say `token`; their files go to trace_dir and
  // log_dir (rank-<r>.trace, rank-<r>.log).
  static Result<std::unique_ptr<AgentHub>> Open(std::string token, std::filesystem::path trace_dir,
                                                std::filesystem::path log_dir);
  ~AgentHub();
  AgentHub(const AgentHub&) = delete;
  AgentHub& operator=(const AgentHub&) = delete;

  int port() const { return listener_->port(); }
  const std::string& token() const { return token_; }
  // "address:port" for each of this host's addresses, then "hostname:port".
  std::vector<std::string> Endpoints() const;

  // Accepts, reads and applies what arrived; writes what is queued, and a heartbeat to every agent
  // each kHeartbeatS (an agent that hears nothing from its launcher for its timeout takes it for
  // gone and stops its node's processes). An error for what cannot go on (a file that cannot be
  // written); an agent's own error is error_text().
  Status Poll();
  static constexpr double kHeartbeatS = 0.5;

  // Sends `bytes` as `relative_path` of every node's stage, to the agents connected now and to
  // those that connect later.
  void PutFile(const std::string& relative_path, const std::string& bytes);
  // Tells every agent to stop, and again to those that connect later.
  void Stop();

  const std::vector<Host>& hosts() const { return hosts_; }
  const Host* host(const std::string& name) const;
  const RemoteRank* rank(int r) const;
  // Ranks with a CPU sample since the last call, with their sample; marks them taken.
  std::vector<int> TakeCpuSamples();
  // Hosts that said hello and then went silent for `silent_s` or closed without saying bye.
  std::vector<std::string> LostHosts(double silent_s) const;
  // Whether every host that said hello has said bye or is lost (`silent_s`).
  bool AllDone(double silent_s) const;
  // The first problem an agent said it had ("node1: ..."), or "".
  const std::string& error_text() const { return error_; }

 private:
  struct Peer {
    std::unique_ptr<AgentConnection> conn;
    int host = -1;  // index into hosts_, once it said hello with the token
  };
  AgentHub(std::unique_ptr<AgentListener> listener, std::string token, std::filesystem::path trace_dir,
           std::filesystem::path log_dir)
      : listener_(std::move(listener)), token_(std::move(token)), trace_dir_(std::move(trace_dir)),
        log_dir_(std::move(log_dir)) {}
  Status Apply(Peer& peer, const AgentMessage& m);
  Status WriteAt(AgentFile file, int rank, uint64_t offset, const std::string& bytes);
  void Greet(Peer& peer);

  std::unique_ptr<AgentListener> listener_;
  std::string token_;
  std::filesystem::path trace_dir_, log_dir_;
  std::vector<Peer> peers_;
  std::vector<Host> hosts_;
  std::map<int, RemoteRank> ranks_;
  std::map<std::pair<int, int>, int> files_;  // (file kind, rank) -> fd
  std::vector<AgentMessage> for_every_agent_;  // files put and the stop, in order
  std::string error_;
  Clock::time_point beat_{};
};

}  // namespace lockstep
