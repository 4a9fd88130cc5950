// Where a job's ranks meet (MASTER_PORT, and torchrun's and accelerate's --master-port): a port
// that was free when lockstep chose it and that no other program is handed before rank 0 binds
// it, seconds later (after importing torch).
//
// Choosing by binding port 0 and closing, as torchrun's standalone mode does, leaves the port in
// the kernel's automatic range: in those seconds any other program's bind to port 0 (gloo's pair
// listeners, NCCL's bootstrap, another job's store) may be handed the same port, and rank 0 then
// dies with EADDRINUSE while its peers connect to a stranger's socket. Measured on this machine:
// 5 of 2000 choices taken by 30 binds to port 0 made meanwhile; on the GPU run of 2026-11-26
// (12 catalog tests at once) one example's rank 0 exited 1 before torch.distributed came up.
// Ports below the automatic range are never handed out by the kernel, so only a program that
// asks for that very port can take it.
#pragma once

#include <cstdint>
#include <vector>

#include "harness/core/status.h"

namespace lockstep {

struct PortRange {
  int low = 0;
  int high = 0;
};

// The kernel's range for automatic ports (bind to port 0, a connect's source port):
// /proc/sys/net/ipv4/ip_local_port_range, or Linux's default (32768-60999) where unreadable.
PortRange EphemeralPortRange();

// Up to `count` distinct ports to try, in the 16384 ports below `ephemeral` (never below 1024),
// in an order that `seed` scatters so that jobs started together try different ones first. Empty
// when the automatic range leaves no room below it.
std::vector<int> RendezvousPortCandidates(PortRange ephemeral, uint64_t seed, int count);

// A TCP port on 127.0.0.1, free a moment ago: the first candidate that binds, else (no room below
// the automatic range, or all taken) one the kernel hands out for port 0.
Result<int> PickFreePort();

}  // namespace lockstep
