#include "harness/repro/tensor_dump_reader.h"

#include <torch/serialize.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <optional>
#include <regex>

#include <nlohmann/json.hpp>

#include "harness/capture/dtype_name.h"
#include "harness/core/untrusted_input.h"
#include "harness/rank/tensor_dump.h"

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

// An index larger than this is not one lockstep-rank wrote (it lists one short entry per tensor).
constexpr std::uintmax_t kMaxIndexBytes = std::uintmax_t{64} << 20;

// `j` as a T when it is a JSON integer in T's range, else an error naming `what`.
template <typename T>
Result<T> Integer(const nlohmann::json& j, const std::string& origin, const std::string& what) {
  if (std::optional<T> v = JsonInteger<T>(j)) return *v;
  return InvalidArgumentError(origin + ": " + what + ": expected " + IntegerRangeText<T>() + ", got " +
                              j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).substr(0, 40));
}

Result<LoadedTensor> ReadEntry(const std::filesystem::path& rank_dir, const nlohmann::json& entry,
                               const std::string& origin) {
  LoadedTensor t;
  try {
    t.file = entry.at("file").get<std::string>();
    t.name = entry.at("name").get<std::string>();
    t.kind = entry.at("kind").get<std::string>();
    t.dtype = entry.at("dtype").get<std::string>();
    const nlohmann::json& shape = entry.at("shape");
    if (!shape.is_array()) return InvalidArgumentError(origin + ": tensor " + t.name + ": shape is not a list");
    for (const nlohmann::json& d : shape) {
      LOCKSTEP_ASSIGN_OR_RETURN(int64_t size, Integer<int64_t>(d, origin, "tensor " + t.name + ": shape"));
      if (size < 0) return InvalidArgumentError(origin + ": tensor " + t.name + ": shape has a negative size");
      t.shape.push_back(size);
    }
    t.replicated = entry.value("replicated", true);
  } catch (const nlohmann::json::exception& e) {
    return InvalidArgumentError(origin + ": a tensor entry: " + e.what());
  }
  if (t.file.empty() || t.file.find('/') != std::string::npos || t.file == "..") {
    return InvalidArgumentError(origin + ": tensor " + t.name + ": file '" + t.file + "' is not a file name");
  }
  const std::filesystem::path path = rank_dir / t.file;
  Result<std::string> data = ReadBoundedFile(path, kMaxTensorFileBytes, "tensor");
  if (!data.ok()) return Status(data.status().code(), data.status().message() + " (listed in " + origin + ")");
  std::vector<char> bytes(data->begin(), data->end());
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
    Result<std::string> text = ReadBoundedFile(index_path, kMaxIndexBytes, "tensor index");
    if (!text.ok()) return text.status();
    if (std::optional<std::string> deep = FindJsonTooDeep(*text)) return InvalidArgumentError(origin + ": " + *deep);
    nlohmann::json index;
    try {
      index = nlohmann::json::parse(*text);
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
      LOCKSTEP_ASSIGN_OR_RETURN(int index_rank, Integer<int>(index.at("rank"), origin, "rank"));
      if (index_rank != rank) {
        return InvalidArgumentError(origin + ": says rank " + std::to_string(index_rank) + " but lies in " +
                                    rank_dir.filename().string());
      }
      LOCKSTEP_ASSIGN_OR_RETURN(step, Integer<int64_t>(index.at("step"), origin, "step"));
      if (!index.at("tensors").is_array()) return InvalidArgumentError(origin + ": tensors is not a list");
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
