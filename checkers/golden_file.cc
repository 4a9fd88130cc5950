#include "checkers/golden_file.h"

#include <unistd.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include <nlohmann/json.hpp>

#include "checkers/internal/check_util.h"
#include "checkers/loss_curve.h"
#include "harness/core/untrusted_input.h"
#include "harness/result/json_number.h"

namespace lockstep {
namespace {

using nlohmann::json;

// Non-finite numbers as in every lockstep JSON output (harness/result/json_number.h); anything
// else that is no number throws json::type_error, and the read fails.
double GoldenNumberFrom(const json& v) {
  if (std::optional<double> number = NumberFromJson(v)) return *number;
  return v.get<double>();
}

std::string SafeName(const std::string& s) {
  std::string out = s;
  for (char& c : out) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                    c == '_' || c == '+' || c == '-';
    if (!ok) c = '_';
  }
  if (out.empty() || out == "." || out == "..") out = "_" + out;
  return out;
}

}  // namespace

std::filesystem::path GoldenPath(const std::filesystem::path& fixtures_dir, const std::string& scenario_id,
                                 const std::string& platform) {
  // Scenario ids may name sub-folders ("ddp/mlp_basic"); each part is kept inside the folder.
  std::filesystem::path dir = fixtures_dir / "golden";
  std::stringstream parts(scenario_id);
  for (std::string part; std::getline(parts, part, '/');) {
    if (!part.empty()) dir /= SafeName(part);
  }
  return dir / (SafeName(platform) + ".json");
}

Result<GoldenRecord> MakeGolden(const std::vector<RankTrace>& traces, const std::string& scenario_id,
                                const std::string& platform) {
  // A cut or missing trace would make the golden mean loss average fewer ranks than the run had.
  for (size_t r = 0; r < traces.size(); ++r) {
    const RankTrace& t = traces[r];
    if (t.missing || t.truncated || !t.footer) {
      const std::string why = !t.truncation_note.empty() ? t.truncation_note
                              : !t.footer             ? "rank " + std::to_string(r) + "'s trace has no footer"
                                                      : "rank " + std::to_string(r) + "'s trace is incomplete";
      return InvalidArgumentError("cannot bless " + scenario_id + ": rank " + std::to_string(r) +
                                  " did not finish its trace (" + why + ")");
    }
  }
  GoldenRecord g;
  g.scenario_id = scenario_id;
  g.platform = platform;
  g.loss = MeanLossCurve(traces);
  const RankTrace* source = nullptr;
  for (const RankTrace& t : traces) {
    if (internal::HasData(t) && !t.steps.empty()) {
      source = &t;
      break;
    }
  }
  if (!source) return InvalidArgumentError("cannot bless " + scenario_id + ": no rank recorded a step");
  g.final_step = *internal::LastStep(*source);
  for (const TensorRecord& t : internal::StepsByNumber(*source).at(g.final_step)->tensors) {
    if (t.replicated) g.final_tensors.push_back(GoldenTensor{t.kind, t.name, t.digest, t.norm});
  }
  return g;
}

std::string GoldenToJson(const GoldenRecord& g) {
  // Ordered keys and one entry per line keep `git diff` of a re-blessed file readable.
  using ojson = nlohmann::ordered_json;
  ojson j;
  j["schema"] = kGoldenSchema;
  j["scenario"] = g.scenario_id;
  j["platform"] = g.platform;
  ojson loss = ojson::array();
  for (const auto& [step, value] : g.loss) {
    ojson e;
    e["step"] = step;
    e["loss"] = JsonNumber<ojson>(value);
    loss.push_back(std::move(e));
  }
  j["loss"] = std::move(loss);
  j["final_step"] = g.final_step;
  ojson tensors = ojson::array();
  for (const GoldenTensor& t : g.final_tensors) {
    ojson e;
    e["kind"] = ToString(t.kind);
    e["name"] = t.name;
    e["digest"] = t.digest.ToHex();
    e["norm"] = JsonNumber<ojson>(t.norm);
    tensors.push_back(std::move(e));
  }
  j["final_tensors"] = std::move(tensors);
  return j.dump(2, ' ', false, ojson::error_handler_t::replace) + "\n";
}

Result<GoldenRecord> ReadGolden(const std::filesystem::path& path) {
  Result<std::string> text = ReadBoundedFile(path, kMaxGoldenBytes, "golden");
  if (!text.ok()) {
    if (text.status().code() == StatusCode::kNotFound) return NotFoundError("no golden file " + path.string());
    return text.status();
  }
  if (std::optional<std::string> deep = FindJsonTooDeep(*text)) return InvalidArgumentError(path.string() + ": " + *deep);
  json j = json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return InvalidArgumentError(path.string() + ": not JSON");
  auto integer = [&](const json& v, const std::string& what) -> Result<int64_t> {
    if (std::optional<int64_t> i = JsonInteger<int64_t>(v)) return *i;
    return InvalidArgumentError(path.string() + ": " + what + ": expected " + IntegerRangeText<int64_t>() + ", got " +
                                v.dump(-1, ' ', false, json::error_handler_t::replace).substr(0, 40));
  };
  try {
    if (j.value("schema", "") != kGoldenSchema) {
      return InvalidArgumentError(path.string() + ": schema '" + j.value("schema", "") + "', expected " + kGoldenSchema);
    }
    GoldenRecord g;
    g.scenario_id = j.value("scenario", "");
    g.platform = j.value("platform", "");
    for (const json& e : j.at("loss")) {
      LOCKSTEP_ASSIGN_OR_RETURN(int64_t step, integer(e.at("step"), "loss[].step"));
      g.loss[step] = GoldenNumberFrom(e.at("loss"));
    }
    LOCKSTEP_ASSIGN_OR_RETURN(g.final_step, integer(j.at("final_step"), "final_step"));
    for (const json& e : j.at("final_tensors")) {
      GoldenTensor t;
      auto kind = FromString<TensorKind>(e.at("kind").get<std::string>());
      auto digest = Digest128::FromHex(e.at("digest").get<std::string>());
      if (!kind || !digest) {
        return InvalidArgumentError(path.string() + ": bad tensor entry " +
                                    e.dump(-1, ' ', false, json::error_handler_t::replace).substr(0, 200));
      }
      t.kind = *kind;
      t.digest = *digest;
      t.name = e.at("name").get<std::string>();
      t.norm = GoldenNumberFrom(e.at("norm"));
      g.final_tensors.push_back(std::move(t));
    }
    return g;
  } catch (const json::exception& e) {
    return InvalidArgumentError(path.string() + ": " + e.what());
  }
}

Status WriteGolden(const std::filesystem::path& fixtures_dir, const std::string& scenario_id,
                   const std::string& platform, const std::vector<RankTrace>& traces) {
  LOCKSTEP_ASSIGN_OR_RETURN(GoldenRecord g, MakeGolden(traces, scenario_id, platform));
  const std::filesystem::path path = GoldenPath(fixtures_dir, scenario_id, platform);
  std::error_code ec;
  std::filesystem::create_directories(path.parent_path(), ec);
  if (ec) return IoError("cannot create " + path.parent_path().string() + ": " + ec.message());
  // Written next to the target and renamed over it: a reader never sees half a golden file.
  const std::filesystem::path tmp = path.string() + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << GoldenToJson(g);
    out.close();
    if (!out) return IoError("cannot write " + tmp.string());
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp);
    return IoError("cannot move golden file into " + path.string() + ": " + ec.message());
  }
  return Status::Ok();
}

}  // namespace lockstep
