#include "harness/trace/trace_stream.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>

#include "harness/core/testing/temp_dir.h"
#include "harness/trace/tensor_table.h"
#include "harness/trace/trace_reader.h"
#include "harness/trace/trace_writer.h"

namespace lockstep {
namespace {

StepRecord MakeStep(int64_t step, int tensors) {
  StepRecord s;
  s.step = step;
  s.loss = 1.0 / static_cast<double>(step + 1);
  for (int i = 0; i < tensors; ++i) {
    TensorRecord t;
    t.name = "layers." + std::to_string(i / 4) + ".weight_" + std::to_string(i % 4);
    t.kind = i % 3 == 0 ? TensorKind::kGrad : TensorKind::kParam;
    t.numel = 1000 + i;
    t.dtype = "float32";
    t.digest = {static_cast<uint64_t>(step) * 1000003u + static_cast<uint64_t>(i), ~static_cast<uint64_t>(i)};
    t.norm = 0.001 * (i + 1) * static_cast<double>(step + 1);
    s.tensors.push_back(t);
  }
  return s;
}

Result<std::unique_ptr<TraceWriter>> OpenWriter(const std::filesystem::path& path, int rank) {
  TraceHeader h;
  h.rank = rank;
  h.world_size = 2;
  return TraceWriter::Open(path, h);
}

// Steps of 300 tensors are about 10 KB each: 200 of them cross the 64 KiB read buffer many times,
// records cut across its edges. The stream hands out every step whole and keeps none of their
// tensors; the whole-trace reader, the same parser, gives the same steps.
TEST(RankTraceStreamTest, HandsOutEveryStepWholeAndKeepsOnlyTheirScalars) {
  testing::TempDir temp("lockstep_trace_stream_");
  const auto path = temp.path() / TraceFileName(0);
  {
    auto w = OpenWriter(path, 0);
    ASSERT_TRUE(w.ok());
    for (int k = 0; k < 200; ++k) {
      ASSERT_TRUE((*w)->WriteStep(MakeStep(k, 300)).ok());
      ASSERT_TRUE((*w)->WriteHeartbeat(k, 0.5 * k).ok());
    }
    ASSERT_TRUE((*w)->WriteFooter({199, "ok"}).ok());
  }
  auto stream = RankTraceStream::Open(path);
  ASSERT_TRUE(stream.ok()) << stream.status().ToString();
  int64_t expected = 0;
  for (;;) {
    auto step = (*stream)->NextStep();
    ASSERT_TRUE(step.ok()) << step.status().ToString();
    if (!*step) break;
    const StepRecord want = MakeStep(expected, 300);
    ASSERT_EQ((*step)->step, expected);
    ASSERT_EQ((*step)->tensors.size(), 300u);
    for (size_t i = 0; i < 300; ++i) {
      ASSERT_EQ((*step)->tensors[i].digest, want.tensors[i].digest);
      ASSERT_EQ((*step)->tensors[i].norm, want.tensors[i].norm);
      ASSERT_EQ((*step)->tensors[i].name, want.tensors[i].name);
    }
    // Memory does not grow with steps: what the stream keeps of each step is its scalars.
    ASSERT_EQ((*stream)->trace().steps.size(), static_cast<size_t>(expected + 1));
    for (const StepRecord& kept : (*stream)->trace().steps) ASSERT_TRUE(kept.tensors.empty());
    ++expected;
  }
  EXPECT_EQ(expected, 200);
  const RankTrace& folded = (*stream)->trace();
  ASSERT_TRUE(folded.footer);
  EXPECT_EQ(folded.footer->steps_completed, 199);
  EXPECT_EQ(folded.last_heartbeat_s, 0.5 * 199);
  EXPECT_FALSE(folded.truncated);
  EXPECT_EQ(folded.steps.back().loss, 1.0 / 200);

  auto whole = ReadTrace(path);
  ASSERT_TRUE(whole.ok());
  ASSERT_EQ(whole->steps.size(), 200u);
  EXPECT_EQ(whole->steps[150].tensors[299].digest, MakeStep(150, 300).tensors[299].digest);
}

TEST(RankTraceStreamTest, ACutLastRecordEndsTheStreamMarkedTruncated) {
  testing::TempDir temp("lockstep_trace_stream_cut_");
  const auto path = temp.path() / TraceFileName(0);
  {
    auto w = OpenWriter(path, 0);
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->WriteStep(MakeStep(0, 4)).ok());
  }
  std::ofstream(path, std::ios::app | std::ios::binary) << R"({"type":"step","step":1,"n":4,"table":"AAAA)";
  auto stream = RankTraceStream::Open(path);
  ASSERT_TRUE(stream.ok());
  auto first = (*stream)->NextStep();
  ASSERT_TRUE(first.ok() && *first);
  auto end = (*stream)->NextStep();
  ASSERT_TRUE(end.ok());
  EXPECT_FALSE(*end);
  EXPECT_TRUE((*stream)->trace().truncated);
  EXPECT_TRUE((*stream)->trace().truncation_note.size() > 43 && (*stream)->trace().truncation_note.compare((*stream)->trace().truncation_note.size() - 43, 43, "/rank-0.trace:4: last record cut (43 bytes)") == 0)
      << (*stream)->trace().truncation_note << " names the file with its folder";
}

TEST(OpenTraceDirTest, MissingRanksAreEmptyAndAnotherRanksFileIsAnError) {
  testing::TempDir temp("lockstep_trace_stream_dir_");
  {
    auto w = OpenWriter(temp.path() / TraceFileName(0), 0);
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->WriteStep(MakeStep(0, 2)).ok());
  }
  auto streams = OpenTraceDir(temp.path(), 3);
  ASSERT_TRUE(streams.ok()) << streams.status().ToString();
  ASSERT_EQ(streams->size(), 3u);
  EXPECT_EQ((*streams)[0]->trace().header.rank, 0);  // read before any step
  EXPECT_TRUE((*streams)[2]->trace().missing);
  EXPECT_EQ((*streams)[2]->trace().header.rank, 2);
  auto none = (*streams)[2]->NextStep();
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(*none);

  {
    auto w = OpenWriter(temp.path() / TraceFileName(1), 0);  // rank 0's header in rank 1's file
    ASSERT_TRUE(w.ok());
  }
  auto mixed = OpenTraceDir(temp.path(), 2);
  ASSERT_FALSE(mixed.ok());
  EXPECT_NE(mixed.status().message().find("header says rank 0, file name says rank 1"), std::string::npos);
}

TEST(TensorTableTest, RoundTripsEveryBitOfDigestsAndNorms) {
  std::vector<TensorRecord> in(6);
  const double norms[] = {0.0, -0.0, std::numeric_limits<double>::infinity(), std::numeric_limits<double>::denorm_min(),
                          std::numeric_limits<double>::quiet_NaN(), 1.0 / 3.0};
  for (size_t i = 0; i < in.size(); ++i) {
    in[i].digest = {0x0123456789abcdefULL * (i + 1), 0xfedcba9876543210ULL ^ (i << 60)};
    in[i].norm = norms[i];
  }
  std::string table = "prefix:";
  AppendTensorTable(in, table);
  EXPECT_EQ(table.size(), 7 + 6 * kTensorTableEntryChars);
  std::vector<TensorRecord> out(6);
  ASSERT_EQ(ReadTensorTable(std::string_view(table).substr(7), out), std::nullopt);
  for (size_t i = 0; i < in.size(); ++i) {
    EXPECT_EQ(out[i].digest, in[i].digest);
    uint64_t a, b;
    std::memcpy(&a, &in[i].norm, 8);
    std::memcpy(&b, &out[i].norm, 8);
    EXPECT_EQ(a, b) << i;
  }
}

// The table is RFC 4648 base64 of each entry's 24 bytes (digest high, digest low, norm bits, each
// big-endian), by both encoders.
TEST(TensorTableTest, TheTableIsTheBase64OfEachEntrysBigEndianBytes) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::mt19937_64 rng(3);
  // 2000 random entries: each of the 64 values at each of the 32 positions, but with a chance of
  // 64 * 32 * (63/64)^2000, about 10^-10, of missing one.
  std::vector<TensorRecord> in(2000);
  for (size_t i = 0; i < in.size(); ++i) {
    uint64_t words[3];
    for (uint64_t& w : words) w = rng();
    in[i].digest = {words[0], words[1]};
    std::memcpy(&in[i].norm, &words[2], 8);
  }
  std::string want;
  for (const TensorRecord& t : in) {
    unsigned char bytes[24];
    uint64_t words[3] = {t.digest.high, t.digest.low, 0};
    std::memcpy(&words[2], &t.norm, 8);
    for (int w = 0; w < 3; ++w) {
      for (int b = 0; b < 8; ++b) bytes[8 * w + b] = static_cast<unsigned char>(words[w] >> (56 - 8 * b));
    }
    for (int g = 0; g < 8; ++g) {
      const uint32_t v = (uint32_t{bytes[3 * g]} << 16) | (uint32_t{bytes[3 * g + 1]} << 8) | bytes[3 * g + 2];
      for (int c = 0; c < 4; ++c) want.push_back(kAlphabet[(v >> (18 - 6 * c)) & 63]);
    }
  }
  std::string fast = "x", portable = "x";
  AppendTensorTable(in, fast);
  AppendTensorTablePortable(in, portable);
  EXPECT_EQ(fast, "x" + want);
  EXPECT_EQ(portable, "x" + want);
}

TEST(TensorTableTest, ABadTableChangesNothing) {
  std::vector<TensorRecord> t(1);
  t[0].norm = 7.0;
  EXPECT_NE(ReadTensorTable("AAAAAAAAAAEAAAAAAAAAAj/wAAAAAA\n=", t), std::nullopt);
  EXPECT_NE(ReadTensorTable("AAAA", t), std::nullopt);
  EXPECT_EQ(t[0].norm, 7.0);
  EXPECT_EQ(t[0].digest, Digest128{});
}

}  // namespace
}  // namespace lockstep
