#include "harness/launcher/trace_watcher.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <set>
#include <sstream>
#include <utility>

#include <nlohmann/json.hpp>

#include "harness/launcher/launch_command.h"

namespace lockstep {
namespace {

using json = nlohmann::json;

// The top-level fields the launcher reads; everything else (tensor lists, versions) is dropped
// while parsing, so a step record of a few hundred tensors costs no tree.
bool IsWantedKey(const std::string& key) {
  static const std::set<std::string> kWanted = {"type", "record", "step", "group", "seq", "op",
                                                "end_s", "pid", "host", "status"};
  return kWanted.count(key) > 0;
}

std::optional<int64_t> GetInt(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  if (it->is_number_float()) return static_cast<int64_t>(it->get<double>());
  return it->get<int64_t>();
}

std::string GetString(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// Maps the record type to what the launcher cares about. Several spellings are accepted so that
// the watchdog keeps working if the trace writer names its records a little differently.
TraceEvent::Kind KindOf(const std::string& type, bool has_end) {
  if (type == "header") return TraceEvent::Kind::kHeader;
  if (type == "step") return TraceEvent::Kind::kStep;
  if (type == "footer") return TraceEvent::Kind::kFooter;
  if (type == "heartbeat") return TraceEvent::Kind::kHeartbeat;
  if (type == "collective_end" || type == "coll_end" || type == "collective_complete" ||
      type == "collective_completed" || type == "collective_done") {
    return TraceEvent::Kind::kCollectiveEnd;
  }
  if (type == "collective_begin" || type == "collective_start" || type == "coll_begin" || type == "collective") {
    return has_end ? TraceEvent::Kind::kCollectiveEnd : TraceEvent::Kind::kCollectiveBegin;
  }
  return TraceEvent::Kind::kOther;
}

}  // namespace

bool IsErrorFooterStatus(const std::string& status) {
  return status != "ok" && status.rfind("stopped after step ", 0) != 0 && status.rfind("fail-fast: ", 0) != 0;
}

bool IsCommunicationFailure(const std::string& status) { return status.rfind("communication: ", 0) == 0; }

std::optional<TraceEvent> ParseTraceLine(const std::string& line) {
  const json::parser_callback_t keep_scalars = [](int depth, json::parse_event_t event, json& parsed) {
    if (depth == 1 && event == json::parse_event_t::key) return IsWantedKey(parsed.get<std::string>());
    return true;
  };
  json j = json::parse(line, keep_scalars, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;

  std::string type = GetString(j, "type");
  if (type.empty()) type = GetString(j, "record");
  const bool has_end = j.contains("end_s") && j["end_s"].is_number();

  TraceEvent e;
  e.kind = KindOf(type, has_end);
  e.step = GetInt(j, "step");
  e.pid = GetInt(j, "pid");
  e.host = GetString(j, "host");
  e.status = GetString(j, "status");
  if (e.kind == TraceEvent::Kind::kCollectiveBegin || e.kind == TraceEvent::Kind::kCollectiveEnd) {
    const auto seq = GetInt(j, "seq");
    if (!seq || *seq < 0) {
      e.kind = TraceEvent::Kind::kOther;  // a collective without a seq cannot be placed
    } else {
      CollectivePosition c;
      c.group = GetString(j, "group");
      if (c.group.empty()) c.group = "world";
      c.seq = static_cast<uint64_t>(*seq);
      c.op = GetString(j, "op");
      c.step = e.step.value_or(0);
      e.collective = c;
    }
  }
  return e;
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
  const auto mtime = std::filesystem::last_write_time(f.path, ec);
  if (ec) return false;
  f.progress.file_seen = true;
  if (size < f.offset) {
    // The file was replaced or truncated: start over on the new one.
    f.offset = 0;
    f.partial.clear();
    f.progress = RankProgress{};
    f.progress.file_seen = true;
  }
  if (size == f.offset && f.mtime && *f.mtime == mtime) return false;
  f.mtime = mtime;
  if (size == f.offset) return false;

  const int fd = ::open(f.path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  std::string chunk(static_cast<size_t>(size - f.offset), '\0');
  size_t got = 0;
  while (got < chunk.size()) {
    const ssize_t n = ::pread(fd, chunk.data() + got, chunk.size() - got, static_cast<off_t>(f.offset + got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  chunk.resize(got);
  f.offset += got;

  bool progressed = false;
  f.partial += chunk;
  size_t start = 0;
  for (size_t nl = f.partial.find('\n', start); nl != std::string::npos; nl = f.partial.find('\n', start)) {
    const std::string line = f.partial.substr(start, nl - start);
    start = nl + 1;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const auto event = ParseTraceLine(line);
    if (!event) {
      ++f.progress.unreadable_records;
      progressed = true;  // the rank wrote something, readable or not
      continue;
    }
    ++f.progress.records;
    if (event->kind != TraceEvent::Kind::kHeartbeat) progressed = true;
    Apply(r, f, *event);
  }
  f.partial.erase(0, start);
  if (progressed) f.progress.last_progress = std::chrono::steady_clock::now();
  return progressed;
}

void TraceWatcher::Apply(int r, RankFile& f, const TraceEvent& e) {
  RankProgress& p = f.progress;
  if (e.pid) p.pid = e.pid;
  if (!e.host.empty()) p.host = e.host;
  switch (e.kind) {
    case TraceEvent::Kind::kStep:
      if (e.step && (!p.last_step || *e.step > *p.last_step)) {
        p.last_step = e.step;
        if (on_step_) on_step_(r, *e.step);
      }
      break;
    case TraceEvent::Kind::kCollectiveBegin: {
      const CollectivePosition& c = *e.collective;
      p.last_begun = c;
      p.in_collective = true;
      auto [it, inserted] = p.begun_seq_by_group.emplace(c.group, c.seq);
      if (!inserted) it->second = std::max(it->second, c.seq);
      break;
    }
    case TraceEvent::Kind::kCollectiveEnd: {
      CollectivePosition c = *e.collective;
      // An end record may carry only group and seq: take op and step from the begin it closes.
      if (p.last_begun && p.last_begun->group == c.group && p.last_begun->seq == c.seq) {
        if (c.op.empty()) c.op = p.last_begun->op;
        if (!e.step) c.step = p.last_begun->step;
        p.in_collective = false;
      } else if (!c.op.empty()) {
        // One record for the whole collective (begin fields and end_s): begun and completed.
        p.last_begun = c;
        p.in_collective = false;
      }
      p.last_completed = c;
      auto [it, inserted] = p.begun_seq_by_group.emplace(c.group, c.seq);
      if (!inserted) it->second = std::max(it->second, c.seq);
      break;
    }
    case TraceEvent::Kind::kFooter:
      p.footer = true;
      p.footer_status = e.status;
      break;
    case TraceEvent::Kind::kHeader:
    case TraceEvent::Kind::kHeartbeat:
    case TraceEvent::Kind::kOther:
      break;
  }
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
