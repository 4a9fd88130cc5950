#include "harness/rank/tensor_dump.h"

#include <fnmatch.h>

#include <torch/serialize.h>

#include <cctype>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "harness/capture/dtype_name.h"

namespace lockstep {

bool DumpSelects(const std::vector<std::string>& patterns, const std::string& name, TensorKind kind) {
  const std::string qualified = std::string(ToString(kind)) + ":" + name;
  for (const auto& p : patterns) {
    if (fnmatch(p.c_str(), qualified.c_str(), 0) == 0 || fnmatch(p.c_str(), name.c_str(), 0) == 0) return true;
  }
  return false;
}

std::string DumpFileName(TensorKind kind, const std::string& name) {
  std::string safe;
  for (char c : name) {
    const bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-' || c == '#';
    safe += ok ? c : '_';
  }
  // A leading dot would hide the file.
  if (!safe.empty() && safe.front() == '.') safe.front() = '_';
  return std::string(ToString(kind)) + "__" + safe + ".pt";
}

std::filesystem::path RankDumpDir(const std::filesystem::path& dir, int rank) {
  return dir / ("rank-" + std::to_string(rank));
}

Status WriteTensorDump(const std::filesystem::path& dir, int rank, int64_t step, const std::vector<DumpTensor>& tensors) {
  const std::filesystem::path rank_dir = RankDumpDir(dir, rank);
  std::error_code ec;
  std::filesystem::remove_all(rank_dir, ec);
  std::filesystem::create_directories(rank_dir, ec);
  if (ec) return IoError("creating " + rank_dir.string() + ": " + ec.message());

  nlohmann::ordered_json entries = nlohmann::ordered_json::array();
  std::set<std::string> used;
  for (const DumpTensor& t : tensors) {
    std::string file = DumpFileName(t.kind, t.name);
    // Two names that differ only in replaced characters must not overwrite each other.
    for (int n = 2; !used.insert(file).second; ++n) {
      file = DumpFileName(t.kind, t.name + "~" + std::to_string(n));
    }
    std::vector<char> bytes;
    try {
      // A contiguous CPU clone: a view would drag its whole storage (a flat bucket) into the file,
      // and a CUDA tensor would not load in Python on a machine without a GPU.
      torch::Tensor copy = t.tensor.detach().to(torch::kCPU).contiguous().clone();
      bytes = torch::pickle_save(copy);
    } catch (const c10::Error& e) {
      return InternalError("saving " + t.name + ": " + e.what_without_backtrace());
    }
    const std::filesystem::path path = rank_dir / file;
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out) return IoError("writing " + path.string());

    nlohmann::ordered_json entry;
    entry["file"] = file;
    entry["name"] = t.name;
    entry["kind"] = ToString(t.kind);
    entry["dtype"] = DtypeName(t.tensor.scalar_type());
    entry["shape"] = t.tensor.sizes().vec();
    entry["replicated"] = t.replicated;
    entries.push_back(std::move(entry));
  }

  nlohmann::ordered_json index;
  index["schema"] = kTensorDumpSchema;
  index["rank"] = rank;
  index["step"] = step;
  index["tensors"] = std::move(entries);
  const std::filesystem::path index_path = rank_dir / kTensorDumpIndexFile;
  std::ofstream out(index_path, std::ios::trunc);
  out << index.dump(2) << "\n";
  out.close();
  if (!out) return IoError("writing " + index_path.string());
  return Status::Ok();
}

Status DumpTensors(const TensorDumpRequest& request, const DumpStateSource& state, int rank, int64_t step) {
  std::vector<DumpTensor> selected;
  std::vector<std::string> available;
  state([&](const std::string& name, TensorKind kind, const torch::Tensor& tensor, bool replicated) {
    if (!tensor.defined()) return;
    if (DumpSelects(request.patterns, name, kind)) {
      selected.push_back(DumpTensor{name, kind, tensor, replicated});
    } else if (available.size() < 5) {
      available.push_back(std::string(ToString(kind)) + ":" + name);
    }
  });
  if (selected.empty()) {
    std::string patterns, names;
    for (const auto& p : request.patterns) patterns += (patterns.empty() ? "" : ",") + p;
    for (const auto& n : available) names += (names.empty() ? "" : ", ") + n;
    return InvalidArgumentError("--dump-tensors " + patterns + " matches no tensor at step " + std::to_string(step) +
                                " (tensors are named like " + names + ")");
  }
  return WriteTensorDump(request.dir, rank, step, selected);
}

}  // namespace lockstep
