// Where in the program the collective this thread is issuing was called. The probe's wrappers of
// torch.distributed's functions (lockstep/_sites.py) set it around the call, holding the GIL;
// RecordingProcessGroup reads it on the same thread, without the GIL (torch releases it to run a
// collective), into the collective's begin record (`where`). A collective a library issues from
// its own C++ (DDP's gradient buckets, on autograd's threads) has none.
#pragma once

#include <string>

namespace lockstep::probe {

// Sets this thread's site; "" clears it.
void SetCollectiveSite(std::string where);

// This thread's site, or "".
const std::string& CollectiveSite();

}  // namespace lockstep::probe
