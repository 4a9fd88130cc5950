#include "harness/launcher/trace_watcher.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <map>
#include <set>
#include <sstream>
#include <type_traits>
#include <utility>
#include <variant>

#include "harness/launcher/launch_command.h"

namespace lockstep {

bool HasStarted(const RankProgress& p) {
  return p.last_step.has_value() || p.footer || (p.last_begun && p.last_begun->step >= 1);
}

std::vector<int> TraceWatcher::BehindAtStartup(const std::vector<int>& waiting) const {
  std::map<std::string, uint64_t> furthest;
  for (const RankFile& f : ranks_) {
    for (const auto& [group, seq] : f.progress.begun_seq_by_group) furthest[group] = std::max(furthest[group], seq);
  }
  std::vector<int> behind;
  for (int r : waiting) {
    const RankProgress& p = rank(r);
    bool is_behind = false;
    for (const auto& [group, seq] : furthest) {
      auto mine = p.begun_seq_by_group.find(group);
      // A rank absent from a group other than world may simply not be its member.
      if (mine == p.begun_seq_by_group.end() ? group == "world" : mine->second < seq) is_behind = true;
    }
    if (furthest.empty() || is_behind) behind.push_back(r);
  }
  return behind.empty() ? waiting : behind;
}

TraceWatcher::TraceWatcher(std::filesystem::path trace_dir, int ranks, ProgressCallback on_step)
    : trace_dir_(std::move(trace_dir)), on_step_(std::move(on_step)) {
  ranks_.resize(static_cast<size_t>(std::max(ranks, 0)));
  for (int r = 0; r < ranks; ++r) ranks_[static_cast<size_t>(r)].path = RankTracePath(trace_dir_, r);
}

bool TraceWatcher::Poll() {
  bool progressed = false;
  for (int r = 0; r < size(); ++r) progressed = ReadNew(r, ranks_[static_cast<size_t>(r)]) || progressed;
  return progressed;
}

bool TraceWatcher::ReadNew(int r, RankFile& f) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(f.path, ec);
  if (ec) return false;  // not written yet
  f.progress.file_seen = true;
  if (size < f.offset) {
    // The file was replaced or truncated: start over on the new one.
    f.offset = 0;
    f.parser.reset();
    f.lines.Clear();
    f.progress = RankProgress{};
    f.progress.file_seen = true;
  }
  if (size == f.offset) return false;

  // The writer stores records into a mapping of a file it grows ahead of them (trace_writer.h):
  // neither the size nor the modification time says what is new, the first zero byte does
  // (TraceDataLength). Read in pieces up to it; the rest is read again on the next pass.
  const int fd = ::open(f.path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  constexpr size_t kPiece = 64 * 1024;
  std::string chunk;
  for (;;) {
    const size_t at = chunk.size();
    const size_t want = std::min<uint64_t>(kPiece, size - f.offset - at);
    if (want == 0) break;
    chunk.resize(at + want);
    ssize_t n = 0;
    do {
      n = ::pread(fd, chunk.data() + at, want, static_cast<off_t>(f.offset + at));
    } while (n < 0 && errno == EINTR);
    const size_t got = n > 0 ? static_cast<size_t>(n) : 0;
    const size_t data = TraceDataLength(std::string_view(chunk.data() + at, got));
    chunk.resize(at + data);
    if (data < want) break;
  }
  ::close(fd);
  if (chunk.empty()) return false;
  f.offset += chunk.size();

  bool progressed = false;
  if (!f.parser) f.parser.emplace(f.path.filename().string(), TraceParser::Options{/*tensors=*/false});
  f.lines.Append(chunk);
  while (std::optional<std::string_view> line = f.lines.Next()) {
    if (line->find_first_not_of(" \t\r") == std::string_view::npos) {
      (void)f.parser->Parse(*line);  // keeps the parser's line count
      continue;
    }
    Result<std::optional<TraceRecord>> record = f.parser->Parse(*line);
    progressed = progressed || !record.ok() || !*record || !std::holds_alternative<HeartbeatRecord>(**record);
    if (!record.ok()) {
      ++f.progress.unreadable_records;  // the rank wrote something, readable or not
      continue;
    }
    ++f.progress.records;
    if (*record) Apply(r, f, **record);
  }
  if (progressed) f.progress.last_progress = std::chrono::steady_clock::now();
  return progressed;
}

void TraceWatcher::Apply(int r, RankFile& f, const TraceRecord& record) {
  RankProgress& p = f.progress;
  auto note_begun = [&p](const CollectivePosition& c) {
    auto [it, inserted] = p.begun_seq_by_group.emplace(c.group, c.seq);
    if (!inserted) it->second = std::max(it->second, c.seq);
  };
  std::visit(
      [&](const auto& rec) {
        using T = std::decay_t<decltype(rec)>;
        if constexpr (std::is_same_v<T, TraceHeader>) {
          if (rec.pid != 0) p.pid = rec.pid;
          if (!rec.host.empty()) p.host = rec.host;
        } else if constexpr (std::is_same_v<T, StepRecord>) {
          if (!p.last_step || rec.step > *p.last_step) {
            p.last_step = rec.step;
            if (on_step_) on_step_(r, rec.step);
          }
        } else if constexpr (std::is_same_v<T, CollectiveRecord>) {
          CollectivePosition c;
          c.group = rec.group.empty() ? "world" : rec.group;
          c.seq = rec.seq;
          c.op = rec.op;
          c.step = rec.step;
          p.last_begun = c;
          // A begin record that already carries end_s stands for the whole collective.
          p.in_collective = !rec.end_s.has_value();
          if (rec.end_s) p.last_completed = c;
          note_begun(c);
        } else if constexpr (std::is_same_v<T, CollectiveEndRecord>) {
          CollectivePosition c;
          c.group = rec.group.empty() ? "world" : rec.group;
          c.seq = rec.seq;
          // An end record carries only group and seq: op and step come from the begin it closes.
          if (p.last_begun && p.last_begun->group == c.group && p.last_begun->seq == c.seq) {
            c.op = p.last_begun->op;
            c.step = p.last_begun->step;
            p.in_collective = false;
          }
          p.last_completed = c;
          note_begun(c);
        } else if constexpr (std::is_same_v<T, TraceFooter>) {
          p.footer = true;
          p.footer_status = rec.status;
        }
        // Discoveries, heartbeats and logs say nothing about where a rank waits.
      },
      record);
}

std::vector<int> TraceWatcher::StalledRanks() const {
  // group -> rank -> last begun seq (nullopt: a member that never began one in this group).
  std::map<std::string, std::map<int, std::optional<uint64_t>>> groups;
  for (int r = 0; r < size(); ++r) {
    for (const auto& [group, seq] : rank(r).begun_seq_by_group) groups[group][r] = seq;
  }
  if (groups.count("world")) {
    for (int r = 0; r < size(); ++r) groups["world"].emplace(r, std::nullopt);
  }
  std::set<int> behind;
  for (const auto& [group, members] : groups) {
    std::optional<uint64_t> furthest;
    for (const auto& [r, seq] : members) {
      if (seq && (!furthest || *seq > *furthest)) furthest = seq;
    }
    for (const auto& [r, seq] : members) {
      if (!seq || *seq < *furthest) behind.insert(r);
    }
  }
  std::set<int> stalled;
  for (int r : behind) {
    if (!rank(r).in_collective) stalled.insert(r);
  }
  if (stalled.empty()) stalled = behind;
  if (stalled.empty() && size() > 1) {
    int64_t lowest = INT64_MAX, highest = INT64_MIN;
    for (int r = 0; r < size(); ++r) {
      const int64_t s = rank(r).last_step.value_or(-1);
      lowest = std::min(lowest, s);
      highest = std::max(highest, s);
    }
    if (lowest < highest) {
      for (int r = 0; r < size(); ++r) {
        if (rank(r).last_step.value_or(-1) == lowest) stalled.insert(r);
      }
    }
  }
  return {stalled.begin(), stalled.end()};
}

std::string TraceWatcher::Describe(int r) const {
  const RankProgress& p = rank(r);
  std::ostringstream os;
  auto coll = [&os](const CollectivePosition& c) {
    os << c.group << " seq " << c.seq;
    if (!c.op.empty()) os << " " << c.op;
    os << " (step " << c.step << ")";
  };
  os << "rank " << r << ": ";
  if (!p.file_seen) {
    os << "no trace";
    return os.str();
  }
  os << "last step ";
  if (p.last_step) {
    os << *p.last_step;
  } else {
    os << "none";
  }
  os << "; last collective begun: ";
  if (p.last_begun) {
    coll(*p.last_begun);
  } else {
    os << "none";
  }
  os << "; completed: ";
  if (p.last_completed) {
    coll(*p.last_completed);
  } else {
    os << "none";
  }
  if (p.footer) os << "; finished";
  return os.str();
}

}  // namespace lockstep
