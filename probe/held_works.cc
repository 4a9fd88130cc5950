#include "probe/held_works.h"

#include <algorithm>
#include <iterator>
#include <mutex>
#include <thread>
#include <vector>

namespace lockstep::probe {

namespace {

struct HeldWorks {
  std::mutex mu;
  std::vector<c10::intrusive_ptr<c10d::Work>> works;
};

// Never destroyed: dropping a work in static destruction, after Python is gone, is what this
// avoids.
HeldWorks& Held() {
  static HeldWorks* held = new HeldWorks;
  return *held;
}

}  // namespace

void HoldWork(const c10::intrusive_ptr<c10d::Work>& work) {
  if (!work) return;
  HeldWorks& h = Held();
  std::lock_guard<std::mutex> lock(h.mu);
  h.works.push_back(work);
}

void LetGoOfUnsharedWorks() {
  std::vector<c10::intrusive_ptr<c10d::Work>> unshared;
  {
    HeldWorks& h = Held();
    std::lock_guard<std::mutex> lock(h.mu);
    auto shared_end = std::partition(h.works.begin(), h.works.end(),
                                     [](const c10::intrusive_ptr<c10d::Work>& w) { return w.use_count() > 1; });
    std::move(shared_end, h.works.end(), std::back_inserter(unshared));
    h.works.erase(shared_end, h.works.end());
  }
  // Destroyed here, outside the lock: freeing their tensors may take the GIL.
}

bool WaitUntilWorksAreUnshared(std::chrono::milliseconds timeout) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    {
      HeldWorks& h = Held();
      std::lock_guard<std::mutex> lock(h.mu);
      bool shared = false;
      for (const auto& w : h.works) shared = shared || w.use_count() > 1;
      if (!shared) return true;
    }
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

void LetGoOfAllWorks() {
  std::vector<c10::intrusive_ptr<c10d::Work>> all;
  {
    HeldWorks& h = Held();
    std::lock_guard<std::mutex> lock(h.mu);
    all.swap(h.works);
  }
}

size_t HeldWorkCount() {
  HeldWorks& h = Held();
  std::lock_guard<std::mutex> lock(h.mu);
  return h.works.size();
}

}  // namespace lockstep::probe
