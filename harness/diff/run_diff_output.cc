#include "harness/diff/run_diff_output.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <functional>
#include <sstream>

#include "harness/core/name_table.h"
#include "harness/result/json_number.h"

namespace lockstep {
namespace {

using Json = nlohmann::ordered_json;

// Per-rank lines and further tensors shown for a first difference; JSON has them all.
constexpr size_t kMaxRankLines = 8;
constexpr size_t kMaxMoreTensors = 5;

// The shortest text that reads back to the same double: two losses that differ in the last bit
// print differently.
std::string Exact(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

std::string Short(double v) {
  if (std::isnan(v)) return "nan";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

std::string RanksText(const std::vector<int>& ranks) {
  std::string s = "[";
  for (size_t i = 0; i < ranks.size(); ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
  return s + "]";
}

std::string Plural(int64_t n, const char* word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

Json Number(double v) { return JsonNumber<Json>(v); }

std::string RanksLabel(const std::vector<int>& ranks) {
  return ranks.size() == 1 ? "rank " + std::to_string(ranks[0]) : "ranks " + RanksText(ranks);
}

// Ranks whose difference reads the same (a replicated tensor that differs the same way on every
// rank, as between an mpi and a gloo run) share one line.
template <typename T, typename Same>
std::vector<std::pair<std::vector<int>, const T*>> GroupRanks(const std::vector<T>& diffs, Same same) {
  std::vector<std::pair<std::vector<int>, const T*>> groups;
  for (const T& d : diffs) {
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return same(*g.second, d); });
    if (it == groups.end()) {
      groups.push_back({{d.rank}, &d});
    } else {
      it->first.push_back(d.rank);
    }
  }
  return groups;
}

bool SameRecord(const std::optional<TensorRecord>& x, const std::optional<TensorRecord>& y) {
  if (x.has_value() != y.has_value()) return false;
  return !x || (x->digest == y->digest && x->dtype == y->dtype && x->numel == y->numel && SameValue(x->norm, y->norm));
}

template <typename Group>
void RankLines(std::ostream& out, const std::vector<Group>& groups, const std::function<std::string(const Group&)>& text) {
  size_t ranks_left = 0;
  for (size_t i = 0; i < groups.size(); ++i) {
    if (i < kMaxRankLines) {
      out << "      " << RanksLabel(groups[i].first) << ": " << text(groups[i]) << "\n";
    } else {
      ranks_left += groups[i].first.size();
    }
  }
  if (ranks_left > 0) out << "      ... and " << ranks_left << " more ranks\n";
}

std::string TensorRankText(const TensorRankDifference& d) {
  std::string line;
  if (!d.a || !d.b) return line + "recorded " + d.what;
  if (d.what != "digest") line += d.what + "; ";
  line += "digest " + d.a->digest.ToHex() + " (A) vs " + d.b->digest.ToHex() + " (B); norm " + Exact(d.a->norm) +
          " vs " + Exact(d.b->norm);
  if (d.norm_rel_diff == 0.0) return line + " (the same norm)";
  return line + ", relative difference " + Short(d.norm_rel_diff);
}

void FirstDifferenceText(std::ostream& out, const ScenarioDiff& s) {
  const StepDifference& step = *s.first;
  out << "  first difference at step " << step.step << ":\n";
  for (const StepGap& gap : step.gaps) {
    out << "    rank " << gap.rank << " has no step " << step.step << " in " << (gap.missing_in_a ? "A" : "B")
        << " (";
    if (gap.last_step) {
      out << "its last step there is " << *gap.last_step;
    } else {
      out << "no step recorded there at all";
    }
    out << ")\n";
  }
  if (!step.losses.empty()) {
    std::vector<int> ranks;
    for (const LossDifference& l : step.losses) ranks.push_back(l.rank);
    out << "    loss differs on ranks " << RanksText(ranks) << ":\n";
    using Group = std::pair<std::vector<int>, const LossDifference*>;
    RankLines<Group>(out,
                     GroupRanks(step.losses, [](const LossDifference& x, const LossDifference& y) {
                       return SameValue(x.a, y.a) && SameValue(x.b, y.b);
                     }),
                     [](const Group& g) {
                       const LossDifference& l = *g.second;
                       return Exact(l.a) + " (A) vs " + Exact(l.b) + " (B), absolute difference " + Short(l.abs_diff) +
                              ", relative " + Short(l.rel_diff);
                     });
  } else if (step.gaps.size() < static_cast<size_t>(std::min(s.ranks_a, s.ranks_b))) {
    out << "    loss: the same on every rank that recorded the step\n";
  }
  if (step.tensors.empty()) {
    out << "    tensors: every tensor the same\n";
    return;
  }
  const TensorDifference& t = step.tensors.front();
  out << "    tensor " << t.name << " (" << ToString(t.kind) << ") differs on ranks " << RanksText(t.Ranks()) << ":\n";
  using Group = std::pair<std::vector<int>, const TensorRankDifference*>;
  RankLines<Group>(out,
                   GroupRanks(t.per_rank, [](const TensorRankDifference& x, const TensorRankDifference& y) {
                     return x.what == y.what && SameRecord(x.a, y.a) && SameRecord(x.b, y.b);
                   }),
                   [](const Group& g) { return TensorRankText(*g.second); });
  if (step.tensors.size() > 1) {
    out << "    also different at step " << step.step << " ("
        << Plural(static_cast<int64_t>(step.tensors.size() - 1), "more tensor") << "):";
    for (size_t i = 1; i < step.tensors.size() && i <= kMaxMoreTensors; ++i) {
      const TensorDifference& more = step.tensors[i];
      out << (i > 1 ? "," : "") << " " << more.name << " (" << ToString(more.kind) << ") ranks "
          << RanksText(more.Ranks());
    }
    if (step.tensors.size() - 1 > kMaxMoreTensors) out << ", ...";
    out << "\n";
  }
}

Json TensorRecordJson(const std::optional<TensorRecord>& t) {
  if (!t) return nullptr;
  return Json{{"digest", t->digest.ToHex()}, {"norm", Number(t->norm)}, {"numel", t->numel}, {"dtype", t->dtype}};
}

Json StepDifferenceJson(const StepDifference& step) {
  Json gaps = Json::array(), losses = Json::array(), tensors = Json::array();
  for (const StepGap& g : step.gaps) {
    gaps.push_back({{"rank", g.rank},
                    {"missing_in", g.missing_in_a ? "A" : "B"},
                    {"last_step_there", g.last_step ? Json(*g.last_step) : Json(nullptr)}});
  }
  for (const LossDifference& l : step.losses) {
    losses.push_back({{"rank", l.rank},
                      {"a", Number(l.a)},
                      {"b", Number(l.b)},
                      {"abs_diff", Number(l.abs_diff)},
                      {"rel_diff", Number(l.rel_diff)}});
  }
  for (const TensorDifference& t : step.tensors) {
    Json per_rank = Json::array();
    for (const TensorRankDifference& d : t.per_rank) {
      per_rank.push_back({{"rank", d.rank},
                          {"what", d.what},
                          {"a", TensorRecordJson(d.a)},
                          {"b", TensorRecordJson(d.b)},
                          {"norm_rel_diff", Number(d.norm_rel_diff)}});
    }
    tensors.push_back({{"name", t.name}, {"kind", ToString(t.kind)}, {"ranks", t.Ranks()}, {"per_rank", per_rank}});
  }
  return Json{{"step", step.step}, {"gaps", gaps}, {"losses", losses}, {"tensors", tensors}};
}

}  // namespace

const char* ToString(ScenarioDiff::Verdict verdict) {
  static const NameTable<ScenarioDiff::Verdict> kTable = {{"identical", ScenarioDiff::Verdict::kIdentical},
                                                          {"different", ScenarioDiff::Verdict::kDifferent},
                                                          {"not_compared", ScenarioDiff::Verdict::kNotCompared}};
  return NameIn(kTable, verdict);
}

std::string RunDiffText(const RunDiff& diff) {
  std::ostringstream out;
  out << "A: " << diff.a.string() << "\nB: " << diff.b.string() << "\n";
  for (const ScenarioDiff& s : diff.scenarios) {
    out << s.id << ": ";
    switch (s.verdict()) {
      case ScenarioDiff::Verdict::kIdentical:
        out << "identical (" << Plural(s.ranks_a, "rank") << ", " << Plural(s.steps_compared, "step") << ", "
            << Plural(s.records_compared, "tensor record") << " compared)\n";
        break;
      case ScenarioDiff::Verdict::kNotCompared:
        out << "not compared (nothing to compare in both runs)\n";
        break;
      case ScenarioDiff::Verdict::kDifferent:
        out << "DIFFERENT";
        if (!s.no_traces_in.empty()) {
          out << " (traces only in " << (s.no_traces_in == "A" ? "B" : "A") << ")\n";
        } else if (s.first) {
          // A step one run lacks differs without being compared: counted apart, never "4 of 2".
          out << " from step " << s.first->step << " (" << (s.differing_steps - s.steps_in_one_run) << " of "
              << s.steps_compared << " compared steps differ";
          if (s.steps_in_one_run > 0) out << "; " << Plural(s.steps_in_one_run, "step") << " recorded in one run only";
          if (s.last_differing_step && *s.last_differing_step != s.first->step) {
            out << ", the last at step " << *s.last_differing_step;
          }
          out << ")\n";
          FirstDifferenceText(out, s);
        } else {
          out << " (world size " << s.ranks_a << " vs " << s.ranks_b << "; the common ranks agree at every step)\n";
        }
        break;
    }
    for (const std::string& note : s.notes) out << "  note: " << note << "\n";
  }
  auto list = [&out](const char* label, const std::vector<std::string>& ids) {
    if (ids.empty()) return;
    out << label;
    for (size_t i = 0; i < ids.size(); ++i) out << (i ? ", " : " ") << ids[i];
    out << "\n";
  };
  list("only in A:", diff.only_in_a);
  list("only in B:", diff.only_in_b);

  const int different = diff.Count(ScenarioDiff::Verdict::kDifferent);
  const int identical = diff.Count(ScenarioDiff::Verdict::kIdentical);
  const int not_compared = diff.Count(ScenarioDiff::Verdict::kNotCompared);
  out << (diff.Identical() ? "identical: " : different > 0 ? "DIFFERENT: " : "nothing compared: ") << different
      << " of " << diff.scenarios.size() << " scenarios in both runs differ, " << identical << " identical";
  if (not_compared > 0) out << ", " << not_compared << " not compared";
  out << "\n";
  return out.str();
}

Json RunDiffToJson(const RunDiff& diff) {
  Json scenarios = Json::array();
  for (const ScenarioDiff& s : diff.scenarios) {
    scenarios.push_back({
        {"id", s.id},
        {"verdict", ToString(s.verdict())},
        {"ranks_a", s.ranks_a},
        {"ranks_b", s.ranks_b},
        {"steps_compared", s.steps_compared},
        {"records_compared", s.records_compared},
        {"differing_steps", s.differing_steps},
        {"steps_in_one_run", s.steps_in_one_run},
        {"last_differing_step", s.last_differing_step ? Json(*s.last_differing_step) : Json(nullptr)},
        {"no_traces_in", s.no_traces_in.empty() ? Json(nullptr) : Json(s.no_traces_in)},
        {"first_difference", s.first ? StepDifferenceJson(*s.first) : Json(nullptr)},
        {"notes", s.notes},
    });
  }
  return Json{{"schema", kDiffSchema},
              {"a", diff.a.string()},
              {"b", diff.b.string()},
              {"identical", diff.Identical()},
              {"summary",
               {{"scenarios", diff.scenarios.size()},
                {"identical", diff.Count(ScenarioDiff::Verdict::kIdentical)},
                {"different", diff.Count(ScenarioDiff::Verdict::kDifferent)},
                {"not_compared", diff.Count(ScenarioDiff::Verdict::kNotCompared)}}},
              {"scenarios", scenarios},
              {"only_in_a", diff.only_in_a},
              {"only_in_b", diff.only_in_b}};
}

}  // namespace lockstep
