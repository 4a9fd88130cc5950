// When a collective issued through a c10d backend has ended, as far as its caller can tell: the
// probe writes a collective's end record then (recording_process_group.cc).
#pragma once

#include <torch/csrc/distributed/c10d/Work.hpp>

#include <functional>

namespace lockstep::probe {

// Calls `ended` once, when `work` has ended:
//   - a work with a future: from the future's callback, when its result is ready;
//   - a work without one (c10d::Work's getFuture throws): at once, the backend finished inside
//     the call;
//   - no work at all: at once. A backend may return none for a synchronous collective
//     (async_op=False): ProcessGroupNCCL since torch 2.7 enqueues it on the caller's current
//     stream and returns no Work, and distributed_c10d.py then skips work.wait(). What follows on
//     that stream sees the result, which is what "ended" means to the program.
void WhenWorkEnds(const c10::intrusive_ptr<c10d::Work>& work, std::function<void()> ended);

}  // namespace lockstep::probe
