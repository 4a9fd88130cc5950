#include "harness/comm/host_staging_communicator.h"

#include <gtest/gtest.h>
#include <torch/cuda.h>
#include <torch/types.h>

#include <vector>

#include "harness/comm/thread_communicator.h"

namespace lockstep {
namespace {

// What the fake backend saw of one call: where the buffers were.
struct Seen {
  const void* data = nullptr;
  bool on_cpu = false;
};

// A one-process stand-in for a host-memory backend (mpi, gloo): it records the buffers it is
// handed and fills them with values that depend on the call, like a 2-rank group of which this
// is rank 0 would. `fail` makes every collective fail without touching the tensors.
class FakeHostBackend final : public Communicator {
 public:
  explicit FakeHostBackend(std::string name = "world") : name_(std::move(name)) {}
  int rank() const override { return 0; }
  int size() const override { return 2; }
  const std::string& group_name() const override { return name_; }
  std::string backend_name() const override { return "fake"; }

  Status AllReduce(torch::Tensor& t, ReduceOp) override {
    See(t);
    if (fail) return CommunicationError("fake all_reduce failed");
    t.add_(1);
    return Status::Ok();
  }
  Status AllGather(const torch::Tensor& in, torch::Tensor& out) override {
    See(in);
    See(out);
    if (fail) return CommunicationError("fake all_gather failed");
    out.copy_(torch::cat({in, in * 2}));
    return Status::Ok();
  }
  Status ReduceScatter(const torch::Tensor& in, torch::Tensor& out, ReduceOp) override {
    See(in);
    See(out);
    if (fail) return CommunicationError("fake reduce_scatter failed");
    out.copy_(in.view({2, -1}).sum(0));
    return Status::Ok();
  }
  Status Broadcast(torch::Tensor& t, int root) override {
    See(t);
    if (fail) return CommunicationError("fake broadcast failed");
    t.fill_(root + 7);
    return Status::Ok();
  }
  Status Barrier() override { return Status::Ok(); }
  Result<std::unique_ptr<Communicator>> Split(int, int, const std::string& name) override {
    auto child = std::make_unique<FakeHostBackend>(name);
    last_child = child.get();
    return std::unique_ptr<Communicator>(std::move(child));
  }

  std::vector<Seen> seen;
  bool fail = false;
  FakeHostBackend* last_child = nullptr;

 private:
  void See(const torch::Tensor& t) { seen.push_back({t.data_ptr(), t.device().is_cpu()}); }
  std::string name_;
};

bool Always(const torch::Tensor&) { return true; }

// Runs one of each collective and checks the values that came back to the caller's tensors.
void RunEachCollective(Communicator& comm, const torch::Device& device, std::vector<const void*>* caller_buffers) {
  auto opts = torch::TensorOptions().dtype(torch::kFloat32).device(device);
  torch::Tensor t = torch::arange(4, opts);
  ASSERT_TRUE(comm.AllReduce(t, ReduceOp::kSum).ok());
  EXPECT_TRUE(t.cpu().equal(torch::arange(4, torch::kFloat32) + 1));
  torch::Tensor in = torch::arange(3, opts);
  torch::Tensor out = torch::zeros({6}, opts);
  ASSERT_TRUE(comm.AllGather(in, out).ok());
  EXPECT_TRUE(out.cpu().equal(torch::tensor({0.f, 1.f, 2.f, 0.f, 2.f, 4.f})));
  EXPECT_TRUE(in.cpu().equal(torch::arange(3, torch::kFloat32))) << "an input is never written";
  torch::Tensor rs_in = torch::arange(4, opts);
  torch::Tensor rs_out = torch::zeros({2}, opts);
  ASSERT_TRUE(comm.ReduceScatter(rs_in, rs_out, ReduceOp::kSum).ok());
  EXPECT_TRUE(rs_out.cpu().equal(torch::tensor({2.f, 4.f})));
  torch::Tensor b = torch::zeros({5}, opts);
  ASSERT_TRUE(comm.Broadcast(b, 1).ok());
  EXPECT_TRUE(b.cpu().equal(torch::full({5}, 8.f)));
  if (caller_buffers != nullptr) {
    *caller_buffers = {t.data_ptr(), in.data_ptr(), out.data_ptr(), rs_in.data_ptr(), rs_out.data_ptr(), b.data_ptr()};
  }
}

TEST(HostStagingCommunicatorTest, HostTensorsPassThroughUncopied) {
  auto fake = std::make_unique<FakeHostBackend>();
  FakeHostBackend* inner = fake.get();
  HostStagingCommunicator comm(std::move(fake));
  std::vector<const void*> caller;
  RunEachCollective(comm, torch::kCPU, &caller);
  ASSERT_EQ(inner->seen.size(), caller.size());
  for (size_t i = 0; i < caller.size(); ++i) {
    EXPECT_EQ(inner->seen[i].data, caller[i]) << "call buffer " << i << " was copied";
  }
  EXPECT_EQ(comm.backend_name(), "fake");
  EXPECT_EQ(comm.group_name(), "world");
  EXPECT_EQ(comm.size(), 2);
}

// With a predicate that stages everything, the copy path runs on the CPU: the backend sees only
// fresh host buffers, and the results land in the caller's tensors.
TEST(HostStagingCommunicatorTest, StagedTensorsReachTheBackendAsHostCopies) {
  auto fake = std::make_unique<FakeHostBackend>();
  FakeHostBackend* inner = fake.get();
  HostStagingCommunicator comm(std::move(fake), Always);
  std::vector<const void*> caller;
  RunEachCollective(comm, torch::kCPU, &caller);
  ASSERT_EQ(inner->seen.size(), caller.size());
  for (size_t i = 0; i < caller.size(); ++i) {
    EXPECT_TRUE(inner->seen[i].on_cpu);
    EXPECT_NE(inner->seen[i].data, caller[i]) << "call buffer " << i << " was not staged";
  }
}

TEST(HostStagingCommunicatorTest, AFailedCallLeavesTheCallersTensorsAlone) {
  auto fake = std::make_unique<FakeHostBackend>();
  fake->fail = true;
  HostStagingCommunicator comm(std::move(fake), Always);
  torch::Tensor t = torch::ones({3});
  Status s = comm.AllReduce(t, ReduceOp::kSum);
  EXPECT_EQ(s.code(), StatusCode::kCommunication);
  EXPECT_EQ(s.message(), "fake all_reduce failed") << "the backend's error passes through as it is";
  EXPECT_TRUE(t.equal(torch::ones({3})));
  torch::Tensor out = torch::full({6}, 5.f);
  EXPECT_FALSE(comm.AllGather(torch::ones({3}), out).ok());
  EXPECT_TRUE(out.equal(torch::full({6}, 5.f)));
}

// A malformed call is refused before any copy, in the words every backend uses.
TEST(HostStagingCommunicatorTest, BadArgumentsAreRefusedBeforeStaging) {
  auto fake = std::make_unique<FakeHostBackend>();
  FakeHostBackend* inner = fake.get();
  HostStagingCommunicator comm(std::move(fake), Always);
  torch::Tensor out = torch::zeros({5});
  Status s = comm.AllGather(torch::ones({3}), out);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "rank 0 group world: all_gather: output has 5 elements, expected 2 x 3");
  torch::Tensor b = torch::zeros({2});
  EXPECT_EQ(comm.Broadcast(b, 2).code(), StatusCode::kInvalidArgument);
  torch::Tensor strided = torch::zeros({4, 4}).t();
  EXPECT_EQ(comm.AllReduce(strided, ReduceOp::kSum).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(inner->seen.empty());
}

TEST(HostStagingCommunicatorTest, SubGroupsAreStagedToo) {
  auto fake = std::make_unique<FakeHostBackend>();
  FakeHostBackend* inner = fake.get();
  HostStagingCommunicator comm(std::move(fake), Always);
  Result<std::unique_ptr<Communicator>> slice = comm.Split(0, 0, "slice0");
  ASSERT_TRUE(slice.ok()) << slice.status().ToString();
  EXPECT_EQ((*slice)->group_name(), "slice0");
  torch::Tensor t = torch::zeros({2});
  ASSERT_TRUE((*slice)->AllReduce(t, ReduceOp::kSum).ok());
  ASSERT_EQ(inner->last_child->seen.size(), 1u);
  EXPECT_NE(inner->last_child->seen[0].data, t.data_ptr());
  EXPECT_TRUE(t.equal(torch::ones({2})));
}

// Two real (thread) ranks over the copy path: the same values as without staging.
TEST(HostStagingCommunicatorTest, ThreadRanksAgreeThroughTheCopies) {
  ThreadWorld world(2);
  world.RunOwned([](std::unique_ptr<Communicator> inner) {
    HostStagingCommunicator comm(std::move(inner), Always);
    const float r = static_cast<float>(comm.rank());
    torch::Tensor t = torch::full({4}, r + 1);
    ASSERT_TRUE(comm.AllReduce(t, ReduceOp::kSum).ok());
    EXPECT_TRUE(t.equal(torch::full({4}, 3.f)));
    torch::Tensor out = torch::zeros({4});
    ASSERT_TRUE(comm.AllGather(torch::full({2}, r), out).ok());
    EXPECT_TRUE(out.equal(torch::tensor({0.f, 0.f, 1.f, 1.f})));
  });
}

// On a GPU machine: CUDA tensors never reach the host backend, and the results come back to them.
TEST(HostStagingCommunicatorCudaTest, CudaTensorsReachTheBackendOnlyInHostMemory) {
  if (!torch::cuda::is_available()) {
    GTEST_SKIP() << "no CUDA device visible to LibTorch (or a CPU-only LibTorch): the copy path is covered above "
                    "with an injected predicate";
  }
  auto fake = std::make_unique<FakeHostBackend>();
  FakeHostBackend* inner = fake.get();
  HostStagingCommunicator comm(std::move(fake));
  RunEachCollective(comm, torch::Device(torch::kCUDA, 0), nullptr);
  ASSERT_EQ(inner->seen.size(), 6u);
  for (const Seen& s : inner->seen) EXPECT_TRUE(s.on_cpu);
}

}  // namespace
}  // namespace lockstep
