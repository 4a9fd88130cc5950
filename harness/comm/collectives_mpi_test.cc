// Every collective and split on the mpi and gloo backends, run under mpirun -np 2 and 4; results
// checked against closed forms, bitwise across ranks, and bitwise between the two backends.
#include <gtest/gtest.h>
#include <mpi.h>
#include <torch/types.h>

#include <ATen/CPUGeneratorImpl.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "harness/comm/mpi_communicator.h"
#if LOCKSTEP_HAVE_GLOO
#include "harness/comm/gloo_communicator.h"
#endif

namespace lockstep {
namespace {

int WorldRank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
int WorldSize() {
  int n = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

// A fresh directory made by rank 0, its path broadcast to every rank.
std::string SharedTempDir() {
  char path[4096] = {};
  if (WorldRank() == 0) {
    std::string tmpl = (std::filesystem::temp_directory_path() / "lockstep-comm-XXXXXX").string();
    if (mkdtemp(tmpl.data()) != nullptr) std::strncpy(path, tmpl.c_str(), sizeof(path) - 1);
  }
  MPI_Bcast(path, sizeof(path), MPI_CHAR, 0, MPI_COMM_WORLD);
  return path;
}

// One world communicator per backend, made on first use. Every rank runs the same tests in the
// same order, so this lazy creation is itself collective. Torn down before MPI_Finalize.
class Worlds : public ::testing::Environment {
 public:
  static Communicator* Get(const std::string& backend) {
    auto& worlds = Map();
    auto it = worlds.find(backend);
    if (it != worlds.end()) return it->second.get();
    std::unique_ptr<Communicator> comm;
    if (backend == "mpi") {
      auto made = MpiCommunicator::CreateWorld();
      if (made.ok()) comm = std::move(made).value();
    }
#if LOCKSTEP_HAVE_GLOO
    if (backend == "gloo") {
      if (StoreDir().empty()) StoreDir() = SharedTempDir();
      RendezvousOptions o;
      o.rank = WorldRank();
      o.world_size = WorldSize();
      o.store_file = StoreDir() + "/store";
      o.timeout = std::chrono::seconds(60);
      auto made = GlooCommunicator::Create(o, "127.0.0.1");
      if (made.ok()) comm = std::move(made).value();
      else ADD_FAILURE() << made.status().ToString();
    }
#endif
    Communicator* raw = comm.get();
    worlds[backend] = std::move(comm);
    return raw;
  }
  void TearDown() override {
    Map().clear();
    if (StoreDir().empty()) return;
    MPI_Barrier(MPI_COMM_WORLD);  // every rank is done with the store file
    std::error_code ec;
    if (WorldRank() == 0) std::filesystem::remove_all(StoreDir(), ec);
  }

 private:
  static std::string& StoreDir() {
    static std::string dir;
    return dir;
  }
  static std::map<std::string, std::unique_ptr<Communicator>>& Map() {
    static std::map<std::string, std::unique_ptr<Communicator>> worlds;
    return worlds;
  }
};
::testing::Environment* const kWorlds = ::testing::AddGlobalTestEnvironment(new Worlds);

// Rank r's contribution: (r + 1) * (i + 1).
torch::Tensor Ramp(int rank, int64_t n, torch::Dtype dtype) {
  return (torch::arange(1, n + 1, torch::kInt64) * (rank + 1)).to(dtype);
}

// Every rank's copy of `t`, via raw MPI (independent of the backend under test).
std::vector<torch::Tensor> GatherToAll(const torch::Tensor& t) {
  const int n = WorldSize();
  torch::Tensor all = torch::empty({n * t.numel()}, t.options());
  MPI_Allgather(t.data_ptr(), static_cast<int>(t.nbytes()), MPI_BYTE, all.data_ptr(), static_cast<int>(t.nbytes()),
                MPI_BYTE, MPI_COMM_WORLD);
  return all.chunk(n);
}

void ExpectSameBitsOnAllRanks(const torch::Tensor& t) {
  torch::Tensor c = t.contiguous();
  std::vector<torch::Tensor> all = GatherToAll(c);
  for (size_t r = 0; r < all.size(); ++r) {
    EXPECT_EQ(std::memcmp(all[r].data_ptr(), c.data_ptr(), c.nbytes()), 0) << "rank " << r << " holds other bits";
  }
}

class CollectivesTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
#if !LOCKSTEP_HAVE_GLOO
    if (GetParam() == "gloo") GTEST_SKIP() << "gloo is not built (libgloo-dev headers missing)";
#endif
    comm_ = Worlds::Get(GetParam());
    ASSERT_NE(comm_, nullptr) << "could not create the " << GetParam() << " world";
  }
  Communicator* comm_ = nullptr;
};

TEST_P(CollectivesTest, WorldMatchesMpi) {
  EXPECT_EQ(comm_->rank(), WorldRank());
  EXPECT_EQ(comm_->size(), WorldSize());
  EXPECT_EQ(comm_->group_name(), "world");
  EXPECT_EQ(comm_->backend_name(), GetParam());
}

TEST_P(CollectivesTest, AllReduceSumAvgMaxOnEveryDtype) {
  const int n = comm_->size();
  const int64_t len = 6;
  for (torch::Dtype dtype : {torch::kFloat32, torch::kFloat64, torch::kFloat16, torch::kInt64, torch::kInt32,
                             torch::kUInt8}) {
    SCOPED_TRACE(c10::toString(dtype));
    torch::Tensor sum = Ramp(comm_->rank(), len, dtype);
    ASSERT_TRUE(comm_->AllReduce(sum, ReduceOp::kSum).ok());
    EXPECT_TRUE(torch::equal(sum, Ramp(n * (n + 1) / 2 - 1, len, dtype))) << sum;

    torch::Tensor avg = Ramp(comm_->rank(), len, dtype);
    ASSERT_TRUE(comm_->AllReduce(avg, ReduceOp::kAvg).ok());
    torch::Tensor base = torch::arange(1, len + 1, torch::kInt64) * (n * (n + 1) / 2);
    torch::Tensor expected = torch::is_floating_point(avg) ? (base.to(torch::kFloat64) / n).to(dtype)
                                                           : torch::div(base, n, "trunc").to(dtype);
    EXPECT_TRUE(torch::equal(avg, expected)) << avg;
    ExpectSameBitsOnAllRanks(avg);

    torch::Tensor max = Ramp(comm_->rank(), len, dtype);
    ASSERT_TRUE(comm_->AllReduce(max, ReduceOp::kMax).ok());
    EXPECT_TRUE(torch::equal(max, Ramp(n - 1, len, dtype))) << max;
  }
}

TEST_P(CollectivesTest, RandomFloatReductionsAreBitwiseEqualOnAllRanks) {
  torch::Tensor t = torch::randn({4099}, at::detail::createCPUGenerator(7 + comm_->rank()), torch::kFloat32);
  ASSERT_TRUE(comm_->AllReduce(t, ReduceOp::kAvg).ok());
  ExpectSameBitsOnAllRanks(t);
  torch::Tensor big = torch::randn({1 << 18}, at::detail::createCPUGenerator(11 + comm_->rank()), torch::kFloat32);
  ASSERT_TRUE(comm_->AllReduce(big, ReduceOp::kSum).ok());
  ExpectSameBitsOnAllRanks(big);
}

TEST_P(CollectivesTest, AllGatherOnEveryDtype) {
  const int n = comm_->size();
  for (torch::Dtype dtype : {torch::kFloat32, torch::kFloat64, torch::kInt64, torch::kUInt8}) {
    SCOPED_TRACE(c10::toString(dtype));
    torch::Tensor in = torch::full({2, 3}, comm_->rank() + 1, torch::kInt64).to(dtype);
    torch::Tensor out = torch::empty({n, 6}, in.options());
    ASSERT_TRUE(comm_->AllGather(in, out).ok());
    for (int r = 0; r < n; ++r) EXPECT_TRUE(torch::equal(out[r], torch::full({6}, r + 1, torch::kInt64).to(dtype)));
  }
}

TEST_P(CollectivesTest, ReduceScatterSumAvgMax) {
  const int n = comm_->size();
  const int r = comm_->rank();
  // Element j of rank q's input: q * 100 + j; this rank keeps elements [2r, 2r + 2).
  torch::Tensor in = torch::arange(2 * n, torch::kFloat32) + 100 * r;
  const float ranks_sum = 100.0f * n * (n - 1) / 2;
  torch::Tensor out = torch::empty({2}, torch::kFloat32);
  ASSERT_TRUE(comm_->ReduceScatter(in, out, ReduceOp::kSum).ok());
  EXPECT_EQ(out[0].item<float>(), ranks_sum + n * (2 * r));
  EXPECT_EQ(out[1].item<float>(), ranks_sum + n * (2 * r + 1));
  ASSERT_TRUE(comm_->ReduceScatter(in, out, ReduceOp::kAvg).ok());
  EXPECT_EQ(out[0].item<float>(), (ranks_sum + n * (2 * r)) / n);
  ASSERT_TRUE(comm_->ReduceScatter(in, out, ReduceOp::kMax).ok());
  EXPECT_EQ(out[1].item<float>(), 100.0f * (n - 1) + 2 * r + 1);

  torch::Tensor ints = torch::arange(2 * n, torch::kInt64) + r;
  torch::Tensor int_out = torch::empty({2}, torch::kInt64);
  ASSERT_TRUE(comm_->ReduceScatter(ints, int_out, ReduceOp::kSum).ok());
  EXPECT_EQ(int_out[0].item<int64_t>(), n * (2 * r) + n * (n - 1) / 2);
}

TEST_P(CollectivesTest, BroadcastFromTheLastRank) {
  const int root = comm_->size() - 1;
  for (torch::Dtype dtype : {torch::kFloat32, torch::kInt64, torch::kFloat16}) {
    torch::Tensor t = torch::full({7}, comm_->rank() * 3 + 1, torch::kInt64).to(dtype);
    ASSERT_TRUE(comm_->Broadcast(t, root).ok());
    EXPECT_TRUE(torch::equal(t, torch::full({7}, root * 3 + 1, torch::kInt64).to(dtype)));
  }
}

TEST_P(CollectivesTest, Barrier) { ASSERT_TRUE(comm_->Barrier().ok()); }

TEST_P(CollectivesTest, SplitIntoTwoSlicesAndCrossGroups) {
  const int n = comm_->size();
  const int r = comm_->rank();
  if (n % 2 != 0) GTEST_SKIP() << "two equal slices need an even number of ranks, not " << n;
  const int slice_size = n / 2;
  auto slice = comm_->Split(r / slice_size, r, "slice" + std::to_string(r / slice_size));
  ASSERT_TRUE(slice.ok()) << slice.status().ToString();
  auto cross = comm_->Split(r % slice_size, r, "cross" + std::to_string(r % slice_size));
  ASSERT_TRUE(cross.ok()) << cross.status().ToString();
  EXPECT_EQ((*slice)->size(), slice_size);
  EXPECT_EQ((*slice)->rank(), r % slice_size);
  EXPECT_EQ((*cross)->size(), 2);
  EXPECT_EQ((*cross)->rank(), r / slice_size);
  EXPECT_EQ((*cross)->group_name(), "cross" + std::to_string(r % slice_size));
  EXPECT_EQ((*slice)->backend_name(), GetParam());

  torch::Tensor bits = torch::full({1}, int64_t{1} << r, torch::kInt64);
  ASSERT_TRUE((*slice)->AllReduce(bits, ReduceOp::kSum).ok());
  int64_t expected = 0;
  for (int q = 0; q < n; ++q) expected += q / slice_size == r / slice_size ? int64_t{1} << q : 0;
  EXPECT_EQ(bits.item<int64_t>(), expected);

  torch::Tensor gathered = torch::empty({2}, torch::kInt64);
  ASSERT_TRUE((*cross)->AllGather(torch::full({1}, int64_t{r}, torch::kInt64), gathered).ok());
  EXPECT_EQ(gathered[0].item<int64_t>(), r % slice_size);
  EXPECT_EQ(gathered[1].item<int64_t>(), r % slice_size + slice_size);

  // Splitting twice with the same names makes independent groups.
  auto again = comm_->Split(r / slice_size, r, "slice" + std::to_string(r / slice_size));
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  ASSERT_TRUE((*again)->Barrier().ok());
  ASSERT_TRUE(comm_->Barrier().ok());
}

TEST_P(CollectivesTest, BadArgumentsNameRankGroupAndCall) {
  torch::Tensor in = torch::zeros({3});
  torch::Tensor out = torch::zeros({3 * comm_->size() + 1});
  Status s = comm_->AllGather(in, out);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message().rfind("rank " + std::to_string(WorldRank()) + " group world: all_gather: output has", 0), 0u)
      << s.message();
}

INSTANTIATE_TEST_SUITE_P(Backends, CollectivesTest, ::testing::Values("mpi", "gloo"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

#if LOCKSTEP_HAVE_GLOO
// The same inputs through both backends. Inputs are dyadic (k / 64 with small k), so every sum
// is exact whatever order a backend adds in: any difference is a real bug, not rounding.
TEST(BackendAgreementTest, MpiAndGlooGiveTheSameBits) {
  Communicator* mpi = Worlds::Get("mpi");
  Communicator* gloo = Worlds::Get("gloo");
  ASSERT_NE(mpi, nullptr);
  ASSERT_NE(gloo, nullptr);
  const int n = mpi->size();
  auto gen = at::detail::createCPUGenerator(1000 + mpi->rank());
  torch::Tensor input = torch::randint(-4096, 4096, {1024 * n}, gen, torch::kFloat32) / 64;

  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMax}) {
    torch::Tensor a = input.clone();
    torch::Tensor b = input.clone();
    ASSERT_TRUE(mpi->AllReduce(a, op).ok());
    ASSERT_TRUE(gloo->AllReduce(b, op).ok());
    EXPECT_EQ(std::memcmp(a.data_ptr(), b.data_ptr(), a.nbytes()), 0) << "all_reduce " << ToString(op);

    torch::Tensor ra = torch::empty({1024}, torch::kFloat32);
    torch::Tensor rb = torch::empty({1024}, torch::kFloat32);
    ASSERT_TRUE(mpi->ReduceScatter(input, ra, op).ok());
    ASSERT_TRUE(gloo->ReduceScatter(input, rb, op).ok());
    EXPECT_EQ(std::memcmp(ra.data_ptr(), rb.data_ptr(), ra.nbytes()), 0) << "reduce_scatter " << ToString(op);
  }
  torch::Tensor ga = torch::empty({n * input.numel()}, torch::kFloat32);
  torch::Tensor gb = torch::empty({n * input.numel()}, torch::kFloat32);
  ASSERT_TRUE(mpi->AllGather(input, ga).ok());
  ASSERT_TRUE(gloo->AllGather(input, gb).ok());
  EXPECT_TRUE(torch::equal(ga, gb));
  torch::Tensor ba = input.clone();
  torch::Tensor bb = input.clone();
  ASSERT_TRUE(mpi->Broadcast(ba, 1).ok());
  ASSERT_TRUE(gloo->Broadcast(bb, 1).ok());
  EXPECT_TRUE(torch::equal(ba, bb));
}

// Full-precision random floats: bitwise equal where the order of a sum cannot matter (two
// ranks: a + b == b + a), within rounding otherwise (each backend picks its own order).
TEST(BackendAgreementTest, RandomFloatsAgreeToRounding) {
  Communicator* mpi = Worlds::Get("mpi");
  Communicator* gloo = Worlds::Get("gloo");
  ASSERT_NE(mpi, nullptr);
  ASSERT_NE(gloo, nullptr);
  torch::Tensor input = torch::randn({10000}, at::detail::createCPUGenerator(77 + mpi->rank()), torch::kFloat32);
  torch::Tensor a = input.clone();
  torch::Tensor b = input.clone();
  ASSERT_TRUE(mpi->AllReduce(a, ReduceOp::kAvg).ok());
  ASSERT_TRUE(gloo->AllReduce(b, ReduceOp::kAvg).ok());
  if (mpi->size() == 2) {
    EXPECT_TRUE(torch::equal(a, b));
  } else {
    EXPECT_TRUE(torch::allclose(a, b, 1e-5, 1e-6));
  }
}
#endif

TEST(MpiErrorsTest, AnMpiFailureBecomesAStatusNamingRankGroupAndCall) {
  auto world = MpiCommunicator::CreateWorld();
  ASSERT_TRUE(world.ok()) << world.status().ToString();
  const int r = WorldRank();
  // Pairs {0,1}, {2,3}: the member that is not the root expects fewer elements than are sent,
  // which MPI reports as a truncation on that rank (and only there, so nobody hangs).
  auto pair = (*world)->Split(r / 2, r, "pair" + std::to_string(r / 2));
  ASSERT_TRUE(pair.ok()) << pair.status().ToString();
  torch::Tensor t = torch::zeros({(*pair)->rank() == 0 ? 64 : 8}, torch::kFloat32);
  Status s = (*pair)->Broadcast(t, 0);
  if ((*pair)->rank() == 0) {
    EXPECT_TRUE(s.ok()) << s.ToString();
  } else {
    EXPECT_EQ(s.code(), StatusCode::kCommunication);
    const std::string prefix = "rank " + std::to_string(r) + " group pair" + std::to_string(r / 2) + ": MPI_Bcast: ";
    EXPECT_EQ(s.message().rfind(prefix, 0), 0u) << s.message();
    EXPECT_NE(s.message().find("truncated"), std::string::npos) << s.message();
  }
}

}  // namespace
}  // namespace lockstep
