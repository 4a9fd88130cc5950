#include "checkers/testing/canned_run.h"

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>

namespace lockstep::testing {
namespace {

const char* kParams[] = {"w0", "w1", "w2"};

}  // namespace

Digest128 FakeDigest(const std::string& what) {
  const uint64_t h = std::hash<std::string>{}(what);
  return Digest128{h, h * 0x9e3779b97f4a7c15ULL + 1};
}

CannedRun::CannedRun(int ranks, int64_t steps) {
  scenario.name = "canned";
  scenario.ranks = ranks;
  scenario.steps = steps;
  traces.resize(static_cast<size_t>(ranks));
  for (int r = 0; r < ranks; ++r) {
    RankTrace& t = traces[static_cast<size_t>(r)];
    t.header.schema = "lockstep.trace/1.0";
    t.header.rank = r;
    t.header.world_size = ranks;
    t.header.backend = "mpi";
    t.discoveries.push_back(DiscoveryRecord{1, "startup", 0, kTopologyDiscovery, "", ""});
    uint64_t seq = 0;
    for (int64_t s = 0; s <= steps; ++s) {
      const int n_coll = s == 0 ? 1 : 2;
      for (int c = 0; c < n_coll; ++c) {
        CollectiveRecord rec;
        rec.group = "world";
        rec.seq = seq++;
        rec.op = s == 0 ? "broadcast" : "all_reduce";
        rec.dtype = "float32";
        rec.count = s == 0 ? 96 : 64 - 32 * c;
        rec.root = s == 0 ? 0 : -1;
        rec.reduce = s == 0 ? "" : "avg";
        rec.step = s;
        rec.start_s = 0.1 * s + 0.01 * c;
        rec.end_s = rec.start_s + 0.005;
        t.collectives.push_back(rec);
      }
      StepRecord step;
      step.step = s;
      step.loss = s == 0 ? std::numeric_limits<double>::quiet_NaN() : 2.0 / (1.0 + s);
      step.grad_norm = s == 0 ? std::numeric_limits<double>::quiet_NaN() : 0.5 / (1.0 + s);
      step.lr = 0.01;
      step.wall_s = 0.1 * s + 0.05;
      auto add = [&](TensorKind kind, const std::string& name, double norm) {
        TensorRecord rec;
        rec.name = name;
        rec.kind = kind;
        rec.digest = FakeDigest(std::string(ToString(kind)) + "/" + name + "/" + std::to_string(s));
        rec.numel = 32;
        rec.dtype = "float32";
        rec.norm = norm;
        step.tensors.push_back(rec);
      };
      for (int i = 0; i < 3; ++i) add(TensorKind::kParam, kParams[i], 1.0 + i + 0.01 * s);
      add(TensorKind::kBuffer, "bn.running_mean", 0.5 + 0.01 * s);
      if (s > 0) {
        for (int i = 0; i < 3; ++i) add(TensorKind::kGrad, kParams[i], 0.1 + 0.01 * i);
        for (int i = 0; i < 3; ++i) add(TensorKind::kOptimizerState, std::string(kParams[i]) + "#momentum", 0.05 * s);
      }
      t.steps.push_back(std::move(step));
    }
    t.footer = TraceFooter{steps, "ok"};
    t.last_heartbeat_s = 0.1 * steps + 0.06;
  }
  launch.ending = LaunchEnding::kClean;
  for (int r = 0; r < ranks; ++r) {
    RankExit e;
    e.rank = r;
    e.exit_code = 0;
    e.last_step = steps;
    launch.ranks.push_back(e);
  }
}

StepRecord& CannedRun::Step(int rank, int64_t step) {
  for (StepRecord& s : traces.at(static_cast<size_t>(rank)).steps) {
    if (s.step == step) return s;
  }
  std::fprintf(stderr, "canned run: rank %d has no step %lld\n", rank, static_cast<long long>(step));
  std::abort();
}

TensorRecord& CannedRun::Tensor(int rank, int64_t step, TensorKind kind, const std::string& name) {
  for (TensorRecord& t : Step(rank, step).tensors) {
    if (t.kind == kind && t.name == name) return t;
  }
  std::fprintf(stderr, "canned run: rank %d step %lld has no %s %s\n", rank, static_cast<long long>(step),
               ToString(kind), name.c_str());
  std::abort();
}

void CannedRun::Diverge(int rank, TensorKind kind, const std::string& name, int64_t from_step, double rel_norm) {
  for (StepRecord& s : traces.at(static_cast<size_t>(rank)).steps) {
    if (s.step < from_step) continue;
    for (TensorRecord& t : s.tensors) {
      if (t.kind != kind || t.name != name) continue;
      t.digest = FakeDigest("rank" + std::to_string(rank) + "/" + ToString(kind) + "/" + name + "/" + std::to_string(s.step));
      t.norm *= 1.0 + rel_norm;
    }
  }
}

void CannedRun::InsertCollective(int rank, uint64_t seq, CollectiveRecord extra) {
  std::vector<CollectiveRecord>& cs = traces.at(static_cast<size_t>(rank)).collectives;
  if (extra.group.empty()) extra.group = "world";
  extra.seq = seq;
  size_t pos = 0;
  while (pos < cs.size() && !(cs[pos].group == extra.group && cs[pos].seq >= seq)) ++pos;
  for (size_t i = pos; i < cs.size(); ++i) {
    if (cs[i].group == extra.group) ++cs[i].seq;
  }
  cs.insert(cs.begin() + static_cast<std::ptrdiff_t>(pos), extra);
}

void CannedRun::Cut(int rank, int64_t last_step) {
  RankTrace& t = traces.at(static_cast<size_t>(rank));
  while (!t.steps.empty() && t.steps.back().step > last_step) t.steps.pop_back();
  while (!t.collectives.empty() && t.collectives.back().step > last_step) t.collectives.pop_back();
  t.footer.reset();
}

}  // namespace lockstep::testing
