#include "harness/nccl_profiler/nccl_profiler_recorder.h"

#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <memory>
#include <utility>

#include "harness/discovery/discovery_log.h"
#include "harness/discovery/native_collective_log.h"
#include "harness/nccl_profiler/nccl_names.h"
#include "harness/nccl_profiler/nccl_profiler_abi.h"
#include "harness/trace/trace_record.h"

// When is a collective done? (NVIDIA/nccl v2.28.9-1: src/plugin/profiler.cc, src/enqueue.cc
// hostStreamPlanTask, src/transport/profiler.cc; ext-profiler/README.md "Profiling of collective
// and p2p operations".)
//
// NCCL starts a collective's event and stops it in the same host function, hostStreamPlanTask:
// start, hand the plan's proxy operations to the proxy thread, stop. So the coll event's stopEvent
// says "enqueued", not "done"; the README says as much and points at child events. Of those,
// ProxyOp events exist only for network transfers (none within a node over NVLink or shared
// memory). KernelCh events exist for every collective on every transport once the mask asks for
// them: NCCL then adds one profiler proxy operation per channel the collective runs on (channelLo
// .. channelHi, which is the descriptor's nChannels), and the proxy thread starts a KernelCh event
// when the kernel has begun that channel's work and stops it when the kernel has finished it.
//
// So a collective ends here when its own stopEvent has come AND nChannels KernelCh events have
// stopped: an outstanding count of 1 + nChannels, each stop taking one. Counting the children that
// have started instead (the example plugin's reference count) would end most collectives at once:
// the coll's stop almost always comes before the proxy thread sees the kernel start. A collective
// whose descriptor names no channels ends at its own stop (enqueued), the best NCCL tells. A
// collective that never finishes (a hang) never ends, which is what the hang checker reads.
// Graph-captured collectives are reported as NCCL reports them, once per replay.
//
// Why our own seq: NCCL's coll.seqNumber is comm->seqNumber[func], a counter per collective type
// (AllReduce and AllGather each count from 0), and it skips graph-captured plans; lockstep's seq
// numbers every collective of a group in one sequence, so the Nth collective of a communicator is
// compared across ranks whatever its type. We number collectives in the order NCCL starts their
// events, which is the order of the calls except within one ncclGroupStart/End, where NCCL
// schedules a group's collectives by size (the same order on every rank that made the same calls).

namespace lockstep::nccl_profiler {
namespace {

// Every handle we give NCCL points at one of these first, so stopEvent knows what it stops.
enum class EventKind : uint32_t { kGroup = 0x6c6b7347, kCollective, kKernelChannel };

struct EventTag {
  EventKind kind;
};

void SayOnce(std::atomic<bool>& said, const char* what) {
  if (!said.exchange(true)) std::fprintf(stderr, "lockstep nccl profiler: %s\n", what);
}

EventTag group_tag{EventKind::kGroup};

}  // namespace

class CommProfile {
 public:
  CommProfile(std::string group, int nranks) : group_(std::move(group)), nranks_(nranks) {}

  const std::string& group() const { return group_; }
  int nranks() const { return nranks_; }
  uint64_t NextSeq() { return next_seq_.fetch_add(1, std::memory_order_relaxed); }

  // One reference for NCCL (until finalize), one per collective in flight.
  void Ref() { refs_.fetch_add(1, std::memory_order_relaxed); }
  void Unref() {
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }

 private:
  const std::string group_;
  const int nranks_;
  std::atomic<uint64_t> next_seq_{0};
  std::atomic<int> refs_{1};
};

namespace {

struct Collective;

// The handle of a collective's KernelCh events: one for all of its channels, since they only count.
struct ChannelHandle {
  EventTag tag{EventKind::kKernelChannel};
  Collective* parent = nullptr;
};

struct Collective {
  EventTag tag{EventKind::kCollective};  // first: the handle points here
  CommProfile* comm = nullptr;
  uint64_t seq = 0;
  int channels = 0;
  std::atomic<int> channels_started{0};
  std::atomic<int> outstanding{1};  // the coll's own stop, plus one per channel
  ChannelHandle channel;
};

// Takes one outstanding stop; the last records the end and frees the collective. Runs on NCCL's
// proxy thread for the KernelCh stops.
void Release(Collective* c) {
  if (c->outstanding.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  static std::atomic<bool> said{false};
  try {
    RecordNativeCollectiveEnd(c->comm->group(), c->seq);
  } catch (...) {
    SayOnce(said, "recording a collective's end failed; that collective has no end record");
  }
  c->comm->Unref();
  delete c;
}

}  // namespace

int ActivationMask() { return nccl_abi::ncclProfileColl | nccl_abi::ncclProfileKernelCh; }

std::string CommunicatorName(uint64_t comm_hash, const char* comm_name, int nranks) {
  char head[64];
  std::snprintf(head, sizeof head, "nccl:%016" PRIx64 "/%d", comm_hash, nranks);
  std::string name = head;
  if (comm_name != nullptr && comm_name[0] != '\0') name += std::string(" (") + comm_name + ")";
  return name;
}

CommProfile* OpenCommunicator(uint64_t comm_hash, const char* comm_name, int nranks) {
  static std::atomic<bool> said{false};
  try {
    char group[32];
    std::snprintf(group, sizeof group, "nccl:%016" PRIx64, comm_hash);
    auto comm = std::make_unique<CommProfile>(group, nranks);
    RecordDiscovery("nccl.comm_init", "", CommunicatorName(comm_hash, comm_name, nranks));
    return comm.release();
  } catch (...) {
    SayOnce(said, "could not record a communicator's init; its collectives are not recorded");
    return nullptr;
  }
}

void CloseCommunicator(CommProfile* comm) {
  if (comm != nullptr) comm->Unref();
}

void* StartCollective(CommProfile* comm, const CollectiveStart& start) {
  static std::atomic<bool> said_bad{false};
  static std::atomic<bool> said_failed{false};
  if (comm == nullptr) return nullptr;
  if (start.func == nullptr || start.datatype == nullptr) {
    SayOnce(said_bad, "a collective event without a function or datatype name; ignored");
    return nullptr;
  }
  try {
    CollectiveRecord record;
    record.group = comm->group();
    record.seq = comm->NextSeq();
    record.op = OpNameOfNcclFunc(start.func);
    record.dtype = DtypeNameOfNcclDatatype(start.datatype);
    record.count = ContributedCount(start.func, start.count, comm->nranks());
    record.root = NcclFuncHasRoot(start.func) ? start.root : -1;
    // record.reduce stays "": no profiler ABI version carries the reduction operator.
    auto c = std::make_unique<Collective>();
    c->comm = comm;
    c->seq = record.seq;
    c->channels = start.channels > 0 ? start.channels : 0;
    c->outstanding.store(1 + c->channels, std::memory_order_relaxed);
    c->channel.parent = c.get();
    RecordNativeCollectiveBegin(record);
    comm->Ref();
    return c.release();
  } catch (...) {
    SayOnce(said_failed, "recording a collective failed; it is not in the trace");
    return nullptr;
  }
}

void* StartKernelChannel(void* parent) {
  if (parent == nullptr) return nullptr;  // a p2p's channel (we follow no p2p), or a dropped coll
  auto* tag = static_cast<EventTag*>(parent);
  if (tag->kind != EventKind::kCollective) return nullptr;
  auto* c = static_cast<Collective*>(parent);
  // More channel events than the descriptor announced would end it twice: follow no more.
  if (c->channels_started.fetch_add(1, std::memory_order_relaxed) >= c->channels) return nullptr;
  return &c->channel;
}

void* GroupHandle() { return &group_tag; }

void StopEvent(void* handle) {
  if (handle == nullptr) return;
  auto* tag = static_cast<EventTag*>(handle);
  switch (tag->kind) {
    case EventKind::kCollective: Release(static_cast<Collective*>(handle)); break;
    case EventKind::kKernelChannel: Release(static_cast<ChannelHandle*>(handle)->parent); break;
    case EventKind::kGroup: break;
  }
}

}  // namespace lockstep::nccl_profiler
