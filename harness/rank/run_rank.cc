#include "harness/rank/run_rank.h"

#include <unistd.h>

#include <ATen/record_function.h>
#include <torch/cuda.h>
#include <torch/torch.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <iostream>
#include <memory>

#include "checkers/in_band_comparison.h"
#include "harness/capture/async_capture_setting.h"
#include "harness/comm/communicator_factory.h"
#include "harness/comm/mpi_session.h"
#include "harness/comm/recording_communicator.h"
#include "harness/core/build_info.h"
#include "harness/core/cuda_driver_version.h"
#include "harness/discovery/discovery_log.h"
#include "harness/discovery/native_collective_trace_writer.h"
#include "harness/rank/replica_exchange.h"
#include "harness/rank/step_recorder.h"
#include "harness/scenario/injection_kinds.h"
#include "harness/scenario/scenario_loader.h"
#include "harness/topology/topology.h"
#include "harness/trace/digest.h"
#include "harness/trace/trace_writer.h"
#include "harness/trace/world_settings.h"
#include "harness/trainer/fault_injector.h"
#include "harness/trainer/trainer.h"

namespace lockstep {
namespace {

// The 1-rank variant: same global batch, same data, no injection, nothing to compare with.
// `split`: the global batch stays in the N ranks' pieces (Trainer::set_data_split).
void MakeReference(Scenario& s, bool split) {
  if (!split) s.data.batch_per_rank *= s.ranks;
  s.ranks = 1;
  s.slices = 1;
  s.inject.clear();
  s.expect_fail.clear();
}

// The trace header's scenario_digest (docs/TRACE.md#header): XXH3-128 of the scenario file's bytes.
Result<std::string> ScenarioFileDigest(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in && !in.eof()) return InternalError(file.string() + ": cannot read the scenario file for its digest");
  return DigestChunk(bytes.data(), bytes.size()).ToHex();
}

class Rank {
 public:
  explicit Rank(const RankOptions& options) : options_(options) {}

  ExitCode Run() {
    Status s = RunSteps();
    std::string in_flight;
    if (!s.ok() && async_capture_) {
      // What landed is written (without waiting: the device may be what failed); the footer names
      // the steps whose capture was begun and never landed.
      (void)recorder_->FinishAsync(/*wait=*/false);
      steps_completed_ = std::max<int64_t>(steps_completed_, recorder_->last_async_step_written());
      for (int64_t step : recorder_->CapturesInFlight()) {
        in_flight += (in_flight.empty() ? " (captures begun and not landed: steps " : ", ") + std::to_string(step);
      }
      if (!in_flight.empty()) in_flight += ")";
    }
    if (writer_) {
      TraceFooter footer;
      footer.steps_completed = steps_completed_;
      footer.status = s.ok() ? (stopped_early_ ? stop_reason_ : "ok") : s.ToString() + in_flight;
      Status fs = writer_->WriteFooter(footer);
      if (s.ok() && !fs.ok()) s = fs;
      // NCCL's threads may outlive this object; from here on their events wait in the log.
      SetNativeCollectiveObserver(nullptr);
    }
    if (s.ok()) return ExitCode::kPassed;
    std::cerr << "lockstep-rank " << rank_ << ": " << s.ToString() << std::endl;
    return s.code() == StatusCode::kInvalidArgument ? ExitCode::kUsageError : ExitCode::kHarnessError;
  }

 private:
  Status RunSteps() {
    LoadOptions load;
    load.nccl_available = GetBuildInfo().have_nccl;
    load.resolved = true;
    std::vector<Diagnostic> diagnostics;
    Result<Scenario> loaded = LoadScenarioFile(options_.scenario_file, load, &diagnostics);
    if (!loaded.ok()) {
      std::string text;
      for (const auto& d : diagnostics) text += "\n  " + d.ToString();
      return loaded.status().WithContext("scenario" + text);
    }
    scenario_ = std::move(loaded).value();
    const int n_rank_world = scenario_.ranks;
    if (options_.reference || options_.reference_split) MakeReference(scenario_, options_.reference_split);
    if (options_.stop_after_step && *options_.stop_after_step > scenario_.steps) {
      return InvalidArgumentError("--stop-after-step " + std::to_string(*options_.stop_after_step) +
                                  ": the scenario has only " + std::to_string(scenario_.steps) + " steps");
    }

    torch::set_num_threads(1);  // ranks share the cores; intra-op threads would oversubscribe
    LOCKSTEP_ASSIGN_OR_RETURN(topology_, DiscoverTopology(scenario_.slices, "startup", 0));
    rank_ = topology_.rank;
    if (topology_.world_size != scenario_.ranks) {
      return InvalidArgumentError(
          "this process sees a world of " + std::to_string(topology_.world_size) + " rank(s) but the scenario asks for " +
          std::to_string(scenario_.ranks) +
          " (under Slurm with Open MPI 5, plain srun starts N singletons: use srun --mpi=pmix)");
    }

    // A rank asked to train on cuda that cannot is a harness error, never a run on the CPU. The
    // trace is opened first, so that its footer carries the reason.
    const Status on_device = ResolveDevice();
    LOCKSTEP_RETURN_IF_ERROR(OpenTrace());
    LOCKSTEP_RETURN_IF_ERROR(on_device);
    if (!scenario_.inject.empty()) {
      injector_ = std::make_unique<FaultInjector>(scenario_, rank_, [this](const std::string& phase, int64_t step) {
        Rediscover(phase, step);
      });
    }
    LOCKSTEP_ASSIGN_OR_RETURN(std::unique_ptr<Communicator> backend,
                              MakeCommunicator(scenario_.backend, topology_, EffectiveDevice(scenario_)));
    world_ = std::make_unique<RecordingCommunicator>(std::move(backend), recorder_.get(), injector_.get());
    ProcessGroups groups;
    groups.world = world_.get();
    groups.slice = world_.get();
    groups.slices = scenario_.slices;
    if (scenario_.slices > 1) {
      LOCKSTEP_ASSIGN_OR_RETURN(slice_, world_->Split(topology_.slice, rank_, "slice" + std::to_string(topology_.slice)));
      LOCKSTEP_ASSIGN_OR_RETURN(cross_, world_->Split(topology_.slice_rank, rank_, "cross" + std::to_string(topology_.slice_rank)));
      groups.slice = slice_.get();
      groups.cross = cross_.get();
    }

    LOCKSTEP_ASSIGN_OR_RETURN(trainer_, Trainer::Create(scenario_, groups, torch::Device(device_), injector_.get()));
    if (options_.reference_split) trainer_->set_data_split(n_rank_world);
    if (injector_) LOCKSTEP_RETURN_IF_ERROR(injector_->CheckTargets(trainer_->model().module()));
    LOCKSTEP_RETURN_IF_ERROR(trainer_->Initialize());
    LOCKSTEP_RETURN_IF_ERROR(ChooseCapture());
    LOCKSTEP_RETURN_IF_ERROR(Record(0, nullptr));
    for (int64_t step = 1; step <= scenario_.steps && !stopped_early_; ++step) {
      // Start-up is over: a discovery call from here on is one in the middle of training.
      SetDiscoveryContext("step", step);
      world_->set_step(step);
      recorder_->set_step(step);
      native_step_.store(step, std::memory_order_relaxed);
      LOCKSTEP_RETURN_IF_ERROR(WriteHeartbeat(step));
      // The step overwrites the state the captures in flight read: the training stream waits for
      // their reads on the device (nothing without the asynchronous capture).
      LOCKSTEP_RETURN_IF_ERROR(recorder_->GuardOverwrite());
      LOCKSTEP_ASSIGN_OR_RETURN(StepStats stats, trainer_->Step(step));
      LOCKSTEP_RETURN_IF_ERROR(Record(step, &stats));
    }
    if (async_capture_) {
      LOCKSTEP_RETURN_IF_ERROR(recorder_->FinishAsync(/*wait=*/true));
      steps_completed_ = recorder_->last_async_step_written();
    }
    LOCKSTEP_RETURN_IF_ERROR(discovery_error_);
    LOCKSTEP_RETURN_IF_ERROR(native_collectives_->status());
    return recorder_->status();
  }

  // device_: "cpu" or this rank's "cuda:<local_rank % GPUs>" (Topology::DeviceFor). For cuda the
  // LibTorch must have CUDA too: a CPU-only LibTorch would fail at the first tensor.
  Status ResolveDevice() {
    const Device wanted = EffectiveDevice(scenario_);
    device_ = ToString(wanted);
    LOCKSTEP_ASSIGN_OR_RETURN(device_, topology_.DeviceFor(wanted));
    if (wanted == Device::kCuda && !torch::cuda::is_available()) {
      return UnavailableError("device cuda: this LibTorch (" + GetBuildInfo().torch_version +
                              ") cannot use the GPU (a CPU-only build, or its CUDA does not match the driver)");
    }
    if (wanted == Device::kCuda) {
      // The checkers compare replicas and repeated runs bit for bit: ask LibTorch for its
      // deterministic kernels (a warning, not an error, where an op has none), and cuBLAS for a
      // fixed workspace, which it reads when the first handle is made (after this point).
      setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8", /*overwrite=*/0);
      at::globalContext().setDeterministicAlgorithms(true, /*warn_only=*/true);
    }
    return Status::Ok();
  }

  Status OpenTrace() {
    std::error_code ec;
    std::filesystem::create_directories(options_.trace_dir, ec);
    TraceHeader header;
    header.schema = CurrentTraceSchema();
    header.rank = rank_;
    header.world_size = topology_.world_size;
    header.local_rank = topology_.local_rank;
    header.slice = topology_.slice;
    header.host = topology_.host;
    header.pid = getpid();
    header.device = device_;
    header.backend = ToString(scenario_.backend);
    header.scenario_id = scenario_.name + (options_.reference_split ? "#reference-split"
                                           : options_.reference     ? "#reference"
                                                                    : "");
    header.versions = BuildInfoMap();
    header.versions["cuda_driver"] = CudaDriverVersion();
    header.environment = RecordedEnvironment();
    LOCKSTEP_ASSIGN_OR_RETURN(header.scenario_digest, ScenarioFileDigest(options_.scenario_file));
    LOCKSTEP_ASSIGN_OR_RETURN(writer_, TraceWriter::Open(options_.trace_dir / TraceFileName(rank_), header));
    recorder_ = std::make_unique<StepRecorder>(writer_.get());
    // Discovery already ran before the trace existed (the topology): the observer is handed those
    // calls first, then every later one as it happens. It cannot return an error: the first
    // failed write is kept and ends the run at the next step record, so a discovery call that the
    // trace missed never passes unseen.
    SetDiscoveryObserver([this](const DiscoveryRecord& r) {
      Status written = writer_->WriteDiscovery(r);
      if (!written.ok() && discovery_error_.ok()) discovery_error_ = written.WithContext("discovery record");
    });
    // NCCL's own view of its collectives, when its profiler plugin is loaded (NCCL_PROFILER_PLUGIN):
    // beside the fingerprints of the recording communicator, in groups named nccl:<comm hash>.
    native_collectives_ = std::make_shared<NativeCollectiveTraceWriter>(
        writer_.get(), [] { return WallSeconds(); }, [this] { return native_step_.load(std::memory_order_relaxed); });
    SetNativeCollectiveObserver(native_collectives_);
    return Status::Ok();
  }

  // double_discovery: discovery runs again through the real routines, in `phase` of `step`:
  // lockstep's topology discovery (with its CUDA device count), and on the mpi backend a new MPI
  // communicator. Each is recorded by its own recorder (the topology routine, the PMPI wrappers).
  void Rediscover(const std::string& phase, int64_t step) {
    ScopedDiscoveryPhase in_phase(phase);
    (void)DiscoverTopology(1, phase, step);  // recorded; the result is not used
    if (scenario_.backend != Backend::kMpi) return;
    Result<std::shared_ptr<MpiSession>> mpi = MpiSession::Acquire();
    Status split = mpi.ok() ? mpi.value()->SplitSelf() : mpi.status();
    if (!split.ok() && discovery_error_.ok()) {
      discovery_error_ = split.WithContext(std::string(injection_kind::kDoubleDiscovery));
    }
  }

  Status WriteHeartbeat(int64_t step) {
    RECORD_USER_SCOPE("lockstep.heartbeat");  // named in a torch profile (StepRecorder's ranges)
    return writer_->WriteHeartbeat(step, WallSeconds());
  }

  // LOCKSTEP_ASYNC_CAPTURE=1 on a CUDA rank: the step's capture off the host's critical path
  // (StepRecorder::CaptureAsync), not the default until a GPU run has shown it (docs/GPU.md). Not
  // with --fail-fast or --stop-after-step, which need the step's digests before the next step.
  Status ChooseCapture() {
    LOCKSTEP_ASSIGN_OR_RETURN(const AsyncCapture asked, AsyncCaptureFromEnvironment());
    if (asked == AsyncCapture::kOff) return Status::Ok();
    std::string why_not;
    if (asked == AsyncCapture::kHost) {
      why_not = "LOCKSTEP_ASYNC_CAPTURE=host is the probe's (a rank's host tensors are captured at once)";
    } else if (device_.rfind("cuda", 0) != 0) {
      why_not = "the rank trains on " + device_;
    } else if (options_.fail_fast || options_.stop_after_step) {
      why_not = "--fail-fast and --stop-after-step need each step's digests at once";
    } else {
      why_not = StepRecorder::AsyncCaptureUnavailable();
    }
    async_capture_ = why_not.empty();
    // Said in the trace, so that a run asked to capture asynchronously and not doing so is seen.
    return writer_->WriteLog(async_capture_ ? "asynchronous capture: on (LOCKSTEP_ASYNC_CAPTURE=1)"
                                            : "asynchronous capture: off, " + why_not);
  }

  Status Record(int64_t step, const StepStats* stats) {
    LOCKSTEP_RETURN_IF_ERROR(discovery_error_);
    LOCKSTEP_RETURN_IF_ERROR(native_collectives_->status());
    if (async_capture_) {
      // The record is written when its capture lands, a step or a few later (in step order).
      LOCKSTEP_RETURN_IF_ERROR(recorder_->CaptureAsync(*trainer_, step, stats, WallSeconds()));
      steps_completed_ = std::max<int64_t>(0, recorder_->last_async_step_written());
      return Status::Ok();
    }
    StepRecord& record = step_record_;
    LOCKSTEP_RETURN_IF_ERROR(recorder_->Capture(*trainer_, step, stats, WallSeconds(), record));
    LOCKSTEP_RETURN_IF_ERROR(recorder_->Write(record));
    steps_completed_ = step;
    if (options_.fail_fast && topology_.world_size > 1) LOCKSTEP_RETURN_IF_ERROR(CompareAcrossRanks(record));
    if (options_.stop_after_step == step) LOCKSTEP_RETURN_IF_ERROR(StopAfter(step));
    return Status::Ok();
  }

  // --stop-after-step (`lockstep repro`): save the requested tensors as this step left them, then
  // end like a finished run, so the launcher sees a clean exit and the trace a footer.
  Status StopAfter(int64_t step) {
    if (!options_.dump.patterns.empty()) {
      LOCKSTEP_RETURN_IF_ERROR(DumpTensors(
          options_.dump, [this](const DumpTensorVisitor& visit) { trainer_->VisitState(visit); }, rank_, step));
    }
    stopped_early_ = true;
    stop_reason_ = "stopped after step " + std::to_string(step) + " (--stop-after-step)";
    return Status::Ok();
  }

  // In-band comparison (--compare in-band, --fail-fast; harness/rank/replica_exchange.h): 16
  // bytes a rank each step, the tables only at a mismatch. All ranks stop together there, so the
  // traces end at the divergent step, where the post-run checkers find what the ranks found.
  Status CompareAcrossRanks(const StepRecord& record) {
    LOCKSTEP_ASSIGN_OR_RETURN(std::vector<Finding> findings,
                              CompareStepInBand(*world_, torch::Device(device_), scenario_, record));
    if (findings.empty()) return Status::Ok();
    stopped_early_ = true;
    stop_reason_ = "fail-fast: replicas differ after step " + std::to_string(record.step) + " (in-band:";
    for (const Finding& f : findings) stop_reason_ += " " + f.checker;
    stop_reason_ += ")";
    if (rank_ == 0) {
      // Said once, by rank 0: on its stderr for whoever watches the job, and in its trace for the
      // runner, which holds it against the post-run analysis (the judge of record).
      for (const Finding& f : findings) {
        const std::string line = InBandFindingLine(f);
        std::cerr << "lockstep-rank 0: " << line << std::endl;
        LOCKSTEP_RETURN_IF_ERROR(writer_->WriteLog(line));
      }
    }
    return Status::Ok();
  }

  RankOptions options_;
  Scenario scenario_;
  Topology topology_;
  std::string device_ = "cpu";  // the torch device string the trainer uses (ResolveDevice)
  int rank_ = 0;
  std::unique_ptr<TraceWriter> writer_;
  std::unique_ptr<StepRecorder> recorder_;
  StepRecord step_record_;  // the last step's record, reused: Capture refills its tensors in place
  std::unique_ptr<FaultInjector> injector_;
  std::unique_ptr<RecordingCommunicator> world_;
  std::unique_ptr<Communicator> slice_, cross_;
  std::unique_ptr<Trainer> trainer_;
  int64_t steps_completed_ = 0;
  bool async_capture_ = false;  // ChooseCapture
  bool stopped_early_ = false;
  std::string stop_reason_;
  Status discovery_error_;  // the first failed write of a discovery record (see OpenTrace) or rediscovery
  std::shared_ptr<NativeCollectiveTraceWriter> native_collectives_;  // set in OpenTrace
  std::atomic<int64_t> native_step_{0};  // the step, read on NCCL's threads
};

}  // namespace

ExitCode RunRank(const RankOptions& options) { return Rank(options).Run(); }

}  // namespace lockstep
