// The per-rank trace: what one rank did, step by step. Schema `lockstep.trace/2` (docs/TRACE.md;
// /1 is still read): bump the minor version when adding fields, the major one when changing them.
// Plain data, no LibTorch: checkers and reporters read it without linking the trainer.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "harness/core/name_table.h"

namespace lockstep {

// 2: a step's tensors are a packed table of digests and norms against a `tensors` record that
// names them once (1: every step named every tensor in JSON). Readers read both.
inline constexpr int kTraceSchemaMajor = 2;
inline constexpr int kOldestTraceSchemaMajor = 1;
// Minor 1: the header's `environment`; minor 2: tensors' replica groups; minor 3: a step's
// optimizer settings and an all_to_all's split sizes; minor 4: what replica digests cannot see
// (docs/TRACE.md); minor 5: a step's training forward passes; minor 6: where in the program a
// collective was called.
inline constexpr int kTraceSchemaMinor = 6;
inline constexpr const char* kTraceSchemaName = "lockstep.trace";

// XXH3-128 based content digest (harness/trace/digest.h says how it is computed).
struct Digest128 {
  uint64_t high = 0;
  uint64_t low = 0;
  std::string ToHex() const;                         // 32 lowercase hex digits
  static std::optional<Digest128> FromHex(const std::string& hex);
  bool operator==(const Digest128& o) const { return high == o.high && low == o.low; }
  bool operator!=(const Digest128& o) const { return !(*this == o); }
  bool operator<(const Digest128& o) const { return high != o.high ? high < o.high : low < o.low; }
};

enum class TensorKind { kParam, kGrad, kBuffer, kOptimizerState };
template <> const NameTable<TensorKind>& NamesOf<TensorKind>();  // the trace's "kind" field
const char* ToString(TensorKind kind);

// The ranks that must hold one tensor bit-identically (since 2.2): for a DTensor, the ranks whose
// mesh coordinates equal this rank's on every mesh dim the tensor is not replicated over
// (probe/lockstep/_replicas.py derives it). A tensor without one is held alike by every rank of
// the run (a DDP program's tensors), as before 2.2.
struct ReplicaGroup {
  std::vector<int> ranks;  // world ranks, increasing
  std::string label;       // the mesh dims it spans: "mesh dim dp", "mesh dims dp, tp"; may be ""
  bool operator==(const ReplicaGroup& o) const { return ranks == o.ranks && label == o.label; }
  bool operator!=(const ReplicaGroup& o) const { return !(*this == o); }
};

// "{1, 3} on mesh dim dp" (or "{1, 3}" without a label): how findings name a group.
std::string DescribeReplicaGroup(const ReplicaGroup& group);

// Whether two tensors name the same replica group (both none, or equal ones).
bool SameReplicaGroup(const std::shared_ptr<const ReplicaGroup>& a, const std::shared_ptr<const ReplicaGroup>& b);

struct TensorRecord {
  std::string name;      // "blocks.0.attn.qkv.weight"; optimizer state: "<param>#exp_avg"
  TensorKind kind = TensorKind::kParam;
  Digest128 digest;
  int64_t numel = 0;
  std::string dtype;     // "float32"
  double norm = 0.0;     // L2 norm, for "by how much"
  bool replicated = true;  // false: sharded state (zero1 optimizer state), not compared across ranks
  // The ranks it is compared across when replicated: null for every rank of the run. Shared, not
  // copied: a step's tensors point at the few groups its trace defines.
  std::shared_ptr<const ReplicaGroup> group;
};

// A tensor-parallel module's replicated input over one step (since 2.4): a module parallelized by
// torch.distributed.tensor.parallel whose input is declared `Replicate` over a mesh dim must see
// the same input on every rank of that dim's group, or each rank trains its weight shard on
// different data while the row-parallel all-reduce still makes every output equal.
struct TpInputRecord {
  std::string module;   // the module's name in the model: "layers.0.mlp.up"
  std::string input;    // which input: "0" (positional index) or a keyword argument's name
  // The digests of the input at each forward of the step (harness/trace/digest.h), combined in
  // forward order (CombineChunkDigests under the descriptor "tp_input:<forwards>").
  Digest128 digest;
  int64_t forwards = 0;  // forwards of the module this step
  ReplicaGroup group;    // the ranks that must agree: the mesh dim's group, world ranks
  bool operator==(const TpInputRecord& o) const {
    return module == o.module && input == o.input && digest == o.digest && forwards == o.forwards && group == o.group;
  }
};

struct StepRecord {
  int64_t step = 0;      // 0: after init and the initial broadcast; k: after the k-th optimizer step
  double loss = 0.0;     // NaN at step 0
  // false: the rank reported no loss this step (a pipeline stage before the last one, a program
  // whose loss the probe cannot see); `loss` is then NaN. Since 2.2 the writer omits the field.
  bool loss_reported = true;
  double grad_norm = 0.0;  // global norm of the synced gradient; NaN at step 0
  double lr = 0.0;
  double wall_s = 0.0;   // seconds since the rank started
  std::vector<TensorRecord> tensors;
  // Not written: an id of the layout of `tensors` (names, kinds, element counts, dtypes,
  // replication, groups, in order) from the capture that filled them (TensorCapture::layout_id),
  // which gives the same id only to the same layout and never gives one id to two layouts. 0: no
  // such promise; whoever changes a description in `tensors` by hand sets it to 0. TraceWriter::
  // WriteStep compares the layout with its last `tensors` record only when the id is not the one
  // that record was written for.
  uint64_t layout_id = 0;
  // The optimizer settings the step ran with (since 2.3), each as `<scope>.<setting>`:
  // "opt0.group1.lr", "opt0.group1.beta2", "clip.max_norm" (docs/TRACE.md lists them). Empty: none
  // recorded (lockstep-rank, which records `lr` only, and traces before 2.3). Like `tensors`, a
  // streamed trace's folded steps drop them (checkers/streamed_traces.h): only step judges read them.
  std::vector<std::pair<std::string, double>> optimizer;
  // The parameters of this record whose digest changed after this rank's optimizer step and
  // before the record was written (since 2.4): weights written outside the update, by this rank
  // (an edit, a copy-back, a load). Absent (nullopt): the writer did not watch (lockstep-rank,
  // the probe at more than 2 ranks, traces before 2.4); empty: it watched and none changed.
  std::optional<std::vector<std::string>> edited_after_update;
  // The replicated inputs of the tensor-parallel modules that ran a forward this step (since 2.4),
  // one per module input. Empty: none ran, or none recorded (lockstep-rank, traces before 2.4).
  std::vector<TpInputRecord> tp_inputs;
  // The training forward passes of the rank's models in this step (since 2.5): forwards in
  // training mode with autograd recording, of every model the writer knows. Replicas run the same
  // number; a rank that skips a step on its own condition runs one more before its next optimizer
  // step. Absent: not counted (lockstep-rank, traces before 2.5).
  std::optional<int64_t> forwards;
};

struct CollectiveRecord {
  std::string group;     // "world", "slice0", "cross0", ...
  uint64_t seq = 0;      // per group, from 0
  std::string op;        // "all_reduce", "all_gather", "reduce_scatter", "broadcast", "barrier"
  std::string dtype;
  int64_t count = 0;     // elements contributed by this rank
  int root = -1;         // broadcast only
  std::string reduce;    // "sum", "avg", "max" or ""
  // An all_to_all's split sizes in elements (since 2.3; empty where not recorded): what this rank
  // sends to each rank of the group (`in_splits[j]`: to group rank j) and expects from each
  // (`out_splits[i]`), and its own rank in the group (-1: not recorded), which places its splits.
  int group_rank = -1;
  std::vector<int64_t> in_splits;
  std::vector<int64_t> out_splits;
  int64_t step = 0;      // the optimizer step it belongs to (0: initialization)
  double start_s = 0.0;
  std::optional<double> end_s;  // absent while in flight (or forever, if it hung)
  // Where the program called it (since 2.6; "" where not recorded: a collective a library's C++
  // issued, as DDP's gradient buckets, lockstep-rank's, older traces), innermost first:
  // "torch nn/parallel/distributed.py:2172 in _distributed_broadcast_coalesced < train.py:24 in main".
  std::string where;
};

// One call that discovers devices, ranks or peers, or builds a communicator (docs/CHECKERS.md
// #discovery_count lists which). `phase` is "startup" until training is under way (lockstep-rank:
// until its first step begins; a probed program: until its first optimizer step is done); any
// other phase is a call in the middle of training.
struct DiscoveryRecord {
  int call = 0;          // 1 for the first call in this process
  std::string phase;     // "startup", "step", "attention_forward", ...
  int64_t step = 0;      // the optimizer step the process was in (0: before the first)
  std::string name;      // what was called: "lockstep.topology", "mpi.comm_split", "torch.new_group", ...
  std::string where;     // a short stack ("model.py:41 in forward < train.py:80 in main"), or ""
  std::string comm;      // the communicator it built or initialized, where it names one, or ""
};

// What a discovery record without a name (lockstep.trace/1.0 before names) recorded: lockstep-rank's
// own topology discovery, the only call such traces held.
inline constexpr const char* kTopologyDiscovery = "lockstep.topology";

struct TraceHeader {
  std::string schema;    // "lockstep.trace/2.4"
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int slice = 0;
  std::string host;
  int64_t pid = 0;
  std::string device;    // "cpu", "cuda:0"
  std::string backend;
  std::string scenario_id;
  std::string scenario_digest;
  std::map<std::string, std::string> versions;
  // The settings of the rank's environment that change numerics or collectives, as set there
  // (absent: unset; harness/trace/world_settings.h lists them). Since 2.1.
  std::map<std::string, std::string> environment;
};

struct TraceFooter {
  int64_t steps_completed = 0;
  std::string status;    // "ok" or an error message of the harness
};

// The records that carry no struct of their own above.
struct CollectiveEndRecord {
  std::string group;
  uint64_t seq = 0;
  double end_s = 0.0;
};
struct HeartbeatRecord {
  int64_t step = 0;
  double wall_s = 0.0;
};
struct LogRecord {
  std::string line;
};

// One record of a trace as the reader hands it out (harness/trace/trace_parser.h). A
// CollectiveRecord is a `collective_begin` (with end_s when the writer knew it already).
using TraceRecord = std::variant<TraceHeader, StepRecord, CollectiveRecord, CollectiveEndRecord, DiscoveryRecord,
                                 HeartbeatRecord, TraceFooter, LogRecord>;

// "lockstep.trace/<major>.<minor>" of this build.
std::string CurrentTraceSchema();

struct RankTrace {
  TraceHeader header;
  std::vector<StepRecord> steps;
  std::vector<CollectiveRecord> collectives;
  std::vector<DiscoveryRecord> discoveries;
  std::optional<TraceFooter> footer;  // absent: the rank did not exit cleanly
  double last_heartbeat_s = 0.0;
  bool missing = false;               // no trace file: the rank never started writing (note in truncation_note)
  bool truncated = false;             // the file ended inside a record
  std::string truncation_note;        // "rank-1.trace:57: record cut after 12 bytes"
  std::vector<std::string> log_tail;  // last lines the rank printed (stderr/stdout), if kept
};

// A rank's steps by number, for comparing steps across ranks or runs. A step recorded twice (it
// should not be) keeps the last record.
std::map<int64_t, const StepRecord*> StepsByNumber(const RankTrace& trace);

// Every step any rank recorded, in increasing order, with each rank's record of it (StepsByNumber's
// choice; null where the rank has none, or where ranks[r] itself is null): the in-memory twin of
// the streaming merge by step (checkers/streamed_traces.h), for the consumers that take one step
// across ranks at a time.
void ForEachStepAcrossRanks(const std::vector<const RankTrace*>& ranks,
                            const std::function<void(int64_t, const std::vector<const StepRecord*>&)>& visit);

}  // namespace lockstep
