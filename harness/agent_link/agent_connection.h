// One TCP connection between the launcher and a node's agent, carrying AgentMessages both ways
// without ever blocking the caller's loop: sends are queued and written as the socket takes them,
// receives return whatever whole messages arrived. And the launcher's listening socket.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "harness/agent_link/agent_message.h"
#include "harness/core/status.h"

namespace lockstep {

class AgentConnection {
 public:
  // Takes `fd`, a connected TCP socket, and makes it non-blocking.
  explicit AgentConnection(int fd);
  ~AgentConnection();
  AgentConnection(const AgentConnection&) = delete;
  AgentConnection& operator=(const AgentConnection&) = delete;

  // Connects to the first of `endpoints` ("host:port", tried in turn, each for up to
  // `timeout_s`) that answers; the error names every endpoint tried and why it failed.
  static Result<std::unique_ptr<AgentConnection>> Connect(const std::vector<std::string>& endpoints, double timeout_s);

  void Send(const AgentMessage& m);
  // Writes what the socket takes now; with `wait_s` > 0, until everything queued is written or
  // that long has passed. An error when the peer is gone.
  Status Flush(double wait_s = 0.0);
  // Appends the whole messages that arrived to `out`. At the peer's end of stream closed() turns
  // true; a malformed stream is an error.
  Status Receive(std::vector<AgentMessage>& out);

  bool closed() const { return closed_; }
  size_t unsent() const { return out_.size() - out_at_; }
  int fd() const { return fd_; }
  // The peer's IP address as this side sees it (the node's routable address, for the launcher).
  const std::string& peer_address() const { return peer_; }

 private:
  int fd_;
  std::string out_;
  size_t out_at_ = 0;
  AgentMessageReader reader_;
  bool closed_ = false;
  std::string peer_;
};

// The launcher's listening socket, on every IPv4 interface and a port the kernel chooses.
class AgentListener {
 public:
  static Result<std::unique_ptr<AgentListener>> Open();
  ~AgentListener();
  int port() const { return port_; }
  int fd() const { return fd_; }
  // A connection waiting to be accepted, or nullptr.
  std::unique_ptr<AgentConnection> Accept();

 private:
  AgentListener(int fd, int port) : fd_(fd), port_(port) {}
  int fd_;
  int port_;
};

// This host's IPv4 addresses other than loopback, for the agents to connect to ("a.b.c.d").
std::vector<std::string> HostAddresses();

}  // namespace lockstep
