#include "harness/discovery/native_collective_log.h"

#include <mutex>
#include <utility>
#include <vector>

namespace lockstep {
namespace {

struct PendingEvent {
  bool end = false;
  CollectiveRecord collective;  // group and seq only, for an end
};

struct Log {
  std::mutex mu;
  // Held from recording to delivery: events reach the observer in the order they were recorded
  // (an end on NCCL's proxy thread never overtakes its begin on the calling thread), and those
  // handed over when it is set come before any recorded meanwhile.
  std::mutex deliver_mu;
  std::shared_ptr<NativeCollectiveObserver> observer;
  std::vector<PendingEvent> pending;
  uint64_t dropped = 0;
};

Log& TheLog() {
  static Log* log = new Log();  // never destroyed: NCCL's proxy thread may report during exit
  return *log;
}

void Deliver(const std::shared_ptr<NativeCollectiveObserver>& observer, const PendingEvent& event) {
  if (event.end) {
    observer->End(event.collective.group, event.collective.seq);
  } else {
    observer->Begin(event.collective);
  }
}

void Record(PendingEvent event) {
  Log& log = TheLog();
  std::lock_guard<std::mutex> deliver(log.deliver_mu);
  std::shared_ptr<NativeCollectiveObserver> observer;
  {
    std::lock_guard<std::mutex> lock(log.mu);
    observer = log.observer;
    if (!observer) {
      if (log.pending.size() < kMaxPendingNativeCollectives) {
        log.pending.push_back(std::move(event));
      } else {
        ++log.dropped;
      }
      return;
    }
  }
  Deliver(observer, event);
}

}  // namespace

void RecordNativeCollectiveBegin(const CollectiveRecord& collective) { Record({false, collective}); }

void RecordNativeCollectiveEnd(const std::string& group, uint64_t seq) {
  PendingEvent event;
  event.end = true;
  event.collective.group = group;
  event.collective.seq = seq;
  Record(std::move(event));
}

void SetNativeCollectiveObserver(std::shared_ptr<NativeCollectiveObserver> observer) {
  Log& log = TheLog();
  std::lock_guard<std::mutex> deliver(log.deliver_mu);
  std::vector<PendingEvent> earlier;
  {
    std::lock_guard<std::mutex> lock(log.mu);
    log.observer = observer;
    if (observer) earlier.swap(log.pending);
  }
  for (const PendingEvent& e : earlier) Deliver(observer, e);
}

uint64_t DroppedNativeCollectives() {
  Log& log = TheLog();
  std::lock_guard<std::mutex> lock(log.mu);
  return log.dropped;
}

void ResetNativeCollectivesForTest() {
  Log& log = TheLog();
  std::lock_guard<std::mutex> lock(log.mu);
  log.observer = nullptr;
  log.pending.clear();
  log.dropped = 0;
}

}  // namespace lockstep
