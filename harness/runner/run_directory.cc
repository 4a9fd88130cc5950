#include "harness/runner/run_directory.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <system_error>

namespace lockstep {
namespace {

namespace fs = std::filesystem;

constexpr const char* kRunMarkerText =
    "This is a lockstep run directory (lockstep.run/1): report.json and one folder per scenario.\n"
    "`lockstep run --out` replaces what it wrote here; it refuses folders it did not make.\n";

// The first line of a scenario folder's marker: the proof that lockstep made the folder, with the
// folder's own id inside (a marker copied into another folder proves nothing there).
constexpr const char* kScenarioMarkerHead = "lockstep.scenario/1 id=";
// What markers said before they named their folder (accepted as lockstep's, word for word).
constexpr const char* kLegacyScenarioMarkerText = "made by lockstep run; replaced by the next run of this scenario\n";

Status WriteMarker(const fs::path& file, const std::string& text) {
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) return IoError("cannot write " + file.string());
  return Status::Ok();
}

// A report.json written by lockstep, from before run directories had a marker.
bool HasLockstepReport(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_regular_file(dir / kReportFile, ec)) return false;
  std::ifstream in(dir / kReportFile, std::ios::binary);
  std::string head(256, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<size_t>(in.gcount()));
  return head.find("\"lockstep.report/") != std::string::npos;
}

bool IsRunDirectory(const fs::path& dir) {
  std::error_code ec;
  return fs::is_regular_file(dir / kRunMarkerFile, ec) || HasLockstepReport(dir);
}

bool IsEmptyDirectory(const fs::path& dir) {
  std::error_code ec;
  return fs::is_empty(dir, ec) && !ec;
}

fs::path Resolved(const fs::path& p) {
  std::error_code ec;
  fs::path abs = fs::weakly_canonical(fs::absolute(p, ec), ec);
  return (ec ? fs::absolute(p) : abs).lexically_normal();
}

// `inner` is `outer` or lies below it (both resolved).
bool IsWithin(const fs::path& inner, const fs::path& outer) {
  auto i = inner.begin();
  for (auto o = outer.begin(); o != outer.end(); ++o, ++i) {
    if (o->empty()) continue;  // a trailing separator
    if (i == inner.end() || *i != *o) return false;
  }
  return true;
}

}  // namespace

bool IsScenarioDirectory(const fs::path& dir) {
  std::error_code ec;
  // Only a marker lockstep wrote proves the folder is lockstep's: never the names of its entries
  // (a user's train/ holding logs/ looks like a scenario folder).
  const fs::path marker = dir / kScenarioMarkerFile;
  if (!fs::is_regular_file(fs::symlink_status(marker, ec))) return false;
  std::ifstream in(marker, std::ios::binary);
  std::string text(512, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  if (text == kLegacyScenarioMarkerText) return true;
  const std::string want = std::string(kScenarioMarkerHead) + dir.filename().string() + "\n";
  return text.rfind(want, 0) == 0;
}

namespace {

// The run directories this process holds locked: fd by resolved path. A lock lives as long as the
// process (flock on the directory, released by the kernel however the process ends); the fd is
// close-on-exec, so no rank or other child inherits it.
std::mutex& LocksMutex() {
  static std::mutex m;
  return m;
}
std::map<std::string, int>& HeldLocks() {
  static std::map<std::string, int> held;
  return held;
}

std::string LockHolder(const fs::path& dir) {
  std::ifstream in(dir / kRunMarkerFile, std::ios::binary);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("run: ", 0) == 0) return " (" + line.substr(5) + ")";
  }
  return "";
}

}  // namespace

Status LockRunDirectory(const fs::path& dir) {
  const std::string key = Resolved(dir).string();
  std::lock_guard<std::mutex> guard(LocksMutex());
  if (HeldLocks().count(key)) return Status::Ok();
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return IoError("cannot open " + dir.string() + " to lock it: " + std::strerror(errno));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    ::close(fd);
    if (err == EWOULDBLOCK) {
      return InvalidArgumentError("--out " + dir.string() + ": another lockstep run is writing into it" +
                                  LockHolder(dir) + "; wait for it to end or choose another --out");
    }
    return IoError("cannot lock " + dir.string() + ": " + std::strerror(err));
  }
  HeldLocks()[key] = fd;
  return Status::Ok();
}

Status PrepareRunDirectory(const fs::path& dir, const std::vector<std::string>& ids, bool adopt_existing) {
  std::error_code ec;
  const fs::file_status status = fs::status(dir, ec);
  if (fs::exists(status)) {
    if (!fs::is_directory(status)) {
      return InvalidArgumentError("--out " + dir.string() + ": exists and is not a directory");
    }
    // A second run into a directory a live run is writing is refused before anything is judged.
    LOCKSTEP_RETURN_IF_ERROR(LockRunDirectory(dir));
    if (!IsRunDirectory(dir) && !IsEmptyDirectory(dir) && !adopt_existing) {
      return InvalidArgumentError("--out " + dir.string() +
                                  ": exists, is not empty and is not a lockstep run directory (it has no " +
                                  kRunMarkerFile + "); choose a new or empty directory, or pass --reuse-out to run "
                                  "into it anyway (lockstep still replaces only the folders it made)");
    }
  }
  for (const std::string& id : ids) {
    const fs::path scenario_dir = dir / id;
    const fs::file_status s = fs::symlink_status(scenario_dir, ec);
    if (!fs::exists(s)) continue;
    if (!fs::is_directory(s) || !IsScenarioDirectory(scenario_dir)) {
      return InvalidArgumentError("--out " + dir.string() + ": scenario " + id + " would replace " +
                                  scenario_dir.string() + ", which lockstep did not make (no " + kScenarioMarkerFile +
                                  "); move it away or choose another --out");
    }
  }
  if (fs::is_regular_file(dir / kReportFile, ec) && !IsRunDirectory(dir) && !HasLockstepReport(dir)) {
    // Adopted directory: its report.json is the user's, not a verdict of ours; keep it refused.
    return InvalidArgumentError("--out " + dir.string() + ": holds a " + kReportFile +
                                " that lockstep did not write; the run's report would replace it");
  }

  fs::create_directories(dir, ec);
  if (ec) return IoError("cannot create " + dir.string() + ": " + ec.message());
  LOCKSTEP_RETURN_IF_ERROR(LockRunDirectory(dir));
  LOCKSTEP_RETURN_IF_ERROR(WriteMarker(dir / kRunMarkerFile, std::string(kRunMarkerText) + "run: pid " +
                                                                 std::to_string(::getpid()) + "\n"));
  // The previous run's verdict goes before any rank starts: a run killed from here on leaves no
  // report rather than a stale one.
  const fs::path report = dir / kReportFile;
  if (fs::exists(fs::symlink_status(report, ec))) {
    fs::remove(report, ec);
    if (ec) return IoError("cannot remove the previous " + report.string() + ": " + ec.message());
  }
  return Status::Ok();
}

Status CheckReportOutput(const fs::path& run_dir, const std::vector<std::string>& ids, const std::string& flag,
                         const fs::path& output) {
  std::error_code ec;
  if (fs::is_directory(output, ec)) return InvalidArgumentError(flag + " " + output.string() + ": is a directory");
  const fs::path out = Resolved(output);
  const fs::path dir = Resolved(run_dir);
  for (const char* own : {kReportFile, kRunMarkerFile}) {
    if (out == (dir / own).lexically_normal()) {
      return InvalidArgumentError(flag + " " + output.string() + ": is the run directory's own " + own);
    }
  }
  for (const std::string& id : ids) {
    if (IsWithin(out, (dir / id).lexically_normal())) {
      return InvalidArgumentError(flag + " " + output.string() + ": lies inside scenario " + id +
                                  "'s folder, which the run replaces");
    }
  }
  const fs::path parent = out.parent_path();
  if (!parent.empty() && fs::exists(parent, ec) && !fs::is_directory(parent, ec)) {
    return InvalidArgumentError(flag + " " + output.string() + ": " + parent.string() + " is not a directory");
  }
  return Status::Ok();
}

Status ResetScenarioDirectory(const fs::path& dir) {
  std::error_code ec;
  if (fs::exists(fs::symlink_status(dir, ec))) {
    if (!fs::is_directory(fs::symlink_status(dir, ec)) || !IsScenarioDirectory(dir)) {
      return InvalidArgumentError(dir.string() + ": exists and lockstep did not make it (no " +
                                  std::string(kScenarioMarkerFile) + "); not replacing it");
    }
    fs::remove_all(dir, ec);
    if (ec) return IoError("cannot remove " + dir.string() + ": " + ec.message());
  }
  fs::create_directories(dir, ec);
  if (ec) return IoError("cannot create " + dir.string() + ": " + ec.message());
  return WriteMarker(dir / kScenarioMarkerFile,
                     std::string(kScenarioMarkerHead) + dir.filename().string() +
                         "\nmade by lockstep; replaced by the next run of this scenario\n");
}

}  // namespace lockstep
