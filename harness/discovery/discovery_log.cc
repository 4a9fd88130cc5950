#include "harness/discovery/discovery_log.h"

#include <mutex>
#include <utility>

namespace lockstep {
namespace {

struct Log {
  std::mutex mu;
  // Held while the observer runs, so that the calls handed over when it is set reach it before
  // any call recorded meanwhile on another thread.
  std::mutex deliver_mu;
  std::vector<DiscoveryRecord> calls;
  std::function<void(const DiscoveryRecord&)> observer;
  std::string phase = "startup";
  int64_t step = 0;
};

Log& TheLog() {
  static Log* log = new Log();  // never destroyed: MPI_Finalize may record during exit
  return *log;
}

}  // namespace

void SetDiscoveryContext(const std::string& phase, int64_t step) {
  Log& log = TheLog();
  std::lock_guard<std::mutex> lock(log.mu);
  log.phase = phase;
  log.step = step;
}

ScopedDiscoveryPhase::ScopedDiscoveryPhase(const std::string& phase) {
  Log& log = TheLog();
  std::lock_guard<std::mutex> lock(log.mu);
  previous_ = std::exchange(log.phase, phase);
}

ScopedDiscoveryPhase::~ScopedDiscoveryPhase() {
  Log& log = TheLog();
  std::lock_guard<std::mutex> lock(log.mu);
  log.phase = previous_;
}

namespace {

void Record(const std::string& name, const std::string* phase, const int64_t* step, const std::string& where,
            const std::string& comm) {
  DiscoveryRecord record;
  std::function<void(const DiscoveryRecord&)> observer;
  {
    Log& log = TheLog();
    std::lock_guard<std::mutex> lock(log.mu);
    record.call = static_cast<int>(log.calls.size()) + 1;
    record.name = name;
    record.phase = phase ? *phase : log.phase;
    record.step = step ? *step : log.step;
    record.where = where;
    record.comm = comm;
    log.calls.push_back(record);
    observer = log.observer;
  }
  // Outside `mu`: the observer writes a trace record and may take its own locks.
  if (observer) {
    std::lock_guard<std::mutex> deliver(TheLog().deliver_mu);
    observer(record);
  }
}

}  // namespace

void RecordDiscovery(const std::string& name, const std::string& where, const std::string& comm) {
  Record(name, nullptr, nullptr, where, comm);
}

void RecordDiscoveryAt(const std::string& name, const std::string& phase, int64_t step, const std::string& where,
                       const std::string& comm) {
  Record(name, &phase, &step, where, comm);
}

std::vector<DiscoveryRecord> DiscoveryCalls() {
  Log& log = TheLog();
  std::lock_guard<std::mutex> lock(log.mu);
  return log.calls;
}

int DiscoveryCount() {
  Log& log = TheLog();
  std::lock_guard<std::mutex> lock(log.mu);
  return static_cast<int>(log.calls.size());
}

void SetDiscoveryObserver(std::function<void(const DiscoveryRecord&)> observer) {
  Log& log = TheLog();
  std::lock_guard<std::mutex> deliver(log.deliver_mu);
  std::vector<DiscoveryRecord> earlier;
  {
    std::lock_guard<std::mutex> lock(log.mu);
    log.observer = observer;
    if (observer) earlier = log.calls;
  }
  for (const DiscoveryRecord& r : earlier) observer(r);
}

void ResetDiscoveryForTest() {
  Log& log = TheLog();
  std::lock_guard<std::mutex> lock(log.mu);
  log.calls.clear();
  log.observer = nullptr;
  log.phase = "startup";
  log.step = 0;
}

}  // namespace lockstep
