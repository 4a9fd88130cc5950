#include "harness/diff/testing/canned_traces.h"

#include <unistd.h>

#include <cstdlib>
#include <functional>
#include <iostream>
#include <limits>

#include "harness/trace/trace_writer.h"

namespace lockstep::testing {
namespace {

Digest128 DigestOf(const std::string& what) {
  const uint64_t h = std::hash<std::string>{}(what);
  return Digest128{h, h * 0x9e3779b97f4a7c15ULL + 1};
}

}  // namespace

std::vector<RankTrace> CannedTraces(int ranks, int64_t steps, const std::string& scenario_id) {
  const std::vector<std::pair<TensorKind, std::string>> tensors = {
      {TensorKind::kParam, "fc1.weight"},        {TensorKind::kParam, "fc1.bias"},
      {TensorKind::kParam, "fc2.weight"},        {TensorKind::kGrad, "fc1.weight"},
      {TensorKind::kGrad, "fc1.bias"},           {TensorKind::kGrad, "fc2.weight"},
      {TensorKind::kOptimizerState, "fc1.weight#momentum_buffer"}, {TensorKind::kBuffer, "bn.running_mean"},
  };
  std::vector<RankTrace> traces(static_cast<size_t>(ranks));
  for (int r = 0; r < ranks; ++r) {
    RankTrace& t = traces[static_cast<size_t>(r)];
    t.header.schema = "lockstep.trace/1.0";
    t.header.rank = r;
    t.header.world_size = ranks;
    t.header.local_rank = r;
    t.header.host = "node";
    t.header.device = "cpu";
    t.header.backend = "mpi";
    t.header.scenario_id = scenario_id;
    for (int64_t s = 0; s <= steps; ++s) {
      StepRecord step;
      step.step = s;
      step.loss = s == 0 ? std::numeric_limits<double>::quiet_NaN() : 2.5 / static_cast<double>(s + 1);
      step.grad_norm = s == 0 ? std::numeric_limits<double>::quiet_NaN() : 0.5 / static_cast<double>(s);
      step.lr = 0.01;
      step.wall_s = 0.1 * static_cast<double>(s);
      for (size_t i = 0; i < tensors.size(); ++i) {
        const auto& [kind, name] = tensors[i];
        if (kind == TensorKind::kGrad && s == 0) continue;  // no gradient before the first step
        TensorRecord rec;
        rec.name = name;
        rec.kind = kind;
        rec.digest = DigestOf(std::string(ToString(kind)) + "|" + name + "|" + std::to_string(s));
        rec.numel = 64 * static_cast<int64_t>(i + 1);
        rec.dtype = "float32";
        rec.norm = 1.0 + static_cast<double>(i) + 0.125 * static_cast<double>(s);
        step.tensors.push_back(rec);
      }
      t.steps.push_back(step);
    }
    t.footer = TraceFooter{steps, "ok"};
  }
  return traces;
}

TensorRecord& FindTensor(std::vector<RankTrace>& traces, int rank, int64_t step, TensorKind kind,
                         const std::string& name) {
  for (StepRecord& s : traces.at(static_cast<size_t>(rank)).steps) {
    if (s.step != step) continue;
    for (TensorRecord& t : s.tensors) {
      if (t.kind == kind && t.name == name) return t;
    }
  }
  std::cerr << "canned traces: no " << ToString(kind) << " " << name << " at step " << step << " on rank " << rank
            << "\n";
  std::abort();
}

void Corrupt(std::vector<RankTrace>& traces, int rank, TensorKind kind, const std::string& name, int64_t from_step,
             double rel_norm) {
  for (StepRecord& s : traces.at(static_cast<size_t>(rank)).steps) {
    if (s.step < from_step) continue;
    TensorRecord& t = FindTensor(traces, rank, s.step, kind, name);
    // Another value: another digest, and a norm that says by how much.
    t.digest = DigestOf("corrupt|" + name + "|" + std::to_string(s.step) + "|" + std::to_string(rank));
    t.norm *= 1.0 + rel_norm;
  }
}

void Cut(std::vector<RankTrace>& traces, int rank, int64_t last_step) {
  RankTrace& t = traces.at(static_cast<size_t>(rank));
  while (!t.steps.empty() && t.steps.back().step > last_step) t.steps.pop_back();
  t.footer.reset();
}

Status WriteTraces(const std::vector<RankTrace>& traces, const std::filesystem::path& dir) {
  for (const RankTrace& t : traces) {
    LOCKSTEP_ASSIGN_OR_RETURN(std::unique_ptr<TraceWriter> writer,
                              TraceWriter::Open(dir / TraceFileName(t.header.rank), t.header));
    for (const StepRecord& s : t.steps) LOCKSTEP_RETURN_IF_ERROR(writer->WriteStep(s));
    if (t.footer) LOCKSTEP_RETURN_IF_ERROR(writer->WriteFooter(*t.footer));
  }
  return Status::Ok();
}

std::filesystem::path FreshTempDir(const std::string& name) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("lockstep_diff_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace lockstep::testing
