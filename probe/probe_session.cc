#include "probe/probe_session.h"

#include <chrono>

namespace lockstep::probe {
namespace {

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

Result<std::shared_ptr<ProbeSession>> ProbeSession::Open(const std::string& path, const TraceHeader& header) {
  // A new file only: two processes of one run that both call themselves rank R (world_size=1
  // hard-coded) are refused by name, never interleaved into one unreadable file.
  Result<std::unique_ptr<TraceWriter>> writer = TraceWriter::Open(path, header, TraceOpen::kNew);
  if (!writer.ok()) return writer.status();
  return std::shared_ptr<ProbeSession>(new ProbeSession(std::move(writer).value(), path));
}

ProbeSession::ProbeSession(std::unique_ptr<TraceWriter> writer, std::string path)
    : writer_(std::move(writer)),
      path_(std::move(path)),
      start_ns_(NowNs()),
      native_collectives_(writer_.get(), [this] { return WallSeconds(); }, [this] { return step(); }) {}

// Whole microseconds, as lockstep-rank's clock: the trace writes them without the shortest-form
// search (harness/trace/double_text.h).
double ProbeSession::WallSeconds() const { return static_cast<double>((NowNs() - start_ns_) / 1000) / 1e6; }

Status ProbeSession::WriteStep(const StepRecord& record) { return writer_->WriteStep(record); }

Status ProbeSession::WriteHeartbeat() { return writer_->WriteHeartbeat(step(), WallSeconds()); }

Status ProbeSession::WriteFooter(const TraceFooter& footer) { return writer_->WriteFooter(footer); }

Status ProbeSession::WriteLog(const std::string& line) { return writer_->WriteLog(line); }

uint64_t ProbeSession::CollectiveStarted(CollectiveRecord record) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    record.seq = seq_[record.group]++;
  }
  record.step = step();
  record.start_s = WallSeconds();
  Status s = writer_->WriteCollectiveBegin(record);
  if (!s.ok()) {
    std::lock_guard<std::mutex> lock(mu_);
    if (record_status_.ok()) record_status_ = s;
  }
  return record.seq;
}

void ProbeSession::CollectiveEnded(const std::string& group, uint64_t seq) {
  Status s = writer_->WriteCollectiveEnd(group, seq, WallSeconds());
  if (!s.ok()) {
    std::lock_guard<std::mutex> lock(mu_);
    if (record_status_.ok()) record_status_ = s;
  }
}

void ProbeSession::WriteDiscovery(const DiscoveryRecord& record) {
  Status s = writer_->WriteDiscovery(record);
  if (!s.ok()) {
    std::lock_guard<std::mutex> lock(mu_);
    if (record_status_.ok()) record_status_ = s;
  }
}

void ProbeSession::DefineReplicaGroup(int id, std::vector<int> ranks, std::string label) {
  if (id < 1) return;  // 0 is the world, never defined
  std::lock_guard<std::mutex> lock(mu_);
  if (replica_groups_.size() <= static_cast<size_t>(id)) replica_groups_.resize(static_cast<size_t>(id) + 1);
  replica_groups_[static_cast<size_t>(id)] =
      std::make_shared<const ReplicaGroup>(ReplicaGroup{std::move(ranks), std::move(label)});
}

Result<std::shared_ptr<const ReplicaGroup>> ProbeSession::ReplicaGroupById(int id) const {
  if (id == 0) return std::shared_ptr<const ReplicaGroup>();
  std::lock_guard<std::mutex> lock(mu_);
  if (id < 0 || static_cast<size_t>(id) >= replica_groups_.size() || replica_groups_[static_cast<size_t>(id)] == nullptr) {
    return InvalidArgumentError("replica group " + std::to_string(id) + " was never defined");
  }
  return replica_groups_[static_cast<size_t>(id)];
}

Status ProbeSession::record_status() const {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!record_status_.ok()) return record_status_;
  }
  return native_collectives_.status();
}

}  // namespace lockstep::probe
