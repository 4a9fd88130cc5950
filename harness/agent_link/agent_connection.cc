#include "harness/agent_link/agent_connection.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace lockstep {
namespace {

using Clock = std::chrono::steady_clock;

void MakeNonBlocking(int fd) {
  const int flags = ::fcntl(fd, F_GETFL, 0);
  ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

std::string PeerOf(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return "";
  char text[INET6_ADDRSTRLEN] = {};
  if (addr.ss_family == AF_INET) {
    ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(&addr)->sin_addr, text, sizeof(text));
  } else if (addr.ss_family == AF_INET6) {
    ::inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(&addr)->sin6_addr, text, sizeof(text));
  }
  return text;
}

// Connects `fd`-to-be to host:port within `timeout_s`; the socket, or an error saying why not.
Result<int> ConnectOne(const std::string& endpoint, double timeout_s) {
  const size_t colon = endpoint.rfind(':');
  if (colon == std::string::npos) return InvalidArgumentError("not host:port: " + endpoint);
  const std::string host = endpoint.substr(0, colon), port = endpoint.substr(colon + 1);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (int rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    return UnavailableError(endpoint + ": " + ::gai_strerror(rc));
  }
  std::string why = "no address";
  for (addrinfo* a = found; a; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) continue;
    int rc = ::connect(fd, a->ai_addr, a->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      rc = ::poll(&p, 1, static_cast<int>(timeout_s * 1000));
      int err = 0;
      socklen_t len = sizeof(err);
      if (rc == 1 && ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0) {
        rc = 0;
      } else {
        errno = rc == 0 ? ETIMEDOUT : err;
        rc = -1;
      }
    }
    if (rc == 0) {
      ::freeaddrinfo(found);
      return fd;
    }
    why = std::strerror(errno);
    ::close(fd);
  }
  ::freeaddrinfo(found);
  return UnavailableError(endpoint + ": " + why);
}

}  // namespace

AgentConnection::AgentConnection(int fd) : fd_(fd), peer_(PeerOf(fd)) { MakeNonBlocking(fd_); }

AgentConnection::~AgentConnection() {
  if (fd_ >= 0) ::close(fd_);
}

Result<std::unique_ptr<AgentConnection>> AgentConnection::Connect(const std::vector<std::string>& endpoints,
                                                                  double timeout_s) {
  std::string tried;
  for (const std::string& e : endpoints) {
    Result<int> fd = ConnectOne(e, timeout_s);
    if (fd.ok()) return std::make_unique<AgentConnection>(*fd);
    tried += (tried.empty() ? "" : "; ") + fd.status().message();
  }
  return UnavailableError("cannot reach the launcher (" + (tried.empty() ? std::string("no endpoint given") : tried) + ")");
}

void AgentConnection::Send(const AgentMessage& m) {
  if (out_at_ > 0 && out_at_ == out_.size()) {
    out_.clear();
    out_at_ = 0;
  }
  out_ += EncodeAgentMessage(m);
}

Status AgentConnection::Flush(double wait_s) {
  const auto until = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(wait_s));
  while (out_at_ < out_.size()) {
    const ssize_t n = ::send(fd_, out_.data() + out_at_, out_.size() - out_at_, MSG_NOSIGNAL);
    if (n > 0) {
      out_at_ += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      closed_ = true;
      return UnavailableError(std::string("send to ") + peer_ + ": " + std::strerror(errno));
    }
    const auto left = std::chrono::duration<double>(until - Clock::now()).count();
    if (left <= 0) break;
    pollfd p{fd_, POLLOUT, 0};
    ::poll(&p, 1, std::max(1, static_cast<int>(left * 1000)));
  }
  if (out_at_ == out_.size()) {
    out_.clear();
    out_at_ = 0;
  }
  return Status::Ok();
}

Status AgentConnection::Receive(std::vector<AgentMessage>& out) {
  char buf[64 * 1024];
  while (!closed_) {
    const ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
    if (n > 0) {
      LOCKSTEP_RETURN_IF_ERROR(reader_.Feed(buf, static_cast<size_t>(n)));
      continue;
    }
    if (n == 0) {
      closed_ = true;
      break;
    }
    if (errno == EAGAIN || errno == EWOULDBLOCK) break;
    if (errno == EINTR) continue;
    closed_ = true;  // reset by the peer, or the link gone
    break;
  }
  while (std::optional<AgentMessage> m = reader_.Next()) out.push_back(std::move(*m));
  return Status::Ok();
}

Result<std::unique_ptr<AgentListener>> AgentListener::Open() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return IoError(std::string("socket: ") + std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || ::listen(fd, 64) != 0) {
    const std::string why = std::strerror(errno);
    ::close(fd);
    return IoError("cannot listen for the agents: " + why);
  }
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  return std::unique_ptr<AgentListener>(new AgentListener(fd, ntohs(addr.sin_port)));
}

AgentListener::~AgentListener() {
  if (fd_ >= 0) ::close(fd_);
}

std::unique_ptr<AgentConnection> AgentListener::Accept() {
  const int fd = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
  if (fd < 0) return nullptr;
  return std::make_unique<AgentConnection>(fd);
}

std::vector<std::string> HostAddresses() {
  std::vector<std::string> out;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return out;
  for (ifaddrs* a = list; a; a = a->ifa_next) {
    if (!a->ifa_addr || a->ifa_addr->sa_family != AF_INET) continue;
    const auto* in = reinterpret_cast<sockaddr_in*>(a->ifa_addr);
    if ((ntohl(in->sin_addr.s_addr) >> 24) == 127) continue;
    char text[INET_ADDRSTRLEN] = {};
    ::inet_ntop(AF_INET, &in->sin_addr, text, sizeof(text));
    out.push_back(text);
  }
  ::freeifaddrs(list);
  return out;
}

}  // namespace lockstep
