#include "harness/trace/trace_reader.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <fstream>

#include "harness/core/testing/build_paths.h"
#include "harness/trace/trace_writer.h"
#include "harness/core/testing/temp_dir.h"

namespace lockstep {
namespace {

const std::filesystem::path kFixtures = std::filesystem::path(LOCKSTEP_SOURCE_DIR) / "fixtures" / "traces";

class TraceReaderTest : public ::testing::Test {
 protected:
  std::filesystem::path Write(const std::string& name, const std::string& text) {
    auto p = dir_ / name;
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }

  testing::TempDir temp_{"lockstep_trace_reader_"};
  const std::filesystem::path dir_ = temp_.path();
};

const char* kHeader =
    R"({"type":"header","schema":"lockstep.trace/1.0","rank":1,"world_size":2,"host":"h","pid":7})"
    "\n";

TEST_F(TraceReaderTest, ReadsUpToTheLastWholeRecordOfACutFile) {
  std::string text = kHeader;
  text += R"({"type":"step","step":0,"loss":"nan","grad_norm":"nan","lr":0.1,"wall_s":0.1,"tensors":[]})" "\n";
  text += R"({"type":"step","step":1,"loss":0.5,"grad_norm":0.2,"lr":0.1,"wall_s":0.2,"tensors":[]})" "\n";
  const std::string cut = R"({"type":"step","step":2,"loss":0.4,"gr)";
  ASSERT_EQ(cut.size(), 38u);
  text += cut;
  auto t = ReadTrace(Write("rank-1.trace", text));
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_TRUE(t->truncated);
  EXPECT_TRUE(t->truncation_note.size() > 43 && t->truncation_note.compare(t->truncation_note.size() - 43, 43, "/rank-1.trace:4: last record cut (38 bytes)") == 0)
      << t->truncation_note << " names the file with its folder";
  ASSERT_EQ(t->steps.size(), 2u);
  EXPECT_EQ(t->steps.back().step, 1);
}

TEST_F(TraceReaderTest, ARecordWithoutItsNewlineIsCut) {
  std::string text = kHeader;
  text += R"({"type":"heartbeat","step":4,"wall_s":2.5})";
  auto t = ReadTrace(Write("rank-1.trace", text));
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_TRUE(t->truncated);
  EXPECT_EQ(t->last_heartbeat_s, 0.0);
}

TEST_F(TraceReaderTest, AnEmptyFileIsATruncatedEmptyTrace) {
  auto t = ReadTrace(Write("rank-0.trace", ""));
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_TRUE(t->truncated);
  EXPECT_TRUE(t->header.schema.empty());
  EXPECT_NE(t->truncation_note.find("rank-0.trace"), std::string::npos);
}

TEST_F(TraceReaderTest, ACutHeaderIsATruncatedEmptyTrace) {
  auto t = ReadTrace(Write("rank-0.trace", R"({"type":"header","schema":"lockst)"));
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_TRUE(t->truncated);
  EXPECT_TRUE(t->truncation_note.size() > 43 && t->truncation_note.compare(t->truncation_note.size() - 43, 43, "/rank-0.trace:1: last record cut (33 bytes)") == 0)
      << t->truncation_note << " names the file with its folder";
}

TEST_F(TraceReaderTest, AnotherMajorVersionIsAnError) {
  for (const char* version : {"3.0", "0.9"}) {
    auto t = ReadTrace(Write("rank-0.trace", std::string(R"({"type":"header","schema":"lockstep.trace/)") + version +
                                                 R"(","rank":0})" "\n"));
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(t.status().message().find("major version " + std::string(1, version[0]) + "; this lockstep reads major versions 1 to 2"),
              std::string::npos)
        << t.status().message();
  }
}

// /2 by hand: names once, then a table of 32 base64 characters per tensor (digest high, low,
// norm bits, each big-endian).
TEST_F(TraceReaderTest, ReadsAVersionTwoTableAgainstItsTensorsRecord) {
  std::string text = R"({"type":"header","schema":"lockstep.trace/2.0","rank":0})" "\n";
  text += R"({"type":"tensors","tensors":[{"name":"w","kind":"param","numel":4,"dtype":"float32","replicated":true},)"
          R"({"name":"w#exp_avg","kind":"optimizer_state","numel":4,"dtype":"float32","replicated":false}]})" "\n";
  // digest 0x0000000000000001 0x0000000000000002, norm 1.0 (0x3ff0000000000000); then all-ones
  // digest and norm -2.0 (0xc000000000000000).
  text += R"({"type":"step","step":1,"loss":0.5,"n":2,"table":"AAAAAAAAAAEAAAAAAAAAAj/wAAAAAAAA/////////////////////8AAAAAAAAAA"})" "\n";
  auto t = ReadTrace(Write("rank-0.trace", text));
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->steps.size(), 1u);
  const auto& ts = t->steps[0].tensors;
  ASSERT_EQ(ts.size(), 2u);
  EXPECT_EQ(ts[0].name, "w");
  EXPECT_EQ(ts[0].digest.ToHex(), "00000000000000010000000000000002");
  EXPECT_EQ(ts[0].norm, 1.0);
  EXPECT_EQ(ts[1].kind, TensorKind::kOptimizerState);
  EXPECT_FALSE(ts[1].replicated);
  EXPECT_EQ(ts[1].digest.ToHex(), "ffffffffffffffffffffffffffffffff");
  EXPECT_EQ(ts[1].norm, -2.0);
}

TEST_F(TraceReaderTest, AVersionTwoTableThatDoesNotFitIsAnErrorThatNamesTheLine) {
  const std::string head = std::string(R"({"type":"header","schema":"lockstep.trace/2.0","rank":0})") + "\n" +
                           R"({"type":"tensors","tensors":[{"name":"w","numel":4}]})" + "\n";
  const std::string entry = "AAAAAAAAAAEAAAAAAAAAAj/wAAAAAAAA";
  struct Case {
    std::string step;
    std::string message;
  };
  for (const Case& c : std::vector<Case>{
           {R"({"type":"step","step":1,"n":2,"table":")" + entry + entry + R"("})", "step 1 has 2 tensors, the trace's last `tensors` record names 1"},
           {R"({"type":"step","step":1,"n":1,"table":")" + entry + R"(A"})", "tensor table of 33 characters for 1 tensors"},
           {R"({"type":"step","step":1,"n":1,"table":")" + entry.substr(0, 28) + R"(**=="})", "is not base64"},
           {R"({"type":"step","step":1,"n":1,"table":7})", "field 'table' is not a string"},
       }) {
    auto t = ReadTrace(Write("rank-0.trace", head + c.step + "\n"));
    ASSERT_FALSE(t.ok()) << c.step;
    EXPECT_NE(t.status().message().find("rank-0.trace:3: "), std::string::npos) << t.status().message();
    EXPECT_NE(t.status().message().find(c.message), std::string::npos) << t.status().message();
  }
}

// The 2.2 test vector (docs/TRACE.md): two groups, a tensor of each, one of the whole world.
TEST_F(TraceReaderTest, ReadsReplicaGroupsAndTheTensorsThatNameThem) {
  std::string text = R"({"type":"header","schema":"lockstep.trace/2.2","rank":1,"world_size":4})" "\n";
  text += R"({"type":"replica_group","id":1,"ranks":[1,3],"label":"mesh dim replicate"})" "\n";
  text += R"({"type":"replica_group","id":2,"ranks":[0,1],"label":"mesh dim tp"})" "\n";
  text += R"({"type":"tensors","tensors":[{"name":"w","kind":"param","numel":4,"dtype":"float32","replicated":true,"group":1},)"
          R"({"name":"n","kind":"param","numel":4,"dtype":"float32","replicated":true,"group":2},)"
          R"({"name":"b","kind":"buffer","numel":4,"dtype":"float32","replicated":true}]})" "\n";
  const std::string entry = "AAAAAAAAAAEAAAAAAAAAAj/wAAAAAAAA";
  text += R"({"type":"step","step":1,"n":3,"table":")" + entry + entry + entry + "\"}\n";
  auto t = ReadTrace(Write("rank-1.trace", text));
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->steps.size(), 1u);
  const auto& ts = t->steps[0].tensors;
  ASSERT_EQ(ts.size(), 3u);
  ASSERT_NE(ts[0].group, nullptr);
  EXPECT_EQ(ts[0].group->ranks, (std::vector<int>{1, 3}));
  EXPECT_EQ(ts[0].group->label, "mesh dim replicate");
  EXPECT_EQ(DescribeReplicaGroup(*ts[1].group), "{0, 1} on mesh dim tp");
  EXPECT_EQ(ts[2].group, nullptr);
}

// The 2.3 fields: a step's optimizer settings and an all_to_all's split sizes, read back as
// written; a 2.2 trace without them reads with none, and a bad value names its line.
TEST_F(TraceReaderTest, ReadsOptimizerSettingsAndAllToAllSplits) {
  auto writer = TraceWriter::Open(dir_ / "rank-0.trace", TraceHeader{});
  ASSERT_TRUE(writer.ok()) << writer.status().ToString();
  CollectiveRecord a2a;
  a2a.group = "ep";
  a2a.op = "all_to_all";
  a2a.dtype = "float32";
  a2a.count = 24;
  a2a.group_rank = 1;
  a2a.in_splits = {16, 8};
  a2a.out_splits = {12, 12};
  a2a.step = 2;
  ASSERT_TRUE((*writer)->WriteCollectiveBegin(a2a).ok());
  CollectiveRecord plain;
  plain.group = "world";
  plain.op = "all_reduce";
  plain.where = "train.py:24 in \"main\" < run.py:3 in <module>";  // 2.6, escaped as JSON
  ASSERT_TRUE((*writer)->WriteCollectiveBegin(plain).ok());
  StepRecord step;
  step.step = 2;
  step.optimizer = {{"opt0.group0.lr", 0.1}, {"clip.max_norm", 1.0}, {"we\"ird", -0.0}};
  ASSERT_TRUE((*writer)->WriteStep(step).ok());
  ASSERT_TRUE((*writer)->WriteStep(StepRecord{}).ok());
  writer->reset();
  auto t = ReadTrace(dir_ / "rank-0.trace");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->header.schema, CurrentTraceSchema());
  ASSERT_EQ(t->collectives.size(), 2u);
  EXPECT_EQ(t->collectives[0].group_rank, 1);
  EXPECT_EQ(t->collectives[0].in_splits, (std::vector<int64_t>{16, 8}));
  EXPECT_EQ(t->collectives[0].out_splits, (std::vector<int64_t>{12, 12}));
  EXPECT_EQ(t->collectives[1].group_rank, -1);
  EXPECT_TRUE(t->collectives[1].in_splits.empty());
  EXPECT_EQ(t->collectives[0].where, "");
  EXPECT_EQ(t->collectives[1].where, "train.py:24 in \"main\" < run.py:3 in <module>");
  ASSERT_EQ(t->steps.size(), 2u);
  // Sorted by name as JSON objects read; the values exact.
  EXPECT_EQ(t->steps[0].optimizer,
            (std::vector<std::pair<std::string, double>>{{"clip.max_norm", 1.0}, {"opt0.group0.lr", 0.1}, {"we\"ird", -0.0}}));
  EXPECT_TRUE(t->steps[1].optimizer.empty());

  // A 2.2 step and collective: none.
  std::string old = R"({"type":"header","schema":"lockstep.trace/2.2","rank":0,"world_size":2})" "\n";
  old += R"({"type":"collective_begin","group":"world","seq":0,"op":"all_to_all","dtype":"float32","count":4,"root":-1,"reduce":"","step":1,"start_s":0.1})" "\n";
  old += R"({"type":"step","step":1,"loss":0.5,"grad_norm":0.2,"lr":0.1,"wall_s":0.2,"tensors":[]})" "\n";
  auto o = ReadTrace(Write("rank-0.trace", old));
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_TRUE(o->steps[0].optimizer.empty());
  EXPECT_EQ(o->collectives[0].group_rank, -1);
  EXPECT_TRUE(o->collectives[0].out_splits.empty());
  EXPECT_EQ(o->collectives[0].where, "");

  for (const std::string& bad : {
           std::string(R"({"type":"step","step":1,"optimizer":[0.1],"tensors":[]})"),
           std::string(R"({"type":"step","step":1,"optimizer":{"opt0.group0.lr":"fast"},"tensors":[]})"),
           std::string(R"({"type":"collective_begin","group":"w","seq":0,"op":"all_to_all","in_splits":[1.5]})"),
           std::string(R"({"type":"collective_begin","group":"w","seq":0,"op":"all_to_all","out_splits":3})"),
       }) {
    auto b = ReadTrace(Write("rank-0.trace", std::string(R"({"type":"header","schema":"lockstep.trace/2.3","rank":0,"world_size":2})") +
                                                 "\n" + bad + "\n"));
    ASSERT_FALSE(b.ok()) << bad;
    EXPECT_NE(b.status().message().find("rank-0.trace:2: "), std::string::npos) << b.status().message();
  }
}

// The 2.4 watch of the update: the parameters a rank wrote after its optimizer step, read back as
// written; a step without the field was not watched (nullopt), one with an empty list was and saw
// none; a bad value names its line.
TEST_F(TraceReaderTest, ReadsTheParametersEditedAfterTheUpdate) {
  auto writer = TraceWriter::Open(dir_ / "rank-0.trace", TraceHeader{});
  ASSERT_TRUE(writer.ok()) << writer.status().ToString();
  StepRecord watched;
  watched.step = 1;
  watched.edited_after_update = std::vector<std::string>{};
  StepRecord edited;
  edited.step = 2;
  edited.edited_after_update = std::vector<std::string>{"0.weight", "we\"ird"};
  ASSERT_TRUE((*writer)->WriteStep(watched).ok());
  ASSERT_TRUE((*writer)->WriteStep(edited).ok());
  StepRecord unwatched;
  unwatched.step = 3;
  ASSERT_TRUE((*writer)->WriteStep(unwatched).ok());
  writer->reset();
  auto t = ReadTrace(dir_ / "rank-0.trace");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->steps.size(), 3u);
  ASSERT_TRUE(t->steps[0].edited_after_update.has_value());
  EXPECT_TRUE(t->steps[0].edited_after_update->empty());
  EXPECT_EQ(t->steps[1].edited_after_update, (std::vector<std::string>{"0.weight", "we\"ird"}));
  EXPECT_FALSE(t->steps[2].edited_after_update.has_value());

  for (const std::string& bad : {
           std::string(R"({"type":"step","step":1,"edited_after_update":"0.weight","tensors":[]})"),
           std::string(R"({"type":"step","step":1,"edited_after_update":[3],"tensors":[]})"),
       }) {
    auto b = ReadTrace(Write("rank-0.trace", std::string(R"({"type":"header","schema":"lockstep.trace/2.4","rank":0,"world_size":2})") +
                                                 "\n" + bad + "\n"));
    ASSERT_FALSE(b.ok()) << bad;
    EXPECT_NE(b.status().message().find("rank-0.trace:2: field 'edited_after_update'"), std::string::npos)
        << b.status().message();
  }
}

// 2.5: a step's training forward passes, written where counted and read back; absent where not
// counted; anything but a count names its line.
TEST_F(TraceReaderTest, ReadsAStepsForwardPasses) {
  auto writer = TraceWriter::Open(dir_ / "rank-0.trace", TraceHeader{});
  ASSERT_TRUE(writer.ok()) << writer.status().ToString();
  StepRecord counted;
  counted.step = 1;
  counted.forwards = 2;
  StepRecord none;
  none.step = 2;
  none.forwards = 0;
  StepRecord uncounted;
  uncounted.step = 3;
  for (const StepRecord* s : {&counted, &none, &uncounted}) ASSERT_TRUE((*writer)->WriteStep(*s).ok());
  writer->reset();
  auto t = ReadTrace(dir_ / "rank-0.trace");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->steps.size(), 3u);
  EXPECT_EQ(t->steps[0].forwards, std::optional<int64_t>(2));
  EXPECT_EQ(t->steps[1].forwards, std::optional<int64_t>(0));
  EXPECT_FALSE(t->steps[2].forwards.has_value());

  for (const std::string& bad : {
           std::string(R"({"type":"step","step":1,"forwards":"2","tensors":[]})"),
           std::string(R"({"type":"step","step":1,"forwards":1.5,"tensors":[]})"),
           std::string(R"({"type":"step","step":1,"forwards":-1,"tensors":[]})"),
       }) {
    auto b = ReadTrace(Write("rank-0.trace", std::string(R"({"type":"header","schema":"lockstep.trace/2.5","rank":0,"world_size":2})") +
                                                 "\n" + bad + "\n"));
    ASSERT_FALSE(b.ok()) << bad;
    EXPECT_NE(b.status().message().find("rank-0.trace:2: field 'forwards'"), std::string::npos)
        << b.status().message();
  }
}

// The 2.4 replicated inputs of tensor-parallel modules: written and read back whole (module, input,
// digest, forwards, the group's ranks and label); a step without the field reads with none; a bad
// entry names its line.
TEST_F(TraceReaderTest, ReadsTheReplicatedInputsOfTensorParallelModules) {
  TraceHeader header;
  header.world_size = 4;
  auto writer = TraceWriter::Open(dir_ / "rank-0.trace", header);
  ASSERT_TRUE(writer.ok()) << writer.status().ToString();
  StepRecord with;
  with.step = 1;
  with.tp_inputs.push_back(TpInputRecord{"layers.0.up", "0", Digest128{0x0123456789abcdefULL, 42}, 2,
                                         ReplicaGroup{{0, 1}, "mesh dim tp"}});
  with.tp_inputs.push_back(TpInputRecord{"we\"ird", "mask", Digest128{7, 8}, 1, ReplicaGroup{{0, 2}, ""}});
  StepRecord without;
  without.step = 2;
  ASSERT_TRUE((*writer)->WriteStep(with).ok());
  ASSERT_TRUE((*writer)->WriteStep(without).ok());
  writer->reset();
  auto t = ReadTrace(dir_ / "rank-0.trace");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->steps.size(), 2u);
  EXPECT_EQ(t->steps[0].tp_inputs, with.tp_inputs);
  EXPECT_TRUE(t->steps[1].tp_inputs.empty());

  const std::string entry = R"("module":"up","input":"0","forwards":1,"ranks":[0,1],"label":"mesh dim tp")";
  for (const std::string& bad : {
           std::string(R"({"type":"step","step":1,"tp_replicated_inputs":{},"tensors":[]})"),
           std::string(R"({"type":"step","step":1,"tp_replicated_inputs":[3],"tensors":[]})"),
           R"({"type":"step","step":1,"tp_replicated_inputs":[{"digest":"xyz",)" + entry + R"(}],"tensors":[]})",
           R"({"type":"step","step":1,"tp_replicated_inputs":[{"digest":"00000000000000000000000000000001",)" +
               std::string(R"("module":"up","input":"0","forwards":1,"ranks":[0,5],"label":""}],"tensors":[]})"),
       }) {
    auto b = ReadTrace(Write("rank-0.trace", std::string(R"({"type":"header","schema":"lockstep.trace/2.4","rank":0,"world_size":2})") +
                                                 "\n" + bad + "\n"));
    ASSERT_FALSE(b.ok()) << bad;
    EXPECT_NE(b.status().message().find("rank-0.trace:2:"), std::string::npos) << b.status().message();
  }
}

TEST_F(TraceReaderTest, ABadReplicaGroupIsAnErrorThatNamesTheLine) {
  const std::string head = R"({"type":"header","schema":"lockstep.trace/2.2","rank":0,"world_size":4})" "\n";
  struct Case {
    std::string records;
    std::string message;
  };
  for (const Case& c : std::vector<Case>{
           {R"({"type":"tensors","tensors":[{"name":"w","group":3}]})", "names replica group 3, which no earlier"},
           {R"({"type":"replica_group","id":1,"ranks":[0,4],"label":""})", "replica group rank 4 is not a rank of a world of 4"},
           {R"({"type":"replica_group","id":1,"ranks":[2,1],"label":""})", "not increasing"},
           {R"({"type":"replica_group","id":0,"ranks":[0,1],"label":""})", "id must be at least 1"},
           {R"({"type":"replica_group","id":1,"label":""})", "without its `ranks` list"},
       }) {
    auto t = ReadTrace(Write("rank-0.trace", head + c.records + "\n"));
    ASSERT_FALSE(t.ok()) << c.records;
    EXPECT_NE(t.status().message().find("rank-0.trace:2: "), std::string::npos) << t.status().message();
    EXPECT_NE(t.status().message().find(c.message), std::string::npos) << t.status().message();
  }
  auto again = ReadTrace(Write("rank-0.trace", head + R"({"type":"replica_group","id":1,"ranks":[0,1],"label":""})" "\n" +
                                                   R"({"type":"replica_group","id":1,"ranks":[0,2],"label":""})" "\n"));
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.status().message().find("rank-0.trace:3: replica group 1 defined again, differently"), std::string::npos)
      << again.status().message();
}

TEST_F(TraceReaderTest, ANewerMinorVersionWithUnknownFieldsAndRecordsReads) {
  std::string text =
      R"({"type":"header","schema":"lockstep.trace/1.7","rank":0,"world_size":1,"gpu_uuid":"x"})" "\n"
      R"({"type":"power_sample","watts":300})" "\n"
      R"({"type":"step","step":1,"loss":1.5,"grad_norm":0.5,"lr":0.1,"wall_s":1,"energy_j":12,)"
      R"("tensors":[{"name":"w","kind":"param","digest":"000000000000000a000000000000000b","numel":4,)"
      R"("dtype":"float32","norm":2,"replicated":true,"layout":"strided"}]})" "\n";
  auto t = ReadTrace(Write("rank-0.trace", text));
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_FALSE(t->truncated);
  EXPECT_EQ(t->header.schema, "lockstep.trace/1.7");
  ASSERT_EQ(t->steps.size(), 1u);
  ASSERT_EQ(t->steps[0].tensors.size(), 1u);
  EXPECT_EQ(t->steps[0].tensors[0].digest, (Digest128{10, 11}));
  EXPECT_EQ(t->steps[0].tensors[0].norm, 2.0);
}

TEST_F(TraceReaderTest, AFileThatIsNotATraceIsAnError) {
  EXPECT_FALSE(ReadTrace(Write("a.trace", R"({"type":"step","step":1})" "\n")).ok());
  EXPECT_FALSE(ReadTrace(Write("b.trace", R"({"type":"header","schema":"other/1.0"})" "\n")).ok());
  EXPECT_FALSE(ReadTrace(Write("c.trace", "hello world\n")).ok());
  EXPECT_FALSE(ReadTrace(dir_ / "does-not-exist.trace").ok());
}

TEST_F(TraceReaderTest, GarbageInTheMiddleIsAnErrorThatNamesTheLine) {
  std::string text = kHeader;
  text += "{not json}\n";
  text += R"({"type":"heartbeat","step":1,"wall_s":1})" "\n";
  auto t = ReadTrace(Write("rank-1.trace", text));
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("rank-1.trace:2"), std::string::npos) << t.status().message();
}

TEST_F(TraceReaderTest, AFieldOfTheWrongTypeIsAnErrorThatNamesTheLine) {
  std::string text = kHeader;
  text += R"({"type":"step","step":"three","tensors":[]})" "\n";
  auto t = ReadTrace(Write("rank-1.trace", text));
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("rank-1.trace:2: bad trace record"), std::string::npos) << t.status().message();
}

TEST_F(TraceReaderTest, NullReadsAsNan) {
  std::string text = kHeader;
  text += R"({"type":"step","step":1,"loss":null,"grad_norm":1,"tensors":[]})" "\n";
  auto t = ReadTrace(Write("rank-1.trace", text));
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_TRUE(std::isnan(t->steps[0].loss));
}

// Integer fields are JSON integers in range: no silent 3.5 -> 3, null -> 0, 1e300 -> INT64_MIN.
TEST_F(TraceReaderTest, AnIntegerFieldThatIsNotAnIntegerInRangeIsAnErrorThatNamesTheLine) {
  for (const std::string value : {"3.5", "null", "1e300", "\"3\"", "9223372036854775808"}) {
    std::string text = kHeader;
    text += R"({"type":"step","step":)" + value + R"(,"loss":0.5,"grad_norm":0.2,"lr":0.1,"wall_s":0.2,"tensors":[]})" "\n";
    auto t = ReadTrace(Write("rank-1.trace", text));
    ASSERT_FALSE(t.ok()) << value;
    EXPECT_NE(t.status().message().find("rank-1.trace:2: bad trace record"), std::string::npos) << t.status().message();
    EXPECT_NE(t.status().message().find("field 'step' must be an integer from -9223372036854775808"), std::string::npos)
        << t.status().message();
  }
  std::string text = kHeader;
  text += R"({"type":"collective_begin","group":"world","seq":-1,"op":"barrier"})" "\n";
  auto t = ReadTrace(Write("rank-1.trace", text));
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("field 'seq' must be an integer from 0"), std::string::npos) << t.status().message();
}

TEST_F(TraceReaderTest, ARecordNestedTooDeeplyIsAnErrorNotACrash) {
  std::string text = kHeader;
  text += R"({"type":"log","line":)" + std::string(100000, '[') + std::string(100000, ']') + "}\n";
  auto t = ReadTrace(Write("rank-1.trace", text));
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("rank-1.trace:2: line 1, column 85: nested deeper than 64 levels"), std::string::npos)
      << t.status().message();
}

TEST_F(TraceReaderTest, AFolderWhereATraceShouldBeIsCalledAFolder) {
  std::filesystem::create_directories(dir_ / "rank-0.trace");
  auto traces = ReadTraceDir(dir_, 1);
  ASSERT_FALSE(traces.ok());
  EXPECT_NE(traces.status().message().find("is a directory, not a trace file"), std::string::npos)
      << traces.status().message();
  EXPECT_EQ(traces.status().message().find("empty file"), std::string::npos);
}

TEST_F(TraceReaderTest, ReadTraceDirGivesMissingRanksAnEmptyTraceWithANote) {
  TraceHeader h;
  h.rank = 0;
  h.world_size = 3;
  {
    auto w = TraceWriter::Open(dir_ / TraceFileName(0), h);
    ASSERT_TRUE(w.ok());
  }
  h.rank = 2;
  {
    auto w = TraceWriter::Open(dir_ / TraceFileName(2), h);
    ASSERT_TRUE(w.ok());
  }
  auto traces = ReadTraceDir(dir_, 3);
  ASSERT_TRUE(traces.ok()) << traces.status().ToString();
  ASSERT_EQ(traces->size(), 3u);
  EXPECT_FALSE((*traces)[0].missing);
  EXPECT_TRUE((*traces)[1].missing);
  EXPECT_EQ((*traces)[1].header.rank, 1);
  EXPECT_TRUE((*traces)[1].truncation_note.size() > 65 && (*traces)[1].truncation_note.compare((*traces)[1].truncation_note.size() - 65, 65, "/rank-1.trace: missing (the rank never started writing its trace)") == 0)
      << (*traces)[1].truncation_note << " names the file with its folder";
  EXPECT_EQ((*traces)[2].header.rank, 2);
}

TEST_F(TraceReaderTest, ReadTraceDirRejectsAFileOfAnotherRank) {
  TraceHeader h;
  h.rank = 1;
  auto w = TraceWriter::Open(dir_ / TraceFileName(0), h);
  ASSERT_TRUE(w.ok());
  EXPECT_FALSE(ReadTraceDir(dir_, 1).ok());
  EXPECT_FALSE(ReadTraceDir(dir_, 0).ok());
}

TEST(TraceFixtureTest, CleanFourRankRunReads) {
  auto traces = ReadTraceDir(kFixtures / "clean_4rank", 4);
  ASSERT_TRUE(traces.ok()) << traces.status().ToString();
  for (int r = 0; r < 4; ++r) {
    const RankTrace& t = (*traces)[r];
    EXPECT_EQ(t.header.rank, r);
    EXPECT_EQ(t.header.backend, "mpi");
    EXPECT_FALSE(t.truncated);
    ASSERT_EQ(t.steps.size(), 6u);
    EXPECT_TRUE(std::isnan(t.steps[0].loss));
    EXPECT_EQ(t.steps[0].tensors.size(), 4u);   // params only at step 0
    EXPECT_EQ(t.steps[5].tensors.size(), 12u);  // params, grads, momentum
    EXPECT_EQ(t.collectives.size(), 14u);       // 4 broadcasts + 2 buckets x 5 steps
    for (const auto& c : t.collectives) EXPECT_TRUE(c.end_s.has_value());
    ASSERT_TRUE(t.footer.has_value());
    EXPECT_EQ(t.footer->steps_completed, 5);
    EXPECT_EQ(t.log_tail.size(), 1u);
  }
}

// Written by lockstep-rank itself (lockstep.trace/2): the same steps on every rank, every tensor
// with its name from the `tensors` records and the same digest on every rank.
TEST(TraceFixtureTest, VersionTwoRunOfTheReferenceTrainerReads) {
  auto traces = ReadTraceDir(kFixtures / "v2_ddp_mlp", 4);
  ASSERT_TRUE(traces.ok()) << traces.status().ToString();
  for (const RankTrace& t : *traces) {
    EXPECT_EQ(t.header.schema, "lockstep.trace/2.0");
    ASSERT_TRUE(t.footer);
    ASSERT_EQ(t.steps.size(), 9u);  // step 0 and 8 steps
    EXPECT_FALSE(t.steps[0].tensors.empty());
    EXPECT_GT(t.steps[1].tensors.size(), t.steps[0].tensors.size());  // optimizer state from step 1 on
    for (size_t k = 0; k < t.steps.size(); ++k) {
      ASSERT_EQ(t.steps[k].tensors.size(), (*traces)[0].steps[k].tensors.size());
      for (size_t i = 0; i < t.steps[k].tensors.size(); ++i) {
        const TensorRecord& mine = t.steps[k].tensors[i];
        const TensorRecord& rank0 = (*traces)[0].steps[k].tensors[i];
        EXPECT_FALSE(mine.name.empty());
        EXPECT_EQ(mine.name, rank0.name);
        if (mine.replicated) {
          EXPECT_EQ(mine.digest, rank0.digest) << mine.name << " step " << k;
        }
      }
    }
  }
}

TEST(TraceFixtureTest, TruncatedFixtureIsReadUpToItsLastWholeRecord) {
  auto traces = ReadTraceDir(kFixtures / "truncated_rank1_step3", 2);
  ASSERT_TRUE(traces.ok()) << traces.status().ToString();
  EXPECT_FALSE((*traces)[0].truncated);
  const RankTrace& t = (*traces)[1];
  EXPECT_TRUE(t.truncated);
  EXPECT_TRUE(t.truncation_note.size() > 44 && t.truncation_note.compare(t.truncation_note.size() - 44, 44, "/rank-1.trace:30: last record cut (57 bytes)") == 0)
      << t.truncation_note << " names the file with its folder";
  ASSERT_FALSE(t.steps.empty());
  EXPECT_EQ(t.steps.back().step, 2);
  EXPECT_FALSE(t.footer.has_value());
}

TEST(TraceFixtureTest, HangFixtureHasOpenCollectives) {
  auto traces = ReadTraceDir(kFixtures / "hang_rank1_step3", 4);
  ASSERT_TRUE(traces.ok()) << traces.status().ToString();
  for (int r : {0, 2, 3}) {
    const auto& c = (*traces)[r].collectives.back();
    EXPECT_EQ(c.seq, 8u);
    EXPECT_FALSE(c.end_s.has_value());
  }
  EXPECT_EQ((*traces)[1].collectives.back().seq, 7u);
  EXPECT_TRUE((*traces)[1].collectives.back().end_s.has_value());
}

}  // namespace
}  // namespace lockstep
