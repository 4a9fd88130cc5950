#include "harness/launcher/trace_folder.h"

#include <algorithm>
#include <map>

#include <nlohmann/json.hpp>

#include "harness/core/untrusted_input.h"
#include "harness/launcher/launch_command.h"
#include "harness/trace/trace_stream.h"
#include "harness/trace/trace_writer.h"

namespace lockstep {

std::optional<int> TraceFileRank(const std::string& name) {
  const std::string prefix = "rank-", suffix = ".trace";
  if (name.size() <= prefix.size() + suffix.size() || name.rfind(prefix, 0) != 0 ||
      name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) {
    return std::nullopt;
  }
  const std::string digits = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  if (digits.empty() || digits.size() > 6 || digits.find_first_not_of("0123456789") != std::string::npos) {
    return std::nullopt;
  }
  const int rank = std::stoi(digits);
  if (TraceFileName(rank) != name) return std::nullopt;
  return rank;
}

std::optional<int> HighestTraceRank(const std::filesystem::path& dir) {
  std::optional<int> highest;
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return std::nullopt;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (auto rank = TraceFileRank(entry.path().filename().string())) highest = std::max(highest.value_or(0), *rank);
  }
  return highest;
}

namespace {

namespace fs = std::filesystem;

// What the probe wrote is a few hundred bytes; anything past this is not its file.
constexpr size_t kMaxSpawnFileBytes = 64 * 1024;

// The JSON object in `file`, or nullopt (missing, too long, not an object).
std::optional<nlohmann::json> ReadSmallJson(const fs::path& file) {
  std::error_code ec;
  if (!fs::is_regular_file(file, ec) || fs::file_size(file, ec) > kMaxSpawnFileBytes) return std::nullopt;
  nlohmann::json j = nlohmann::json::parse(ReadFileTail(file, kMaxSpawnFileBytes), nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return std::nullopt;
  return j;
}

std::string StringField(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? CutLongText(it->get<std::string>(), 200) : "";
}

int IntField(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer()) return 0;
  const int64_t v = it->get<int64_t>();
  return v > 0 && v < (1 << 20) ? static_cast<int>(v) : 0;
}

// k of a folder named spawn-<k> (k from 1, no leading zero), if it is one.
std::optional<int> SpawnFolderIndex(const std::string& name) {
  const std::string prefix = "spawn-";
  if (name.rfind(prefix, 0) != 0) return std::nullopt;
  const std::string digits = name.substr(prefix.size());
  if (digits.empty() || digits.size() > 6 || digits[0] == '0' ||
      digits.find_first_not_of("0123456789") != std::string::npos) {
    return std::nullopt;
  }
  return std::stoi(digits);
}

// The world size rank 0 declared (its header), read without the rest of its trace.
int DeclaredWorld(const fs::path& dir) {
  Result<std::unique_ptr<RankTraceStream>> stream = RankTraceStream::Open(dir / TraceFileName(0));
  if (!stream.ok() || !(*stream)->ReadHeader().ok() || (*stream)->trace().missing) return 0;
  const int world = (*stream)->trace().header.world_size;
  return world > 0 && world < (1 << 20) ? world : 0;
}

}  // namespace

std::string Spawning::Label() const {
  return "spawning " + std::to_string(index) + (function.empty() ? "" : " (" + function + ")");
}

std::vector<Spawning> SpawningsIn(const fs::path& trace_dir) {
  std::map<int, Spawning> found;
  std::error_code ec;
  if (!fs::is_directory(trace_dir, ec)) return {};
  for (const auto& entry : fs::directory_iterator(trace_dir, ec)) {
    const std::optional<int> k = SpawnFolderIndex(entry.path().filename().string());
    if (!k || !entry.is_directory(ec)) continue;
    Spawning s;
    s.index = *k;
    s.dir = entry.path();
    if (std::optional<nlohmann::json> said = ReadSmallJson(s.dir / "spawning.json")) {
      s.function = StringField(*said, "function");
      s.nprocs = IntField(*said, "nprocs");
    }
    s.world = DeclaredWorld(s.dir);
    if (s.world == 0) {
      const std::optional<int> highest = HighestTraceRank(s.dir);
      s.world = highest ? *highest + 1 : s.nprocs;
    }
    found[*k] = std::move(s);
  }
  std::vector<Spawning> out;
  for (auto& [k, s] : found) out.push_back(std::move(s));
  return out;
}

std::optional<Spawning> SpawningBegun(const fs::path& trace_dir, int k) {
  Spawning s;
  s.index = k;
  s.dir = trace_dir / ("spawn-" + std::to_string(k));
  std::optional<nlohmann::json> said = ReadSmallJson(s.dir / "spawning.json");
  if (!said) return std::nullopt;
  s.function = StringField(*said, "function");
  s.nprocs = IntField(*said, "nprocs");
  s.world = std::max(1, s.nprocs);
  return s;
}

bool EveryRankEnded(const Spawning& spawning) {
  for (int r = 0; r < std::max(1, spawning.world); ++r) {
    Result<std::unique_ptr<RankTraceStream>> stream = RankTraceStream::Open(spawning.dir / TraceFileName(r));
    if (!stream.ok()) return false;
    while (true) {
      Result<std::optional<StepRecord>> step = (*stream)->NextStep();
      if (!step.ok()) return false;
      if (!*step) break;
    }
    if ((*stream)->trace().missing || !(*stream)->trace().footer) return false;
  }
  return true;
}

std::optional<std::string> RefusedSpawn(const fs::path& trace_dir) {
  const fs::path file = trace_dir / "spawn-refused.json";
  std::error_code ec;
  if (!fs::exists(file, ec)) return std::nullopt;
  std::optional<nlohmann::json> said = ReadSmallJson(file);
  const std::string message = said ? StringField(*said, "message") : "";
  if (!message.empty()) return message;
  return "the program starts its own ranks with torch.multiprocessing.spawn; run it with --ranks 1";
}

}  // namespace lockstep
