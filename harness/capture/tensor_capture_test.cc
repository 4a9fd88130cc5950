#include "harness/capture/tensor_capture.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdint>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "harness/capture/tensor_digest.h"
#include "harness/capture/testing/tensor_record_oracle.h"
#include "harness/trace/testing/norm_test_values.h"

namespace lockstep {
namespace {

using ::lockstep::testing::Bits;  // harness/trace/testing/norm_test_values.h

// Each record as MakeTensorRecord, the per-tensor definition, makes it: digest, norm (bit for bit),
// numel, dtype; name, kind, replicated and group as given.
TEST(TensorCaptureTest, RecordsAreThePerTensorDefinitions) {
  torch::manual_seed(5);
  const torch::Tensor w = torch::randn({16, 8});
  const std::vector<torch::Tensor> tensors = {w, w.t(), torch::randn({3}, torch::kFloat64),
                                              torch::arange(10, torch::kInt64), torch::Tensor(),
                                              torch::randn({4}).to(torch::kBFloat16)};
  const auto group = std::make_shared<const ReplicaGroup>(ReplicaGroup{{0, 2}, "mesh dim dp"});
  TensorCapture capture;
  std::vector<TensorRecord> records;
  capture.Begin(records);
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorKind kind = i % 2 ? TensorKind::kGrad : TensorKind::kParam;
    ASSERT_TRUE(capture.Add("t" + std::to_string(i), kind, tensors[i], i != 2, i == 3 ? group : nullptr).ok());
  }
  ASSERT_TRUE(capture.Finish().ok());
  ASSERT_EQ(records.size(), tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorKind kind = i % 2 ? TensorKind::kGrad : TensorKind::kParam;
    Result<TensorRecord> want = MakeTensorRecord("t" + std::to_string(i), kind, tensors[i], i != 2);
    ASSERT_TRUE(want.ok()) << want.status().ToString();
    const TensorRecord& got = records[i];
    EXPECT_EQ(got.name, want->name);
    EXPECT_EQ(got.kind, want->kind);
    EXPECT_EQ(got.digest, want->digest) << got.name;
    EXPECT_EQ(Bits(got.norm), Bits(want->norm)) << got.name << ": " << got.norm << " vs " << want->norm;
    EXPECT_EQ(got.numel, want->numel);
    EXPECT_EQ(got.dtype, want->dtype);
    EXPECT_EQ(got.replicated, want->replicated);
    EXPECT_EQ(got.group, i == 3 ? group : nullptr);
  }
}

// A second list into the same records: fewer tensors shrink them, and nothing of the first list's
// records survives in the second's (a group given before, none now).
TEST(TensorCaptureTest, ASecondListReusesTheRecordsAndLeavesNothingOfTheFirst) {
  TensorCapture capture;
  std::vector<TensorRecord> records;
  const auto group = std::make_shared<const ReplicaGroup>(ReplicaGroup{{1, 3}, ""});
  capture.Begin(records);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(capture.Add("first" + std::to_string(i), TensorKind::kParam, torch::ones({4}), true, group).ok());
  ASSERT_TRUE(capture.Finish().ok());
  ASSERT_EQ(records.size(), 3u);

  capture.Begin(records);
  const torch::Tensor x = torch::full({2}, 3.0);
  ASSERT_TRUE(capture.Add("second", TensorKind::kOptimizerState, x, false).ok());
  ASSERT_TRUE(capture.Finish().ok());
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].name, "second");
  EXPECT_EQ(records[0].kind, TensorKind::kOptimizerState);
  EXPECT_FALSE(records[0].replicated);
  EXPECT_EQ(records[0].group, nullptr);
  EXPECT_EQ(records[0].digest, DigestTensor(x));
  EXPECT_EQ(records[0].norm, std::sqrt(18.0));
}

// A step record captured again with the tensors of its last capture keeps its layout_id; anything a
// `tensors` record says of a tensor changed, fewer or more tensors, another record, or a list that
// failed gets an id no capture gave before (TraceWriter then compares the layout).
TEST(TensorCaptureTest, TheLayoutIdStaysOnlyWhileTheRecordDescribesTheSameTensors) {
  struct Listed {
    std::string name;
    TensorKind kind;
    torch::Tensor tensor;
    bool replicated;
    std::shared_ptr<const ReplicaGroup> group;
  };
  const auto dp = std::make_shared<const ReplicaGroup>(ReplicaGroup{{0, 1}, "mesh dim dp"});
  const std::vector<Listed> base = {{"layer.weight", TensorKind::kParam, torch::ones({4, 2}), true, nullptr},
                                    {"layer.weight", TensorKind::kGrad, torch::ones({4, 2}), true, dp},
                                    {"layer.weight#exp_avg", TensorKind::kOptimizerState, torch::Tensor(), false, nullptr}};
  TensorCapture capture;
  auto capture_into = [&](StepRecord& record, const std::vector<Listed>& list) {
    capture.Begin(record);
    for (const Listed& l : list) EXPECT_TRUE(capture.Add(l.name, l.kind, l.tensor, l.replicated, l.group).ok());
    EXPECT_TRUE(capture.Finish().ok());
    EXPECT_EQ(record.tensors.size(), list.size());
    return record.layout_id;
  };
  StepRecord record;
  const uint64_t first = capture_into(record, base);
  EXPECT_NE(first, 0u);
  std::vector<Listed> new_values = base;
  new_values[0].tensor = torch::full({4, 2}, 3.0);
  EXPECT_EQ(capture_into(record, new_values), first) << "new values, the same layout";
  EXPECT_EQ(record.tensors[0].digest, DigestTensor(new_values[0].tensor));

  std::vector<std::pair<std::string, std::function<void(std::vector<Listed>&)>>> changes = {
      {"a name", [](std::vector<Listed>& l) { l[1].name += "x"; }},
      {"a kind", [](std::vector<Listed>& l) { l[1].kind = TensorKind::kParam; }},
      {"an element count", [](std::vector<Listed>& l) { l[0].tensor = torch::ones({4, 3}); }},
      {"a dtype", [](std::vector<Listed>& l) { l[0].tensor = torch::ones({4, 2}, torch::kFloat64); }},
      {"undefined", [](std::vector<Listed>& l) { l[0].tensor = torch::Tensor(); }},
      {"defined", [](std::vector<Listed>& l) { l[2].tensor = torch::zeros({0}); }},
      {"replicated", [](std::vector<Listed>& l) { l[0].replicated = false; }},
      {"an equal group in another object", [&](std::vector<Listed>& l) { l[1].group = std::make_shared<const ReplicaGroup>(*dp); }},
      {"no group", [](std::vector<Listed>& l) { l[1].group = nullptr; }},
      {"one tensor fewer", [](std::vector<Listed>& l) { l.pop_back(); }},
      {"one tensor more", [](std::vector<Listed>& l) { l.push_back(l[0]); }},
  };
  std::set<uint64_t> ids = {first};
  for (const auto& [what, change] : changes) {
    std::vector<Listed> changed = base;
    change(changed);
    const uint64_t id = capture_into(record, changed);
    EXPECT_TRUE(ids.insert(id).second) << what << ": id " << id << " was given before";
    EXPECT_EQ(capture_into(record, changed), id) << what << ", captured again";
    const uint64_t back = capture_into(record, base);
    EXPECT_TRUE(ids.insert(back).second) << what << ", then the first list again: id " << back;
  }
  // Any record that holds the last id keeps it: a copy, or a record filled lists ago (the rank's
  // asynchronous capture cycles through a few); one that holds an older id does not.
  const uint64_t last = record.layout_id;
  StepRecord copy = record;
  EXPECT_EQ(capture_into(copy, base), last) << "a copy of the last record";
  EXPECT_EQ(capture_into(record, base), last) << "the first record after its copy";
  StepRecord other;
  std::vector<Listed> shorter = base;
  shorter.pop_back();
  const uint64_t other_id = capture_into(other, shorter);
  EXPECT_TRUE(ids.insert(other_id).second) << "another layout into another record";
  EXPECT_EQ(capture_into(other, shorter), other_id) << "the same again";
  EXPECT_TRUE(ids.insert(capture_into(copy, base)).second) << "a record of the layout before";
  // An id someone changed, a list that failed.
  record.layout_id = 0;
  EXPECT_TRUE(ids.insert(capture_into(record, base)).second) << "an id set to 0";
  const uint64_t before_failure = record.layout_id;
  capture.Begin(record);
  EXPECT_EQ(record.layout_id, 0u) << "no id while a list is written into the record";
  EXPECT_FALSE(capture.Add("meta", TensorKind::kParam, torch::empty({4}, torch::kMeta), true).ok());
  EXPECT_EQ(record.layout_id, 0u) << "a list that failed leaves no id";
  copy.layout_id = before_failure;  // what a copy taken before the failure would hold
  EXPECT_TRUE(ids.insert(capture_into(copy, base)).second) << "after a list that failed";
  // A list into a plain vector of records carries no id and sets none.
  std::vector<TensorRecord> plain;
  capture.Begin(plain);
  ASSERT_TRUE(capture.Add("x", TensorKind::kParam, torch::ones({2}), true).ok());
  ASSERT_TRUE(capture.Finish().ok());
  EXPECT_TRUE(ids.insert(capture_into(record, base)).second) << "after a list into a plain vector";
}

// FinishLater ends a list as Finish does, without digesting it: the records describe the tensors
// (the digests are the caller's, from the buffers it was handed), and the layout id is kept and
// renewed by the same rule.
TEST(TensorCaptureTest, FinishLaterDescribesTheTensorsAndKeepsTheLayoutIdsRule) {
  const torch::Tensor w = torch::randn({4, 2});
  const torch::Tensor b = torch::randn({2}, torch::kFloat64);
  TensorCapture capture;
  StepRecord record;
  auto later = [&](const std::vector<torch::Tensor>& tensors, std::vector<CaptureBuffer>& buffers) {
    capture.Begin(record);
    for (size_t i = 0; i < tensors.size(); ++i) {
      EXPECT_TRUE(capture.Add("t" + std::to_string(i), TensorKind::kParam, tensors[i], true).ok());
    }
    const std::optional<BufferPlace> place = capture.Buffers(buffers);
    if (place) capture.FinishLater();
    return place.has_value();
  };
  std::vector<CaptureBuffer> buffers;
  ASSERT_TRUE(later({w, b}, buffers));
  ASSERT_EQ(record.tensors.size(), 2u);
  EXPECT_EQ(record.tensors[1].name, "t1");
  EXPECT_EQ(record.tensors[1].dtype, "float64");
  EXPECT_EQ(record.tensors[0].numel, 8);
  ASSERT_EQ(buffers.size(), 2u);
  EXPECT_EQ(buffers[0].data, w.const_data_ptr());
  EXPECT_EQ(buffers[1].squares, SquaredAs::kFloat64);
  const uint64_t first = record.layout_id;
  EXPECT_NE(first, 0u);
  ASSERT_TRUE(later({w, b}, buffers));
  EXPECT_EQ(record.layout_id, first) << "the same tensors again";
  ASSERT_TRUE(later({w}, buffers));
  EXPECT_EQ(record.tensors.size(), 1u);
  EXPECT_NE(record.layout_id, first) << "one tensor fewer";
  // A view cannot be read where it is: no buffers, and Finish digests it as before.
  EXPECT_FALSE(later({w.t()}, buffers));
  ASSERT_TRUE(capture.Finish().ok());
  EXPECT_EQ(record.tensors[0].digest, DigestTensor(w.t()));
}

// Lists `tensors` (named t0, t1, ...) into `record` and digests them.
void ListInto(TensorCapture& capture, StepRecord& record, const std::vector<torch::Tensor>& tensors) {
  capture.Begin(record);
  for (size_t i = 0; i < tensors.size(); ++i) {
    ASSERT_TRUE(capture.Add("t" + std::to_string(i), TensorKind::kParam, tensors[i], true).ok());
  }
  ASSERT_TRUE(capture.Finish().ok());
}

// Repeat() digests the last list's tensors where they lie: after in-place changes, the records are
// what a new list would give (the per-tensor definition), with the descriptions and layout id kept.
TEST(TensorCaptureTest, ARepeatRecordsTheTensorsValuesAsTheyAreNow) {
  torch::manual_seed(7);
  const std::vector<torch::Tensor> tensors = {torch::randn({16, 8}), torch::arange(6, torch::kInt64),
                                              torch::randn({5}).to(torch::kBFloat16), torch::Tensor(),
                                              torch::randn({300000})};  // over one 1 MiB chunk
  TensorCapture capture;
  StepRecord record;
  ListInto(capture, record, tensors);
  const uint64_t layout = record.layout_id;
  ASSERT_TRUE(capture.CanRepeat(record));
  for (int round = 0; round < 3; ++round) {
    for (const torch::Tensor& t : tensors) {
      if (t.defined()) t.add_(1);
    }
    ASSERT_TRUE(capture.Repeat(record).ok());
    EXPECT_EQ(record.layout_id, layout);
    ASSERT_EQ(record.tensors.size(), tensors.size());
    for (size_t i = 0; i < tensors.size(); ++i) {
      Result<TensorRecord> want = MakeTensorRecord("t" + std::to_string(i), TensorKind::kParam, tensors[i], true);
      ASSERT_TRUE(want.ok());
      EXPECT_EQ(record.tensors[i].name, want->name);
      EXPECT_EQ(record.tensors[i].dtype, want->dtype);
      EXPECT_EQ(record.tensors[i].digest, want->digest) << "round " << round << " t" << i;
      EXPECT_EQ(Bits(record.tensors[i].norm), Bits(want->norm)) << "round " << round << " t" << i;
    }
  }
}

// Only a list read where its tensors lie, with its norms summed in the pass, can be repeated, and
// only into the record it went into: a view (read from a copy), a complex tensor (LibTorch's norm,
// taken when it was added), another record, or a list that did not finish cannot.
TEST(TensorCaptureTest, OnlyAFinishedListReadInPlaceCanBeRepeatedIntoItsRecord) {
  const torch::Tensor w = torch::randn({6, 4});
  TensorCapture capture;
  StepRecord record;
  ListInto(capture, record, {w});
  EXPECT_TRUE(capture.CanRepeat(record));
  StepRecord other = record;  // the same descriptions and id, but not the record the list went into
  EXPECT_FALSE(capture.CanRepeat(other));

  ListInto(capture, record, {w, w.t()});
  EXPECT_FALSE(capture.CanRepeat(record)) << "a view is read from a copy made when it was added";
  ListInto(capture, record, {w, torch::randn({3}, torch::kComplexFloat)});
  EXPECT_FALSE(capture.CanRepeat(record)) << "a complex tensor's norm was taken when it was added";

  capture.Begin(record);
  ASSERT_TRUE(capture.Add("t0", TensorKind::kParam, w, true).ok());
  EXPECT_FALSE(capture.CanRepeat(record)) << "a list not finished";
  capture.FinishLater();
  EXPECT_FALSE(capture.CanRepeat(record)) << "a list ended without its digests";
}

// FirstDifference tells two lists of the same tensors from lists where one tensor has other storage
// (even with the same values), another name or dtype, or where one list is longer.
TEST(TensorCaptureTest, FirstDifferenceFindsTheFirstTensorListedOtherwise) {
  const torch::Tensor a = torch::randn({4, 4});
  const torch::Tensor b = torch::randn({8});
  struct Listed {
    TensorCapture capture;
    StepRecord record;
  };
  auto listed = [](std::vector<std::pair<std::string, torch::Tensor>> items) {
    auto l = std::make_unique<Listed>();
    l->capture.Begin(l->record);
    for (const auto& [name, t] : items) EXPECT_TRUE(l->capture.Add(name, TensorKind::kParam, t, true).ok());
    l->capture.FinishLater();
    return l;
  };
  const auto base = listed({{"a", a}, {"b", b}});
  auto first_difference = [&](const std::unique_ptr<Listed>& other) {
    return base->capture.FirstDifference(base->record, other->capture, other->record);
  };
  EXPECT_EQ(first_difference(listed({{"a", a}, {"b", b}})), std::nullopt);
  EXPECT_EQ(first_difference(listed({{"a", a}, {"b", b.clone()}})), std::optional<size_t>(1));
  EXPECT_EQ(first_difference(listed({{"x", a}, {"b", b}})), std::optional<size_t>(0));
  EXPECT_EQ(first_difference(listed({{"a", a}, {"b", b.view(torch::kInt32)}})), std::optional<size_t>(1));
  EXPECT_EQ(first_difference(listed({{"a", a}})), std::optional<size_t>(1));
  EXPECT_EQ(first_difference(listed({{"a", a}, {"b", b}, {"c", b}})), std::optional<size_t>(2));
  // A copy of the record describes the list as well (the asynchronous capture's records are
  // copies of one layout).
  const StepRecord copy = base->record;
  const auto same = listed({{"a", a}, {"b", b}});
  EXPECT_EQ(base->capture.FirstDifference(copy, same->capture, same->record), std::nullopt);
}

// A tensor LibTorch cannot read (a meta tensor has no bytes to copy): an error naming it.
TEST(TensorCaptureTest, ATensorThatCannotBeReadIsAnErrorNamingIt) {
  TensorCapture capture;
  std::vector<TensorRecord> records;
  capture.Begin(records);
  ASSERT_TRUE(capture.Add("fine", TensorKind::kParam, torch::ones({2}), true).ok());
  const Status s = capture.Add("layer.weight", TensorKind::kParam, torch::empty({4}, torch::kMeta), true);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.ToString().find("digest of layer.weight"), std::string::npos) << s.ToString();
}

}  // namespace
}  // namespace lockstep
