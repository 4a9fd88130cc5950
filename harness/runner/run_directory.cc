#include "harness/runner/run_directory.h"

#include <fstream>
#include <set>
#include <system_error>

namespace lockstep {
namespace {

namespace fs = std::filesystem;

constexpr const char* kRunMarkerText =
    "This is a lockstep run directory (lockstep.run/1): report.json and one folder per scenario.\n"
    "`lockstep run --out` replaces what it wrote here; it refuses folders it did not make.\n";

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
  if (fs::is_regular_file(dir / kScenarioMarkerFile, ec)) return true;
  static const std::set<std::string> kLayout = {"traces", "logs", "reference", "repeat", "repro"};
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    if (!kLayout.count(e.path().filename().string()) || !e.is_directory(ec)) return false;
  }
  return !ec;
}

Status PrepareRunDirectory(const fs::path& dir, const std::vector<std::string>& ids, bool adopt_existing) {
  std::error_code ec;
  const fs::file_status status = fs::status(dir, ec);
  if (fs::exists(status)) {
    if (!fs::is_directory(status)) {
      return InvalidArgumentError("--out " + dir.string() + ": exists and is not a directory");
    }
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
  LOCKSTEP_RETURN_IF_ERROR(WriteMarker(dir / kRunMarkerFile, kRunMarkerText));
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
  return WriteMarker(dir / kScenarioMarkerFile, "made by lockstep run; replaced by the next run of this scenario\n");
}

}  // namespace lockstep
