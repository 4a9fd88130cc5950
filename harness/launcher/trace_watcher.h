// The launcher's view of the ranks' traces while they run: it polls each rank-<r>.trace, reads
// only the records appended since the last poll (up to the file's first zero byte: the writer
// stores into a mapping of a file it grows ahead, trace_writer.h) through the trace's one parser
// (harness/trace/trace_parser.h, without decoding the steps' tensors), and keeps per rank the
// last step, the last collective begun and completed, and whether the footer was written.
// It never needs the whole trace in memory. A record the parser refuses is counted as
// unreadable and skipped: the watchdog judges progress, the checkers judge the trace.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "harness/result/launch_report.h"
#include "harness/trace/footer_status.h"  // IsErrorFooterStatus, IsCommunicationFailure
#include "harness/trace/trace_parser.h"
#include "harness/trace/trace_record.h"
#include "harness/launcher/launch_spec.h"

namespace lockstep {

struct RankProgress {
  bool file_seen = false;
  int64_t records = 0;           // whole records read so far
  int64_t unreadable_records = 0;
  std::optional<int64_t> last_step;
  std::optional<CollectivePosition> last_begun;
  std::optional<CollectivePosition> last_completed;
  std::map<std::string, uint64_t> begun_seq_by_group;  // the last seq begun in each group
  bool in_collective = false;    // its last collective began and has not ended: it waits in it
  bool footer = false;
  std::string footer_status;
  std::optional<int64_t> pid;
  std::string host;
  std::chrono::steady_clock::time_point last_progress{};  // last non-heartbeat record
};

// Whether a rank has begun training: its step-0 record, its footer, or a collective of its first
// step (a hang inside step 1, as in Muon's all_gather that one rank skips, is a hang to judge, not
// a start-up still under way: the collectives before it, a DDP's initial broadcast, are step 0's).
bool HasStarted(const RankProgress& p);

class TraceWatcher {
 public:
  TraceWatcher(std::filesystem::path trace_dir, int ranks, ProgressCallback on_step = {});

  // Reads what the traces gained since the last call. True when some rank made progress: a new
  // record other than a heartbeat (a heartbeat says the process lives, not that it advances).
  bool Poll();

  const RankProgress& rank(int r) const { return ranks_[static_cast<size_t>(r)].progress; }
  int size() const { return static_cast<int>(ranks_.size()); }

  // The ranks the others wait for: per group, the members whose last begun seq is behind the
  // group's furthest begun seq (every rank is a member of "world"; of other groups, the ranks
  // whose trace mentions them). Of those, the ones not waiting inside a collective themselves
  // (a rank behind in one group because it waits in another is a victim, not the cause), unless
  // that leaves none. Without any rank behind, the ranks whose last step is behind the others'.
  // Empty when no rank is behind.
  std::vector<int> StalledRanks() const;

  // Of the ranks `waiting` to start (HasStarted), the ones the others wait for: those behind in
  // some group, or that never began one the others did (a rank waiting inside a collective
  // another never began is its victim); `waiting` itself when none is behind.
  std::vector<int> BehindAtStartup(const std::vector<int>& waiting) const;

  // One line per rank: last step, last collective begun and completed.
  std::string Describe(int r) const;

 private:
  struct RankFile {
    std::filesystem::path path;
    uint64_t offset = 0;
    std::optional<TraceParser> parser;  // from the file's first byte on (it follows `tensors` records)
    TraceLines lines;                   // whole lines of the bytes read; the rest waits for its end
    RankProgress progress;
  };
  bool ReadNew(int r, RankFile& f);
  void Apply(int r, RankFile& f, const TraceRecord& record);

  std::filesystem::path trace_dir_;
  ProgressCallback on_step_;
  std::vector<RankFile> ranks_;
};

}  // namespace lockstep
