#include "harness/comm/rendezvous_options.h"

#include <cerrno>
#include <cstdlib>

namespace lockstep {
namespace {

Result<long> ParseLong(const char* name, const char* text, long min, long max) {
  errno = 0;
  char* end = nullptr;
  long value = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || errno == ERANGE || value < min || value > max) {
    return InvalidArgumentError(std::string(name) + "='" + text + "' must be an integer in [" +
                                std::to_string(min) + ", " + std::to_string(max) + "]");
  }
  return value;
}

}  // namespace

Result<RendezvousOptions> RendezvousOptions::FromEnvironment(int rank, int world_size) {
  RendezvousOptions options;
  options.rank = rank;
  options.world_size = world_size;
  if (const char* timeout = std::getenv("LOCKSTEP_COMM_TIMEOUT_S")) {
    LOCKSTEP_ASSIGN_OR_RETURN(long seconds, ParseLong("LOCKSTEP_COMM_TIMEOUT_S", timeout, 1, 86400));
    options.timeout = std::chrono::seconds(seconds);
  }
  if (const char* file = std::getenv("LOCKSTEP_STORE_FILE"); file != nullptr && *file != '\0') {
    options.store_file = file;
    return options;
  }
  const char* addr = std::getenv("MASTER_ADDR");
  const char* port = std::getenv("MASTER_PORT");
  if (addr == nullptr || *addr == '\0' || port == nullptr) {
    return InvalidArgumentError(
        "the store rendezvous needs MASTER_ADDR and MASTER_PORT (as torchrun sets them) or LOCKSTEP_STORE_FILE");
  }
  options.master_addr = addr;
  LOCKSTEP_ASSIGN_OR_RETURN(long port_number, ParseLong("MASTER_PORT", port, 1, 65535));
  options.master_port = static_cast<int>(port_number);
  return options;
}

}  // namespace lockstep
