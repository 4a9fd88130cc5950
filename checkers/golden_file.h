// Golden files: a scenario's loss curve and final tensor digests on one platform, stored under
// <fixtures>/golden/<scenario id>/<platform>.json (schema lockstep.golden/1, docs/CHECKERS.md).
// `lockstep bless` writes them with WriteGolden; the golden checker compares runs against them.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "harness/core/status.h"
#include "harness/trace/trace_record.h"

namespace lockstep {

inline constexpr const char* kGoldenSchema = "lockstep.golden/1";

struct GoldenTensor {
  TensorKind kind = TensorKind::kParam;
  std::string name;
  Digest128 digest;
  double norm = 0.0;
};

struct GoldenRecord {
  std::string scenario_id;
  std::string platform;
  std::map<int64_t, double> loss;          // step -> mean loss over ranks (NaN at step 0)
  int64_t final_step = 0;
  std::vector<GoldenTensor> final_tensors;  // replicated tensors at final_step, recording order
};

// <fixtures_dir>/golden/<scenario id>/<platform>.json; characters of the platform string other
// than [A-Za-z0-9._+-] become '_' so that any fingerprint is a file name.
std::filesystem::path GoldenPath(const std::filesystem::path& fixtures_dir, const std::string& scenario_id,
                                 const std::string& platform);

// From a finished run (every rank's trace whole, with its footer; otherwise an error): the mean loss curve, and the replicated tensors of the lowest rank with a
// trace at its last step (the replica checkers say whether the other ranks agree).
Result<GoldenRecord> MakeGolden(const std::vector<RankTrace>& traces, const std::string& scenario_id,
                                const std::string& platform);

inline constexpr std::uintmax_t kMaxGoldenBytes = std::uintmax_t{64} << 20;

std::string GoldenToJson(const GoldenRecord& golden);
Result<GoldenRecord> ReadGolden(const std::filesystem::path& path);

// Writes (or replaces, atomically) the golden file of `scenario_id` on `platform` from `traces`.
Status WriteGolden(const std::filesystem::path& fixtures_dir, const std::string& scenario_id,
                   const std::string& platform, const std::vector<RankTrace>& traces);

}  // namespace lockstep
