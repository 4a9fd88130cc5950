#include "harness/repro/tensor_dump_reader.h"

#include <torch/serialize.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <optional>
#include <regex>

#include <nlohmann/json.hpp>

#include "harness/rank/tensor_dump.h"
#include "harness/trace/dtype_name.h"

namespace lockstep {
namespace {

std::string ShapeText(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// "lockstep.tensor_dump/1" and later minor versions ("/1.2") of the same major.
bool SchemaAccepted(const std::string& schema) {
  const std::string expected = kTensorDumpSchema;
  return schema == expected || schema.rfind(expected + ".", 0) == 0;
}

Result<LoadedTensor> ReadEntry(const std::filesystem::path& rank_dir, const nlohmann::json& entry,
                               const std::string& origin) {
  LoadedTensor t;
  try {
    t.file = entry.at("file").get<std::string>();
    t.name = entry.at("name").get<std::string>();
    t.kind = entry.at("kind").get<std::string>();
    t.dtype = entry.at("dtype").get<std::string>();
    t.shape = entry.at("shape").get<std::vector<int64_t>>();
    t.replicated = entry.value("replicated", true);
  } catch (const nlohmann::json::exception& e) {
    return InvalidArgumentError(origin + ": a tensor entry: " + e.what());
  }
  if (t.file.empty() || t.file.find('/') != std::string::npos || t.file == "..") {
    return InvalidArgumentError(origin + ": tensor " + t.name + ": file '" + t.file + "' is not a file name");
  }
  const std::filesystem::path path = rank_dir / t.file;
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFoundError(path.string() + ": cannot read (listed in " + origin + ")");
  std::vector<char> bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  try {
    t.tensor = torch::pickle_load(bytes).toTensor();
  } catch (const c10::Error& e) {
    return InvalidArgumentError(path.string() + ": not a tensor saved by torch::pickle_save / torch.save: " +
                                e.what_without_backtrace());
  }
  if (DtypeName(t.tensor.scalar_type()) != t.dtype || t.tensor.sizes().vec() != t.shape) {
    return InvalidArgumentError(path.string() + ": holds " + DtypeName(t.tensor.scalar_type()) + " " +
                                ShapeText(t.tensor.sizes().vec()) + " but " + origin + " says " + t.dtype + " " +
                                ShapeText(t.shape));
  }
  return t;
}

}  // namespace

Result<TensorDumpContents> ReadTensorDump(const std::filesystem::path& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return NotFoundError(dir.string() + ": no such folder");

  std::vector<std::pair<int, std::filesystem::path>> rank_dirs;
  static const std::regex kRankDir("rank-(0|[1-9][0-9]{0,8})");
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    std::smatch m;
    const std::string name = e.path().filename().string();
    if (e.is_directory() && std::regex_match(name, m, kRankDir)) rank_dirs.emplace_back(std::stoi(m[1]), e.path());
  }
  if (ec) return IoError(dir.string() + ": " + ec.message());
  if (rank_dirs.empty()) {
    return InvalidArgumentError(dir.string() + ": no rank-<r> folders: not a tensor dump (lockstep-rank --dump-dir)");
  }
  std::sort(rank_dirs.begin(), rank_dirs.end());

  TensorDumpContents dump;
  dump.dir = dir;
  std::optional<std::pair<int, int64_t>> first_step;  // (rank, step)
  for (const auto& [rank, rank_dir] : rank_dirs) {
    const std::filesystem::path index_path = rank_dir / kTensorDumpIndexFile;
    const std::string origin = index_path.string();
    std::ifstream in(index_path);
    if (!in) return NotFoundError(origin + ": cannot read");
    nlohmann::json index;
    try {
      index = nlohmann::json::parse(in);
    } catch (const nlohmann::json::exception& e) {
      return InvalidArgumentError(origin + ": not JSON: " + e.what());
    }
    RankTensors rank_tensors;
    rank_tensors.rank = rank;
    int64_t step = 0;
    try {
      const std::string schema = index.at("schema").get<std::string>();
      if (!SchemaAccepted(schema)) {
        return InvalidArgumentError(origin + ": schema " + schema + ", this build reads " + kTensorDumpSchema);
      }
      if (index.at("rank").get<int>() != rank) {
        return InvalidArgumentError(origin + ": says rank " + std::to_string(index.at("rank").get<int>()) +
                                    " but lies in " + rank_dir.filename().string());
      }
      step = index.at("step").get<int64_t>();
      for (const auto& entry : index.at("tensors")) {
        LOCKSTEP_ASSIGN_OR_RETURN(LoadedTensor t, ReadEntry(rank_dir, entry, origin));
        rank_tensors.tensors.push_back(std::move(t));
      }
    } catch (const nlohmann::json::exception& e) {
      return InvalidArgumentError(origin + ": " + e.what());
    }
    if (!first_step) {
      first_step = {rank, step};
      dump.step = step;
    } else if (step != first_step->second) {
      return InvalidArgumentError(origin + ": step " + std::to_string(step) + ", but rank " +
                                  std::to_string(first_step->first) + " saved step " +
                                  std::to_string(first_step->second) + ": not one dump");
    }
    dump.ranks.push_back(std::move(rank_tensors));
  }
  return dump;
}

}  // namespace lockstep
