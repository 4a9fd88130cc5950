#include "probe/work_completion.h"

#include <ATen/core/ivalue.h>

#include <utility>

namespace lockstep::probe {

void WhenWorkEnds(const c10::intrusive_ptr<c10d::Work>& work, std::function<void()> ended) {
  if (!work) {
    ended();
    return;
  }
  // c10d::Work has no query for whether it has a future (its base getFuture throws a fixed
  // message, no number in it), so this asks by catching.
  c10::intrusive_ptr<c10::ivalue::Future> future;
  try {
    future = work->getFuture();
  } catch (const c10::Error&) {
    future.reset();
  }
  if (!future) {
    ended();
    return;
  }
  future->addCallback([ended = std::move(ended)](c10::ivalue::Future&) { ended(); });
}

}  // namespace lockstep::probe
