#include "harness/comm/rendezvous_store.h"

#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <exception>

namespace lockstep {

Result<c10::intrusive_ptr<c10d::Store>> CreateRendezvousStore(const RendezvousOptions& options) {
  const std::string where = options.store_file.empty()
                                ? "TCPStore " + options.master_addr + ":" + std::to_string(options.master_port)
                                : "FileStore " + options.store_file;
  const std::string context = "rank " + std::to_string(options.rank) + ": rendezvous at " + where;
  if (options.world_size < 1 || options.rank < 0 || options.rank >= options.world_size) {
    return InvalidArgumentError(context + ": rank outside a world of " + std::to_string(options.world_size));
  }
  try {
    c10::intrusive_ptr<c10d::Store> store;
    if (!options.store_file.empty()) {
      store = c10::make_intrusive<c10d::FileStore>(options.store_file, options.world_size);
    } else {
      c10d::TCPStoreOptions tcp;
      tcp.port = static_cast<std::uint16_t>(options.master_port);
      tcp.isServer = options.rank == 0;
      tcp.numWorkers = static_cast<std::size_t>(options.world_size);
      tcp.waitWorkers = true;
      tcp.timeout = options.timeout;
      store = c10::make_intrusive<c10d::TCPStore>(options.master_addr, tcp);
    }
    store->setTimeout(options.timeout);
    return store;
  } catch (const c10::Error& e) {
    return CommunicationError(context + ": " + e.what_without_backtrace());
  } catch (const std::exception& e) {
    return CommunicationError(context + ": " + e.what());
  }
}

}  // namespace lockstep
