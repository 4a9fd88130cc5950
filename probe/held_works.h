// Which thread drops a collective's work last (the recording backend's hold,
// recording_process_group.cc).
#pragma once

#include <torch/csrc/distributed/c10d/Work.hpp>

#include <chrono>
#include <cstddef>

namespace lockstep::probe {

// Who drops a collective's work last. A backend's worker thread (ProcessGroupGloo::runLoop) lets go
// of a work after running it; when that is the last reference, the work's output tensors, owned by
// Python objects, are freed there, which takes the GIL. During Py_FinalizeEx that makes the thread
// exit through a noexcept frame: std::terminate, SIGABRT after a clean run (2026-11-27, a core
// dump of examples/accelerate_test_script.py; the probe's end record, written on that thread after
// the caller woke, widened the window). So the recording backend holds each work it returns, and
// lets go of it only where no one else holds it any more, on a thread that may take the GIL.
void HoldWork(const c10::intrusive_ptr<c10d::Work>& work);
// Drops, on this thread, the held works that no one else holds (their worker and caller let go).
void LetGoOfUnsharedWorks();
// Waits up to `timeout` until no held work is held by anyone else; true when none is. Call it with
// the GIL released: a worker letting go may need it.
bool WaitUntilWorksAreUnshared(std::chrono::milliseconds timeout);
// Drops every held work on this thread (at exit, after WaitUntilWorksAreUnshared).
void LetGoOfAllWorks();
// How many works are held (tests).
size_t HeldWorkCount();

}  // namespace lockstep::probe
