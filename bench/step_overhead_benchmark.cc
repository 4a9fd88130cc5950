// Per-step cost of lockstep's default checks on the reference trainer: the same scenario trained
// by two (or three) trainers in one process, stepped alternately so that machine noise hits all
// of them alike:
//   plain      the trainer over a bare communicator, nothing recorded;
//   checks     wired as lockstep-rank wires it: RecordingCommunicator (fingerprints, collective
//              records in the trace), heartbeat, every parameter, gradient, buffer and optimizer
//              state digested with its norm (StepRecorder::Capture), the step record written;
//   fail-fast  checks plus the per-step digest all-gather of `lockstep run --fail-fast`.
// Counters: step_ms / checks_ms / failfast_ms (medians), overhead_pct (median of the paired
// differences checked - plain, over the plain median), direct_pct (the check-only sections,
// timed directly, over plain: less noisy, misses only the RecordingCommunicator's share inside
// the step), capture_us / write_us (digests and norms / the step record's write).
// The yardstick (CPU only): read_us, one read of exactly the bytes the capture digests (the same
// tensors of the same scenario: the plain trainer's, right after its step, so their cache state
// is the checked capture's), each tensor's bytes summed as 64-bit words: every byte loaded once,
// one add each, nothing written, so no pass over the state can be cheaper; a memcpy would also
// write a second copy, doubling the traffic. capture_over_read: the median over the steps of
// (capture + record write) / that read, paired per step, so load hits both alike.
// bytes_over_read: bytes_us / read_us, paired the same way: the capture's hashing and summing of
// the same bytes alone (SteppedRank::TimeYardsticks), the floor under capture_over_read for
// today's digest and norm definitions, before bookkeeping and the record's write. It is measured
// right after the read, so warmer than the capture finds the bytes: cold_bytes_us is the same pass
// measured first after the step instead (every other iteration, which then measures nothing else),
// at the capture's temperature, and cold_bytes_over_read its median over the read's.
// visit_us (1 rank, CPU): the checked trainer's VisitState alone, right after its capture (so
// warmer than inside it): the trainer's share of capture_us, which no capture can avoid.
// repeats (1 rank, CPU): how many captures in a row, up to the last timed one, digested the last
// list of the state again instead of listing it (StepRecorder::Capture): 300 steps, all but the
// first ones that make or replace state tensors.
//   lockstep-bench --benchmark_filter=StepOverhead                  (1 rank, thread communicator)
//   lockstep-bench --benchmark_filter=CudaStepOverhead              (1 rank on the GPU: the trainer
//                  on CUDA, the communicator staged through host memory as gloo's is; each step
//                  ends with a device synchronization so that its kernels are inside its time;
//                  a third trainer with the asynchronous capture where the build has it:
//                  async_ms, async_overhead_pct)
//   mpirun -np 2 lockstep-bench --benchmark_filter=MpiStepOverhead  (2 ranks, mpi communicator)
//   mpirun -np 4 --oversubscribe lockstep-bench --benchmark_filter=MpiStepOverhead  (4 ranks; on
//   fewer cores than ranks they share them)
// compare_us: the in-band call inside the fail-fast step (CompareStepInBand, slowest rank): it
// includes waiting at the gather for the slowest rank's capture and write, so it follows the
// ranks' skew; bench/in_band_compare_benchmark.cc times the comparison alone.
#include <ATen/record_function.h>
#include <benchmark/benchmark.h>
#include <torch/cuda.h>
#include <torch/torch.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "bench/median.h"
#include "bench/mpi_bench.h"
#include "bench/torch_profile.h"
#include "harness/capture/capture_device.h"
#include "harness/comm/host_staging_communicator.h"
#include "harness/comm/recording_communicator.h"
#include "harness/comm/thread_communicator.h"
#include "harness/core/testing/build_paths.h"
#include "harness/rank/replica_exchange.h"
#include "harness/rank/step_recorder.h"
#include "harness/scenario/scenario_loader.h"
#include "harness/trace/digest.h"
#include "harness/trace/digest_chunks.h"
#include "harness/trace/read_yardstick.h"
#include "harness/trace/sum_of_squares.h"
#include "harness/trace/trace_writer.h"
#include "harness/trainer/trainer.h"

namespace lockstep {
namespace {

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// kAsyncChecks: kChecks with the CUDA capture off the host's path (StepRecorder::CaptureAsync, as
// lockstep-rank with LOCKSTEP_ASYNC_CAPTURE=1): the training stream waits for the last captures'
// reads before each step, and a step's record is written when its digests land.
enum class Mode { kPlain, kChecks, kFailFast, kAsyncChecks };

// The bytes yardstick's piece callbacks (DigestChunkInPieces): a piece's squares into the lanes,
// or nothing for a dtype the capture does not sum.
template <typename T>
void AddSquaresOfPiece(const unsigned char* piece, size_t nbytes, void* lanes) {
  AddSquares(reinterpret_cast<const T*>(piece), nbytes / sizeof(T), *static_cast<SquareLanes*>(lanes));
}
void IgnorePiece(const unsigned char*, size_t, void*) {}

// The configurations measured: the default transformer scenario as it is, the same data with a
// ~100x larger model, and the default model on 8x the tokens per step. The checks cost about the
// same per parameter whatever the data; the step costs per parameter and per token, so the two
// variants show which way the overhead moves. many_tensors (4x the layers: 4x the tensors of the
// same shapes, under mpirun only) shows what grows with the tensor count.
// tokens_x64 (64x the tokens: 2048 per rank, still far fewer than a real job's sequence length
// times micro-batch) shows where the per-token step leaves the per-tensor checks.
// zero1_transformer: the default scenario under ZeRO-1 (its optimizer state sharded, its
// parameters all-gathered after each step: on 1 rank the shard is the whole), whose capture repeats
// its list as DDP's does (its gradient shard is one tensor for the run).
enum class Config { kDefault, kLargeModel, kLargeBatch, kManyTensors, kTokensX64, kZero1 };

// The configuration's name as its benchmarks are registered (BENCHMARK_CAPTURE below).
const char* ConfigName(Config config) {
  switch (config) {
    case Config::kDefault: return "default_transformer";
    case Config::kLargeModel: return "large_model";
    case Config::kLargeBatch: return "large_batch";
    case Config::kManyTensors: return "many_tensors";
    case Config::kTokensX64: return "tokens_x64";
    case Config::kZero1: return "zero1_transformer";
  }
  return "unknown";
}

// scenarios/clean/ddp_transformer.yaml (LOCKSTEP_BENCH_SCENARIO overrides the file), adjusted.
Result<Scenario> LoadScenario(Config config) {
  const char* env = std::getenv("LOCKSTEP_BENCH_SCENARIO");
  const std::filesystem::path file =
      env ? std::filesystem::path(env)
          : std::filesystem::path(LOCKSTEP_SOURCE_DIR) / "scenarios" / "clean" / "ddp_transformer.yaml";
  LoadOptions options;
  std::vector<Diagnostic> diagnostics;
  Result<Scenario> s = LoadScenarioFile(file, options, &diagnostics);
  if (!s.ok()) {
    std::string text = s.status().ToString();
    for (const auto& d : diagnostics) text += "\n  " + d.ToString();
    return InvalidArgumentError(text);
  }
  if (config == Config::kLargeModel) {
    // ~100x the parameters on the same data: per-tensor fixed costs stop dominating and the
    // checks' bandwidth-bound part shows.
    s->model.hidden = 256;
    s->model.layers = 4;
  }
  if (config == Config::kLargeBatch) s->data.batch_per_rank *= 8;
  if (config == Config::kTokensX64) s->data.batch_per_rank *= 64;
  // 4x the layers, so 4x the tensors of the same shapes: what grows with the tensor count.
  if (config == Config::kManyTensors) s->model.layers *= 4;
  if (config == Config::kZero1) s->parallel.mode = ParallelMode::kZero1;
  return s;
}

// The asynchronous capture's device on the CPU (kAsyncChecks there): one that does no work, so
// that what is timed is the host's own part of StepRecorder::CaptureAsync and of writing a landed
// record. A capture lands when LandAll() says so, with zero digests and sums (the records are not
// checked here; StepRecorderTest holds the asynchronous records to the synchronous ones).
class NoWorkDevice : public CaptureDevice {
 public:
  Status Queue(int slot, const std::vector<CaptureBuffer>& buffers) override {
    size_t chunks = 0;
    for (const CaptureBuffer& b : buffers) chunks += DigestChunkCount(b.nbytes);
    slots_[slot] = Slot{chunks, false};
    return Status::Ok();
  }
  Result<bool> Landed(int slot) override { return slots_[slot].landed; }
  Status WaitLanded(int slot) override {
    slots_[slot].landed = true;
    return Status::Ok();
  }
  Status TrainingWaitsForReads(int) override { return Status::Ok(); }
  Status ReadResults(int slot, std::vector<Digest128>& chunk_digests, std::vector<double>& chunk_square_sums) override {
    chunk_digests.assign(slots_[slot].chunks, Digest128{});
    chunk_square_sums.assign(slots_[slot].chunks, 0.0);
    return Status::Ok();
  }
  void LandAll() {
    for (auto& [slot, s] : slots_) s.landed = true;
  }

 private:
  struct Slot {
    size_t chunks = 0;
    bool landed = false;
  };
  std::map<int, Slot> slots_;
};

// One rank's training loop, wired for `mode` the way harness/rank/run_rank.cc wires it.
class SteppedRank {
 public:
  static Result<std::unique_ptr<SteppedRank>> Create(const Scenario& scenario, std::unique_ptr<Communicator> comm,
                                                     Mode mode, const std::filesystem::path& trace,
                                                     torch::Device device = torch::Device(torch::kCPU)) {
    std::unique_ptr<SteppedRank> r(new SteppedRank(scenario, mode, device));
    // On CUDA the collectives take host copies, as lockstep-rank wires gloo and mpi on --device cuda.
    if (device.is_cuda()) comm = std::make_unique<HostStagingCommunicator>(std::move(comm));
    if (mode == Mode::kPlain) {
      r->plain_ = std::move(comm);
    } else {
      TraceHeader header;
      header.rank = comm->rank();
      header.world_size = comm->size();
      LOCKSTEP_ASSIGN_OR_RETURN(r->writer_, TraceWriter::Open(trace, header));
      r->recorder_ = std::make_unique<StepRecorder>(r->writer_.get());
      if (mode == Mode::kAsyncChecks && !device.is_cuda()) {
        auto no_work = std::make_unique<NoWorkDevice>();
        r->no_work_ = no_work.get();
        r->recorder_->UseCaptureDeviceForTesting(std::move(no_work));
      }
      r->recording_ = std::make_unique<RecordingCommunicator>(std::move(comm), r->recorder_.get(), nullptr);
    }
    Communicator* world = r->world();
    ProcessGroups groups;
    groups.world = world;
    groups.slice = world;
    groups.slices = 1;
    LOCKSTEP_ASSIGN_OR_RETURN(r->trainer_, Trainer::Create(r->scenario_, groups, device, nullptr));
    LOCKSTEP_RETURN_IF_ERROR(r->trainer_->Initialize());
    if (mode != Mode::kPlain) LOCKSTEP_RETURN_IF_ERROR(r->Record(0, nullptr));
    return r;
  }

  // One optimizer step with everything `mode` adds around it.
  Status Step() {
    ++step_;
    check_seconds_ = 0.0;
    if (mode_ == Mode::kPlain) {
      Status st = trainer_->Step(step_).status();
      Synchronize();
      return st;
    }
    auto t0 = Clock::now();
    recording_->set_step(step_);
    recorder_->set_step(step_);
    {
      RECORD_USER_SCOPE("lockstep.heartbeat");  // as run_rank.cc names it
      LOCKSTEP_RETURN_IF_ERROR(writer_->WriteHeartbeat(step_, WallSeconds()));
    }
    if (mode_ == Mode::kAsyncChecks) LOCKSTEP_RETURN_IF_ERROR(recorder_->GuardOverwrite());
    check_seconds_ += Since(t0);
    LOCKSTEP_ASSIGN_OR_RETURN(StepStats stats, trainer_->Step(step_));
    LOCKSTEP_RETURN_IF_ERROR(Record(step_, &stats));
    Synchronize();
    return recorder_->status();
  }

  // The asynchronous capture's records still in flight, written (the run's end; nothing otherwise).
  Status Drain() { return recorder_ ? recorder_->FinishAsync(/*wait=*/true) : Status::Ok(); }

  double check_seconds() const { return check_seconds_; }
  // The parts of the last step's check time: digests and norms, and the step record's write.
  double capture_seconds() const { return capture_seconds_; }
  double write_seconds() const { return write_seconds_; }
  double compare_seconds() const { return compare_seconds_; }
  size_t tensors() const { return tensors_; }
  // The captures in a row, up to the last, that repeated the state's last list (StepRecorder).
  int64_t repeats() const { return recorder_ ? recorder_->repeats() : 0; }

  // The yardsticks, timed alone over every byte the capture digests (the tensors VisitState
  // yields, as the trainer holds them now; the list of regions is made before the timers start).
  // CPU tensors only (both -1 on another device: a GPU read is a different yardstick).
  //   read   one read of the bytes (SumBytesAsWords);
  //   bytes  the capture's work on the bytes and nothing else: level 1 of the digest (XXH3-128 of
  //          each 1 MiB chunk, in 8 KiB pieces) with each piece's squares summed right after it
  //          is hashed (float32/float64 tensors), as MultiTensorDigest::Run does, without its
  //          per-tensor bookkeeping (seeds, level 2, the record). What any capture with today's
  //          digest and norm spends before bookkeeping and the record's write: the floor under
  //          capture_over_read. It runs right after the read, so it finds the bytes at least as
  //          warm as the capture does: if anything the floor is low.
  //   cold_bytes  every other call, instead of both: the same pass first after the step, so at
  //          the temperature the capture finds the bytes (measured on the CPU: 2-7 us slower than
  //          after the read, 2026-11-30). How much of the capture's distance to the floor is the
  //          floor's warmth.
  // A figure not measured in a call is -1.
  struct Yardsticks {
    double read = -1.0, bytes = -1.0, cold_bytes = -1.0;
  };
  Yardsticks TimeYardsticks() {
    Yardsticks y;
    if (device_.is_cuda()) return y;
    regions_.clear();
    trainer_->VisitState([&](const std::string&, TensorKind, const torch::Tensor& t, bool) {
      if (t.defined() && t.numel() > 0) {
        regions_.push_back(Region{static_cast<const unsigned char*>(t.data_ptr()),
                                  static_cast<size_t>(t.numel()) * t.element_size(), t.scalar_type()});
      }
    });
    cold_turn_ = !cold_turn_;
    if (cold_turn_) {
      y.cold_bytes = TimeBytesPass();
      return y;
    }
    auto t0 = Clock::now();
    uint64_t sum = 0;
    for (const Region& r : regions_) sum += SumBytesAsWords(r.data, r.nbytes);
    y.read = Since(t0);
    benchmark::DoNotOptimize(sum);
    y.bytes = TimeBytesPass();
    return y;
  }

  // The bytes yardstick's pass over regions_ (TimeYardsticks), timed.
  double TimeBytesPass() {
    const auto t0 = Clock::now();
    uint64_t hashes = 0;
    double squares = 0.0;
    for (const Region& r : regions_) {
      const AfterPiece add = r.dtype == torch::kFloat32   ? &AddSquaresOfPiece<float>
                             : r.dtype == torch::kFloat64 ? &AddSquaresOfPiece<double>
                                                          : &IgnorePiece;
      for (size_t at = 0; at < r.nbytes; at += kDigestChunkBytes) {
        SquareLanes lanes;
        hashes ^= DigestChunkInPieces(r.data + at, std::min(kDigestChunkBytes, r.nbytes - at), add, &lanes).low;
        squares += Total(lanes);
      }
    }
    const double seconds = Since(t0);
    benchmark::DoNotOptimize(hashes);
    benchmark::DoNotOptimize(squares);
    return seconds;
  }

  // The trainer's own enumeration of its state, timed alone on this (checked) trainer right after
  // its capture: VisitState with a visitor that keeps each tensor's data pointer, as the
  // yardsticks list their regions. The part of capture_us the capture cannot do without.
  double TimeVisit() {
    visited_.clear();
    auto t0 = Clock::now();
    trainer_->VisitState([&](const std::string&, TensorKind, const torch::Tensor& t, bool) {
      visited_.push_back(t.defined() ? t.const_data_ptr() : nullptr);
    });
    return Since(t0);
  }

 private:
  SteppedRank(const Scenario& scenario, Mode mode, torch::Device device)
      : scenario_(scenario), mode_(mode), device_(device) {}
  // A step's time includes its kernels: CUDA queues them, so the step ends at a synchronization.
  void Synchronize() const {
    if (device_.is_cuda()) torch::cuda::synchronize(device_.index());
  }
  Communicator* world() { return plain_ ? plain_.get() : static_cast<Communicator*>(recording_.get()); }

  // run_rank.cc's Record: capture, write, and for fail-fast the cross-rank comparison.
  Status Record(int64_t step, const StepStats* stats) {
    auto t0 = Clock::now();
    if (mode_ == Mode::kAsyncChecks) {
      // Begins the step's capture and writes the earlier steps' records that have landed.
      LOCKSTEP_RETURN_IF_ERROR(recorder_->CaptureAsync(*trainer_, step, stats, WallSeconds()));
      capture_seconds_ = Since(t0);
      write_seconds_ = 0.0;
      check_seconds_ += capture_seconds_;
      if (no_work_ != nullptr) {
        // The record's write, which on a GPU a later step's CaptureAsync does once the capture has
        // landed, timed alone.
        no_work_->LandAll();
        auto t1 = Clock::now();
        LOCKSTEP_RETURN_IF_ERROR(recorder_->FinishAsync(/*wait=*/false));
        write_seconds_ = Since(t1);
        if (recorder_->last_async_step_written() != step) return InternalError("the capture landed unwritten");
      }
      return Status::Ok();
    }
    StepRecord& record = record_;
    LOCKSTEP_RETURN_IF_ERROR(recorder_->Capture(*trainer_, step, stats, WallSeconds(), record));
    capture_seconds_ = Since(t0);
    auto t1 = Clock::now();
    LOCKSTEP_RETURN_IF_ERROR(recorder_->Write(record));
    write_seconds_ = Since(t1);
    tensors_ = record.tensors.size();
    if (mode_ == Mode::kFailFast) LOCKSTEP_RETURN_IF_ERROR(CompareAcrossRanks(record));
    check_seconds_ += Since(t0);
    return Status::Ok();
  }

  // run_rank.cc's own call: the 16-byte digest all-gather (and, at a mismatch, which a clean
  // run never has, the tables). Timed alone as compare_seconds().
  Status CompareAcrossRanks(const StepRecord& record) {
    auto t0 = Clock::now();
    LOCKSTEP_ASSIGN_OR_RETURN(std::vector<Finding> findings,
                              CompareStepInBand(*recording_, device_, scenario_, record));
    compare_seconds_ = Since(t0);
    if (!findings.empty()) return InternalError("replicas differ in a clean benchmark run: " + findings[0].message);
    return Status::Ok();
  }

  Scenario scenario_;
  Mode mode_;
  torch::Device device_;
  std::unique_ptr<Communicator> plain_;
  std::unique_ptr<TraceWriter> writer_;
  std::unique_ptr<StepRecorder> recorder_;
  std::unique_ptr<RecordingCommunicator> recording_;
  std::unique_ptr<Trainer> trainer_;
  StepRecord record_;  // kept across steps, as run_rank.cc keeps it
  int64_t step_ = 0;
  double check_seconds_ = 0.0;
  double capture_seconds_ = 0.0;
  double write_seconds_ = 0.0;
  double compare_seconds_ = 0.0;
  size_t tensors_ = 0;
  struct Region {
    const unsigned char* data;
    size_t nbytes;
    torch::ScalarType dtype;
  };
  std::vector<Region> regions_;  // TimeYardsticks' list, reused
  bool cold_turn_ = false;       // TimeYardsticks measures cold_bytes alone this time
  std::vector<const void*> visited_;  // TimeVisit's, reused
  NoWorkDevice* no_work_ = nullptr;  // kAsyncChecks on the CPU: the recorder's device
};

// A scratch folder for the traces of one benchmark, removed with it.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& tag) {
    path_ = std::filesystem::temp_directory_path() / ("lockstep-bench-" + tag + "-" + std::to_string(::getpid()));
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

struct Samples {
  std::vector<double> plain, checks, failfast, checks_direct, failfast_direct, capture, write;
  std::vector<double> async;    // the CUDA trainer with the asynchronous capture (kAsyncChecks)
  std::vector<double> compare;  // the in-band comparison alone (fail-fast), slowest rank
  std::vector<double> read;     // one read of the captured bytes (the plain trainer's state)
  std::vector<double> bytes;    // the capture's work on those bytes alone (hash and squares)
  std::vector<double> cold_bytes;  // the same, first after the step (the capture's temperature)
  std::vector<double> visit;    // the checked trainer's VisitState alone (SteppedRank::TimeVisit)
};

// Median of the per-iteration differences: each checked step is compared with the plain step
// timed right before it, so slow drifts in machine load cancel.
double MedianPairedDifference(const std::vector<double>& with, const std::vector<double>& without) {
  std::vector<double> d(std::min(with.size(), without.size()));
  for (size_t i = 0; i < d.size(); ++i) d[i] = with[i] - without[i];
  return bench::Median(d);
}

// The median of the figures measured (those > 0: the yardsticks' are -1 where not measured).
double MedianOfMeasured(const std::vector<double>& v) {
  std::vector<double> measured;
  for (double x : v) {
    if (x > 0) measured.push_back(x);
  }
  return measured.empty() ? -1.0 : bench::Median(measured);
}

void Report(benchmark::State& state, const Samples& s, size_t tensors) {
  const double plain = bench::Median(s.plain);
  if (plain <= 0) return;
  state.counters["step_ms"] = plain * 1e3;
  state.counters["checks_ms"] = bench::Median(s.checks) * 1e3;
  state.counters["overhead_pct"] = MedianPairedDifference(s.checks, s.plain) / plain * 100.0;
  state.counters["direct_pct"] = bench::Median(s.checks_direct) / plain * 100.0;
  if (!s.failfast.empty()) {
    state.counters["failfast_ms"] = bench::Median(s.failfast) * 1e3;
    state.counters["failfast_overhead_pct"] = MedianPairedDifference(s.failfast, s.plain) / plain * 100.0;
    state.counters["failfast_direct_pct"] = bench::Median(s.failfast_direct) / plain * 100.0;
  }
  if (!s.async.empty()) {
    state.counters["async_ms"] = bench::Median(s.async) * 1e3;
    state.counters["async_overhead_pct"] = MedianPairedDifference(s.async, s.plain) / plain * 100.0;
  }
  if (!s.compare.empty()) {
    // What the in-band comparison costs and moves per step: the digest over the replicated
    // tensors' digests, then 16 bytes a rank all-gathered, whatever the model.
    state.counters["compare_us"] = bench::Median(s.compare) * 1e6;
    state.counters["gather_bytes_per_rank"] = 16;
  }
  state.counters["capture_us"] = bench::Median(s.capture) * 1e6;
  state.counters["write_us"] = bench::Median(s.write) * 1e6;
  state.counters["tensors"] = static_cast<double>(tensors);
  if (!s.read.empty() && s.read.size() == s.capture.size() && s.read.size() == s.write.size()) {
    std::vector<double> ratio;
    for (size_t i = 0; i < s.read.size(); ++i) {
      if (s.read[i] > 0) ratio.push_back((s.capture[i] + s.write[i]) / s.read[i]);
    }
    state.counters["read_us"] = MedianOfMeasured(s.read) * 1e6;
    state.counters["capture_over_read"] = bench::Median(ratio);
  }
  if (!s.read.empty() && s.read.size() == s.bytes.size()) {
    std::vector<double> floor;
    for (size_t i = 0; i < s.read.size(); ++i) {
      if (s.read[i] > 0) floor.push_back(s.bytes[i] / s.read[i]);
    }
    state.counters["bytes_us"] = MedianOfMeasured(s.bytes) * 1e6;
    state.counters["bytes_over_read"] = bench::Median(floor);
  }
  const double cold_bytes = MedianOfMeasured(s.cold_bytes), read = MedianOfMeasured(s.read);
  if (cold_bytes > 0 && read > 0) {
    state.counters["cold_bytes_us"] = cold_bytes * 1e6;
    state.counters["cold_bytes_over_read"] = cold_bytes / read;
  }
  if (!s.visit.empty()) state.counters["visit_us"] = bench::Median(s.visit) * 1e6;
}

void AddYardsticks(const SteppedRank::Yardsticks& y, Samples& s) {
  s.read.push_back(y.read);
  s.bytes.push_back(y.bytes);
  s.cold_bytes.push_back(y.cold_bytes);
}

// Times one Step of `rank`; under MPI, the slowest rank's time.
Status TimedStep(SteppedRank& rank, bool mpi, std::vector<double>& total, std::vector<double>* direct) {
  if (mpi) MPI_Barrier(MPI_COMM_WORLD);
  auto t0 = Clock::now();
  LOCKSTEP_RETURN_IF_ERROR(rank.Step());
  double seconds = Since(t0);
  double checks = rank.check_seconds();
  if (mpi) {
    seconds = bench::MaxOverRanks(seconds);
    checks = bench::MaxOverRanks(checks);
  }
  total.push_back(seconds);
  if (direct) direct->push_back(checks);
  return Status::Ok();
}

// LOCKSTEP_BENCH_PROFILE_DIR=DIR: after the timed steps, kProfiledSteps more of each trainer under
// the torch profiler, into DIR/<name>-none.json and DIR/<name>-checks.json (bench/torch_profile.h;
// the GPU run's cost check reads them with ci/gpu-profile-breakdown.py). The timed figures are
// the steps before; `profiled` says whether both traces were written.
constexpr int kProfiledSteps = 5;
void ProfileBoth(benchmark::State& state, const std::string& name, SteppedRank& plain, SteppedRank& checked,
                 bool cuda) {
  const char* dir = std::getenv("LOCKSTEP_BENCH_PROFILE_DIR");
  if (!dir || !*dir) return;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  const std::filesystem::path base(dir);
  // The profiler's first session in a process pays its start-up (seen on the CPU: the plain side,
  // profiled first, 15-20% slower a step than the checked one): one step of each first, unsaved.
  Status st = bench::ProfileSteps(base / (name + "-warmup.json"), cuda, 1, [&] {
    LOCKSTEP_RETURN_IF_ERROR(plain.Step());
    return checked.Step();
  });
  std::filesystem::remove(base / (name + "-warmup.json"), ec);
  if (st.ok()) {
    st = bench::ProfileSteps(base / (name + "-none.json"), cuda, kProfiledSteps, [&] { return plain.Step(); });
  }
  if (st.ok()) {
    st = bench::ProfileSteps(base / (name + "-checks.json"), cuda, kProfiledSteps, [&] { return checked.Step(); });
  }
  if (!st.ok()) std::fprintf(stderr, "lockstep-bench: %s: profile: %s\n", name.c_str(), st.ToString().c_str());
  state.counters["profiled"] = st.ok() ? 1 : 0;
}

// 1 rank: a thread-communicator world of one per trainer (no MPI in this process).
void BM_StepOverhead(benchmark::State& state, Config config) {
  torch::set_num_threads(1);  // as lockstep-rank: ranks share the cores
  Result<Scenario> scenario = LoadScenario(config);
  if (!scenario.ok()) return state.SkipWithError(scenario.status().ToString().c_str());
  ScratchDir dir("step");
  ThreadWorld plain_world(1), checked_world(1);
  auto plain = SteppedRank::Create(*scenario, plain_world.Join(0), Mode::kPlain, {});
  auto checked = SteppedRank::Create(*scenario, checked_world.Join(0), Mode::kChecks, dir / "rank-0.trace");
  if (!plain.ok() || !checked.ok()) {
    return state.SkipWithError((plain.ok() ? checked.status() : plain.status()).ToString().c_str());
  }
  Samples s;
  for (auto _ : state) {
    Status st = TimedStep(**plain, false, s.plain, nullptr);
    // Right after the plain step, as the capture comes right after the checked one.
    if (st.ok()) AddYardsticks((*plain)->TimeYardsticks(), s);
    if (st.ok()) st = TimedStep(**checked, false, s.checks, &s.checks_direct);
    if (!st.ok()) return state.SkipWithError(st.ToString().c_str());
    s.capture.push_back((*checked)->capture_seconds());
    s.write.push_back((*checked)->write_seconds());
    s.visit.push_back((*checked)->TimeVisit());
    state.SetIterationTime(s.plain.back() + s.checks.back());
  }
  // Before the profiled steps: the timed captures' own count (all but the first steps').
  state.counters["repeats"] = static_cast<double>((*checked)->repeats());
  ProfileBoth(state, std::string("cpu-") + ConfigName(config), **plain, **checked, false);
  Report(state, s, (*checked)->tensors());
}

// 1 rank on CUDA device 0: the same pairing as BM_StepOverhead, the trainers on the GPU (the
// GPU run's figure, ci/gpu-checks.sh check `cost`). Skips with an error where CUDA is missing.
void BM_CudaStepOverhead(benchmark::State& state, Config config) {
  if (!torch::cuda::is_available()) return state.SkipWithError("no CUDA device visible to LibTorch");
  torch::set_num_threads(1);
  Result<Scenario> scenario = LoadScenario(config);
  if (!scenario.ok()) return state.SkipWithError(scenario.status().ToString().c_str());
  scenario->device = Device::kCuda;
  const torch::Device cuda(torch::kCUDA, 0);
  ScratchDir dir("cudastep");
  ThreadWorld plain_world(1), checked_world(1);
  auto plain = SteppedRank::Create(*scenario, plain_world.Join(0), Mode::kPlain, {}, cuda);
  auto checked = SteppedRank::Create(*scenario, checked_world.Join(0), Mode::kChecks, dir / "rank-0.trace", cuda);
  if (!plain.ok() || !checked.ok()) {
    return state.SkipWithError((plain.ok() ? checked.status() : plain.status()).ToString().c_str());
  }
  // A third trainer with the asynchronous capture (async_ms, async_overhead_pct), where this build
  // has it: what LOCKSTEP_ASYNC_CAPTURE=1 would cost lockstep-rank, beside the default.
  ThreadWorld async_world(1);
  std::unique_ptr<SteppedRank> async;
  if (StepRecorder::AsyncCaptureUnavailable().empty()) {
    auto made = SteppedRank::Create(*scenario, async_world.Join(0), Mode::kAsyncChecks, dir / "rank-0-async.trace", cuda);
    if (!made.ok()) return state.SkipWithError(made.status().ToString().c_str());
    async = std::move(made).value();
  }
  Samples s;
  for (auto _ : state) {
    Status st = TimedStep(**plain, false, s.plain, nullptr);
    if (st.ok()) st = TimedStep(**checked, false, s.checks, &s.checks_direct);
    if (st.ok() && async) st = TimedStep(*async, false, s.async, nullptr);
    if (!st.ok()) return state.SkipWithError(st.ToString().c_str());
    s.capture.push_back((*checked)->capture_seconds());
    s.write.push_back((*checked)->write_seconds());
    state.SetIterationTime(s.plain.back() + s.checks.back());
  }
  if (async) {
    const Status drained = async->Drain();
    if (!drained.ok()) return state.SkipWithError(drained.ToString().c_str());
  }
  ProfileBoth(state, std::string("cuda-") + ConfigName(config), **plain, **checked, true);
  Report(state, s, (*checked)->tensors());
}

// The asynchronous capture's host side, on the CPU: StepRecorder::CaptureAsync (what the training
// thread spends to begin a step's capture: the tensors listed and described, their buffers handed
// to the device) and the write of its record once landed, against the synchronous capture and
// write of a trainer of the same scenario, stepped alternately in one run. The device does no work
// (NoWorkDevice): what LOCKSTEP_ASYNC_CAPTURE=1 leaves on a GPU rank's host thread besides the
// launches, measurable without a GPU.
// Counters: async_begin_us, async_write_us, sync_capture_us, sync_write_us (medians) and
// async_over_sync, the median over the steps of (begin + write) / (capture + write), paired.
void BM_AsyncCaptureOnHost(benchmark::State& state, Config config) {
  torch::set_num_threads(1);
  Result<Scenario> scenario = LoadScenario(config);
  if (!scenario.ok()) return state.SkipWithError(scenario.status().ToString().c_str());
  ScratchDir dir("asynchost");
  ThreadWorld sync_world(1), async_world(1);
  auto sync = SteppedRank::Create(*scenario, sync_world.Join(0), Mode::kChecks, dir / "rank-0.trace");
  auto async = SteppedRank::Create(*scenario, async_world.Join(0), Mode::kAsyncChecks, dir / "rank-0-async.trace");
  if (!sync.ok() || !async.ok()) {
    return state.SkipWithError((sync.ok() ? async.status() : sync.status()).ToString().c_str());
  }
  std::vector<double> sync_steps, async_steps, sync_capture, sync_write, async_begin, async_write, ratio;
  for (auto _ : state) {
    Status st = TimedStep(**sync, false, sync_steps, nullptr);
    if (st.ok()) st = TimedStep(**async, false, async_steps, nullptr);
    if (!st.ok()) return state.SkipWithError(st.ToString().c_str());
    sync_capture.push_back((*sync)->capture_seconds());
    sync_write.push_back((*sync)->write_seconds());
    async_begin.push_back((*async)->capture_seconds());
    async_write.push_back((*async)->write_seconds());
    ratio.push_back((async_begin.back() + async_write.back()) / (sync_capture.back() + sync_write.back()));
    state.SetIterationTime(sync_steps.back() + async_steps.back());
  }
  state.counters["sync_capture_us"] = bench::Median(sync_capture) * 1e6;
  state.counters["sync_write_us"] = bench::Median(sync_write) * 1e6;
  state.counters["async_begin_us"] = bench::Median(async_begin) * 1e6;
  state.counters["async_write_us"] = bench::Median(async_write) * 1e6;
  state.counters["async_over_sync"] = bench::Median(ratio);
  state.counters["tensors"] = static_cast<double>((*sync)->tensors());
}

// Under mpirun -np 2: three trainers over three duplicates of MPI_COMM_WORLD.
void BM_MpiStepOverhead(benchmark::State& state, Config config) {
  MpiCommunicator* world = bench::WorldOrSkip(state);
  if (!world) return;
  torch::set_num_threads(1);
  Result<Scenario> scenario = LoadScenario(config);
  if (!scenario.ok()) return state.SkipWithError(scenario.status().ToString().c_str());
  ScratchDir dir("mpistep-r" + std::to_string(world->rank()));
  std::vector<std::unique_ptr<SteppedRank>> ranks;
  for (Mode mode : {Mode::kPlain, Mode::kChecks, Mode::kFailFast}) {
    auto comm = MpiCommunicator::CreateWorld();
    if (!comm.ok()) return state.SkipWithError(comm.status().ToString().c_str());
    auto r = SteppedRank::Create(*scenario, std::move(comm).value(), mode,
                                 dir / ("mode" + std::to_string(static_cast<int>(mode)) + ".trace"));
    if (!r.ok()) return state.SkipWithError(r.status().ToString().c_str());
    ranks.push_back(std::move(r).value());
  }
  Samples s;
  for (auto _ : state) {
    Status st = TimedStep(*ranks[0], true, s.plain, nullptr);
    // This rank's read of its plain trainer's state, paired below with this rank's capture.
    if (st.ok()) AddYardsticks(ranks[0]->TimeYardsticks(), s);
    if (st.ok()) st = TimedStep(*ranks[1], true, s.checks, &s.checks_direct);
    if (st.ok()) st = TimedStep(*ranks[2], true, s.failfast, &s.failfast_direct);
    s.capture.push_back(ranks[1]->capture_seconds());
    s.write.push_back(ranks[1]->write_seconds());
    s.compare.push_back(bench::MaxOverRanks(ranks[2]->compare_seconds()));
    // An error on one rank would leave the others waiting in a collective: abort the job.
    if (!st.ok()) {
      std::fprintf(stderr, "MpiStepOverhead: %s\n", st.ToString().c_str());
      MPI_Abort(MPI_COMM_WORLD, 3);
    }
    state.SetIterationTime(s.plain.back() + s.checks.back() + s.failfast.back());
  }
  Report(state, s, ranks[1]->tensors());
  state.counters["ranks"] = world->size();
}

// Fixed iterations: MPI ranks must agree on them, and each figure comes from that many paired
// steps (a step of the large model takes ~70x the default one's here, 8x the batch ~4x).
BENCHMARK_CAPTURE(BM_StepOverhead, default_transformer, Config::kDefault)
    ->Iterations(300)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_CudaStepOverhead, default_transformer, Config::kDefault)
    ->Iterations(200)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_AsyncCaptureOnHost, default_transformer, Config::kDefault)
    ->Iterations(300)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_StepOverhead, zero1_transformer, Config::kZero1)
    ->Iterations(300)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_StepOverhead, large_model, Config::kLargeModel)
    ->Iterations(12)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_StepOverhead, large_batch, Config::kLargeBatch)
    ->Iterations(100)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_StepOverhead, tokens_x64, Config::kTokensX64)
    ->Iterations(12)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_MpiStepOverhead, default_transformer, Config::kDefault)
    ->Iterations(200)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_MpiStepOverhead, large_model, Config::kLargeModel)
    ->Iterations(8)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_MpiStepOverhead, large_batch, Config::kLargeBatch)
    ->Iterations(60)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_MpiStepOverhead, many_tensors, Config::kManyTensors)
    ->Iterations(50)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_MpiStepOverhead, tokens_x64, Config::kTokensX64)
    ->Iterations(8)->UseManualTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace lockstep
