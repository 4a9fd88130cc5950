// The nccl backend, one rank per GPU, under mpirun (the unique id goes over MPI). Needs as many
// visible GPUs as ranks; skips with the reason otherwise. The collectives run on raw device
// buffers, so the test also works with a CPU-only LibTorch.
#include "harness/comm/nccl_communicator.h"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <mpi.h>
#include <torch/types.h>

#include <vector>

#include "harness/comm/mpi_communicator.h"

namespace lockstep {
namespace {

class NcclTest : public ::testing::Test {
 protected:
  void SetUp() override {
    int size = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int devices = NcclCommunicator::DeviceCount();
    if (devices == 0) GTEST_SKIP() << "no CUDA device (cudaGetDeviceCount failed or found none)";
    if (devices < size) GTEST_SKIP() << "needs one GPU per rank: " << size << " ranks, " << devices << " GPUs";
    auto mpi = MpiCommunicator::CreateWorld();
    ASSERT_TRUE(mpi.ok()) << mpi.status().ToString();
    mpi_ = std::move(mpi).value();
    auto nccl = NcclCommunicator::CreateOverMpi(*mpi_, mpi_->rank() % devices);
    ASSERT_TRUE(nccl.ok()) << nccl.status().ToString();
    nccl_ = std::move(nccl).value();
  }

  // Host vector -> device buffer -> host vector around `op`.
  template <typename T, typename Op>
  std::vector<T> OnDevice(const std::vector<T>& host, size_t out_elems, Op op) {
    void* in = nullptr;
    void* out = nullptr;
    EXPECT_EQ(cudaMalloc(&in, host.size() * sizeof(T)), cudaSuccess);
    EXPECT_EQ(cudaMalloc(&out, out_elems * sizeof(T) + 1), cudaSuccess);
    cudaMemcpy(in, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice);
    cudaMemcpy(out, host.data(), std::min(host.size(), out_elems) * sizeof(T), cudaMemcpyHostToDevice);
    Status s = op(in, out);
    EXPECT_TRUE(s.ok()) << s.ToString();
    std::vector<T> result(out_elems);
    cudaMemcpy(result.data(), out, out_elems * sizeof(T), cudaMemcpyDeviceToHost);
    cudaFree(in);
    cudaFree(out);
    return result;
  }

  std::unique_ptr<MpiCommunicator> mpi_;
  std::unique_ptr<NcclCommunicator> nccl_;
};

TEST_F(NcclTest, AllReduceSumAvgMax) {
  const int n = nccl_->size();
  const int r = nccl_->rank();
  std::vector<float> x = {float(r + 1), float(2 * (r + 1))};
  auto sum = OnDevice(x, 2, [&](void*, void* out) { return nccl_->AllReduceRaw(out, 2, c10::ScalarType::Float, ReduceOp::kSum); });
  EXPECT_EQ(sum[0], n * (n + 1) / 2.0f);
  EXPECT_EQ(sum[1], n * (n + 1.0f));
  auto avg = OnDevice(x, 2, [&](void*, void* out) { return nccl_->AllReduceRaw(out, 2, c10::ScalarType::Float, ReduceOp::kAvg); });
  EXPECT_FLOAT_EQ(avg[0], (n + 1) / 2.0f);
  auto max = OnDevice(x, 2, [&](void*, void* out) { return nccl_->AllReduceRaw(out, 2, c10::ScalarType::Float, ReduceOp::kMax); });
  EXPECT_EQ(max[0], float(n));
}

TEST_F(NcclTest, AllGatherReduceScatterBroadcastBarrier) {
  const int n = nccl_->size();
  const int r = nccl_->rank();
  auto gathered = OnDevice(std::vector<int64_t>{r, r}, 2 * n, [&](void* in, void* out) {
    return nccl_->AllGatherRaw(in, out, 2, c10::ScalarType::Long);
  });
  for (int q = 0; q < n; ++q) EXPECT_EQ(gathered[2 * q], q);

  std::vector<double> rs_in(n);
  for (int q = 0; q < n; ++q) rs_in[q] = 10.0 * r + q;
  auto rs = OnDevice(rs_in, 1, [&](void* in, void* out) {
    return nccl_->ReduceScatterRaw(in, out, 1, c10::ScalarType::Double, ReduceOp::kSum);
  });
  EXPECT_EQ(rs[0], 10.0 * n * (n - 1) / 2 + n * r);

  auto bc = OnDevice(std::vector<int32_t>{r + 5}, 1, [&](void*, void* out) {
    return nccl_->BroadcastRaw(out, 1, c10::ScalarType::Int, n - 1);
  });
  EXPECT_EQ(bc[0], n - 1 + 5);
  EXPECT_TRUE(nccl_->Barrier().ok());
}

TEST_F(NcclTest, SplitAndTensorsOnTheWrongDeviceAreRejected) {
  auto child = nccl_->Split(0, nccl_->rank(), "all");
  ASSERT_TRUE(child.ok()) << child.status().ToString();
  EXPECT_EQ((*child)->size(), nccl_->size());
  EXPECT_TRUE((*child)->Barrier().ok());
  torch::Tensor cpu = torch::zeros({2});
  Status s = nccl_->AllReduce(cpu, ReduceOp::kSum);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("the nccl backend works on tensors on cuda:"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace lockstep
