#include "harness/trace/trace_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <system_error>

#include <nlohmann/json.hpp>

#include "harness/trace/double_text.h"
#include "harness/trace/tensor_table.h"
#include "harness/trace/trace_fields.h"
#include "harness/trace/trace_record_json.h"

namespace lockstep {

namespace f = trace_field;  // the format's names
namespace {

char* PutText(char* p, const char* text) {
  const size_t n = std::strlen(text);  // the format's own names: constants, folded
  std::memcpy(p, text, n);
  return p + n;
}

// A double's text (double_text.h) at `p`, which has room for kDoubleTextMax characters. JSON has no
// NaN or infinity, so those are the strings "nan", "inf", "-inf" (the reader maps them back; null
// reads as NaN).
char* PutDouble(char* p, double v) {
  if (std::isnan(v)) return PutText(p, "\"nan\"");
  if (std::isinf(v)) return PutText(p, v > 0 ? "\"inf\"" : "\"-inf\"");
  return WriteDoubleText(v, p);
}

// Appends JSON by hand for the hot records: a step with a few hundred tensors costs ~3x less than
// building an nlohmann tree (measured ~110 us vs ~330 us for 300 tensors). Strings that need
// escaping still go through nlohmann so the escaping rules are the library's.
class JsonLine {
 public:
  // Clears `out`, or with `append` writes after what it holds.
  explicit JsonLine(std::string& out, bool append = false) : out_(out) {
    if (!append) out_.clear();
  }

  void Begin() { out_.push_back('{'); first_ = true; }
  // Goes on with an object whose first members the caller has appended itself.
  void ContinueObject() { first_ = false; }
  void End() { out_.push_back('}'); first_ = false; }
  void BeginArray(const char* key) { Key(key); out_.push_back('['); first_ = true; }
  void EndArray() { out_.push_back(']'); first_ = false; }
  void BeginObjectInArray() { Comma(); Begin(); }

  void Field(const char* key, const std::string& v) { Key(key); String(v); }
  void Field(const char* key, const char* v) { Key(key); String(v); }
  void Field(const char* key, int64_t v) { Key(key); Number(v); }
  void Field(const char* key, int v) { Field(key, static_cast<int64_t>(v)); }
  void Field(const char* key, uint64_t v) { Key(key); Number(v); }
  void Field(const char* key, bool v) { Key(key); out_ += v ? "true" : "false"; }
  void Field(const char* key, double v) { Key(key); Double(v); }
  // Digest128::ToHex's text, written in place: one heap string less per tensor of a step.
  void Field(const char* key, const Digest128& d) {
    static constexpr char kDigits[] = "0123456789abcdef";
    Key(key);
    char buf[34];
    buf[0] = buf[33] = '"';
    for (int i = 0; i < 16; ++i) {
      buf[16 - i] = kDigits[(d.high >> (4 * i)) & 0xf];
      buf[32 - i] = kDigits[(d.low >> (4 * i)) & 0xf];
    }
    out_.append(buf, sizeof(buf));
  }
  void NewLine() { out_.push_back('\n'); }
  // A string element of the array being written.
  void Item(std::string_view v) { Comma(); String(v); }
  // A key whose value the caller appends to the output itself.
  void RawKey(const char* key) { Key(key); }
  // A member whose key is data (an optimizer setting's name), escaped as any string.
  void NamedNumber(std::string_view key, double v) {
    Comma();
    String(key);
    out_.push_back(':');
    Double(v);
  }

 private:
  void Comma() {
    if (!first_) out_.push_back(',');
    first_ = false;
  }
  void Key(const char* key) {
    Comma();
    out_.push_back('"');
    out_ += key;  // our own keys: plain ASCII
    out_ += "\":";
  }
  void String(std::string_view s) {
    bool plain = true;
    for (unsigned char c : s) {
      if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\') { plain = false; break; }
    }
    if (plain) {
      out_.push_back('"');
      out_.append(s.data(), s.size());
      out_.push_back('"');
    } else {
      // Invalid UTF-8 (a rank's log line may carry anything) becomes U+FFFD instead of throwing.
      out_ += nlohmann::json(std::string(s)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    }
  }
  template <typename T>
  void Number(T v) {
    char buf[32];
    auto r = std::to_chars(buf, buf + sizeof(buf), v);
    out_.append(buf, r.ptr);
  }
  void Double(double v) {
    char buf[kDoubleTextMax];
    out_.append(buf, PutDouble(buf, v));
  }

  std::string& out_;
  bool first_ = true;
};

// The members every step record has, stored with pointer writes into a buffer of the caller's
// (StepHead), where JsonLine's std::string calls were a few each, their code cold after a training
// step (issue 47). The same text as JsonLine writes: `,"key":value` (PutText and PutDouble above).
char* PutKey(char* p, const char* key) {
  *p++ = ',';
  *p++ = '"';
  p = PutText(p, key);
  *p++ = '"';
  *p++ = ':';
  return p;
}
char* PutInt(char* p, int64_t v) { return std::to_chars(p, p + 20, v).ptr; }

// {"type":"step","step":N,"loss":X,"grad_norm":X,"lr":X,"wall_s":X: at most 14 + 8 + 20 + 4 * (13 +
// kDoubleTextMax) characters.
constexpr size_t kStepHeadMax = 256;
static_assert(14 + 8 + 20 + 4 * (13 + kDoubleTextMax) <= kStepHeadMax, "a step head fits");
char* StepHead(const StepRecord& step, char* p) {
  p = PutText(p, "{\"");
  p = PutText(p, f::kType);
  p = PutText(p, "\":\"");
  p = PutText(p, f::kStepRecord);
  *p++ = '"';
  p = PutInt(PutKey(p, f::kStep), step.step);
  if (step.loss_reported) p = PutDouble(PutKey(p, f::kLoss), step.loss);
  p = PutDouble(PutKey(p, f::kGradNorm), step.grad_norm);
  p = PutDouble(PutKey(p, f::kLr), step.lr);
  return PutDouble(PutKey(p, f::kWallS), step.wall_s);
}

}  // namespace

std::string TraceFileName(int rank) { return "rank-" + std::to_string(rank) + ".trace"; }

Result<std::unique_ptr<TraceWriter>> TraceWriter::Open(const std::filesystem::path& path, const TraceHeader& header,
                                                       TraceOpen mode, size_t map_chunk_bytes) {
  std::error_code ec;
  if (path.has_parent_path()) {
    std::filesystem::create_directories(path.parent_path(), ec);
    if (ec) return IoError("cannot create directory " + path.parent_path().string() + ": " + ec.message());
  }
  const int fd = ::open(path.c_str(),
                        O_RDWR | O_CREAT | O_CLOEXEC | (mode == TraceOpen::kNew ? O_EXCL : O_TRUNC), 0644);
  if (fd < 0 && errno == EEXIST && mode == TraceOpen::kNew) {
    return IoError("cannot open trace " + path.string() + ": another process of this run already writes rank " +
                   std::to_string(header.rank) + "'s trace (every process has a rank of its own: does the program " +
                   "hard-code its rank, or world_size=1?)");
  }
  if (fd < 0) return IoError("cannot open trace " + path.string() + ": " + std::strerror(errno));
  Result<std::unique_ptr<MappedAppendFile>> file = MappedAppendFile::Open(fd, path.string(), map_chunk_bytes);
  if (!file.ok()) return file.status();
  std::unique_ptr<TraceWriter> writer(new TraceWriter(std::move(file).value(), path));

  // The header is rare: written in the one shape `lockstep trace dump` prints it in, with this
  // build's schema.
  TraceHeader written = header;
  written.schema = CurrentTraceSchema();
  {
    std::lock_guard<std::mutex> lock(writer->mu_);
    writer->line_ = TraceRecordToJson(written);
    writer->line_.push_back('\n');
    LOCKSTEP_RETURN_IF_ERROR(writer->Flush());
  }
  return writer;
}

TraceWriter::~TraceWriter() = default;

namespace {

// The fixed part of one tensor in a flat layout (TraceWriter::layout_); its name and dtype follow.
struct LayoutHead {
  int64_t numel;
  uint32_t name_size;
  uint32_t dtype_size;
  uint32_t group;  // 0: the whole world; k: the writer's replica group k
  uint8_t kind;
  uint8_t replicated;
};

}  // namespace

// Compared with the step's records on every step, so it is one flat buffer read front to back: a
// copy of the records themselves (one name on the heap each, cold after a training step) cost
// about a fifth of the step record's write (docs/PERFORMANCE.md, 2026-11-29).
bool TraceWriter::SameLayout(const std::vector<TensorRecord>& tensors) const {
  const char* p = layout_.data();
  const char* const end = p + layout_.size();
  for (const TensorRecord& t : tensors) {
    LayoutHead h;
    if (static_cast<size_t>(end - p) < sizeof(h)) return false;
    std::memcpy(&h, p, sizeof(h));
    p += sizeof(h);
    if (h.numel != t.numel || h.name_size != t.name.size() || h.dtype_size != t.dtype.size() ||
        h.kind != static_cast<uint8_t>(t.kind) || h.replicated != static_cast<uint8_t>(t.replicated) ||
        static_cast<size_t>(end - p) < size_t{h.name_size} + h.dtype_size ||
        std::memcmp(p, t.name.data(), h.name_size) != 0 ||
        std::memcmp(p + h.name_size, t.dtype.data(), h.dtype_size) != 0) {
      return false;
    }
    p += size_t{h.name_size} + h.dtype_size;
    if (h.group == 0 ? t.group != nullptr : (t.group == nullptr || !SameReplicaGroup(groups_[h.group - 1], t.group))) {
      return false;
    }
  }
  return p == end;
}

void TraceWriter::KeepLayout(const std::vector<TensorRecord>& tensors, const std::vector<int64_t>& group_ids) {
  layout_.clear();
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorRecord& t = tensors[i];
    LayoutHead h{};
    h.numel = t.numel;
    h.name_size = static_cast<uint32_t>(t.name.size());
    h.dtype_size = static_cast<uint32_t>(t.dtype.size());
    h.group = static_cast<uint32_t>(group_ids[i]);
    h.kind = static_cast<uint8_t>(t.kind);
    h.replicated = static_cast<uint8_t>(t.replicated);
    layout_.append(reinterpret_cast<const char*>(&h), sizeof(h));
    layout_ += t.name;
    layout_ += t.dtype;
  }
}

// Out of WriteStep, and placed apart from it (cold): the few steps whose layout changes run it,
// and inlined, its code lay among the lines every step fetches cold after a training step.
[[gnu::cold, gnu::noinline]] void TraceWriter::AppendLayoutRecords(const std::vector<TensorRecord>& tensors) {
  // A `tensors` record (names, kinds, shapes), after a `replica_group` record for each group it
  // names that no earlier record defined.
  std::vector<int64_t> ids(tensors.size(), 0);
  for (size_t i = 0; i < tensors.size(); ++i) {
    const std::shared_ptr<const ReplicaGroup>& g = tensors[i].group;
    if (g == nullptr) continue;
    size_t k = 0;
    while (k < groups_.size() && !SameReplicaGroup(groups_[k], g)) ++k;
    if (k == groups_.size()) {
      groups_.push_back(g);
      JsonLine d(line_, /*append=*/true);
      d.Begin();
      d.Field(f::kType, f::kReplicaGroupRecord);
      d.Field(f::kId, static_cast<int64_t>(k + 1));
      d.BeginArray(f::kRanks);
      for (size_t r = 0; r < g->ranks.size(); ++r) {
        if (r > 0) line_.push_back(',');
        line_ += std::to_string(g->ranks[r]);
      }
      d.EndArray();
      d.Field(f::kLabel, g->label);
      d.End();
      d.NewLine();
    }
    ids[i] = static_cast<int64_t>(k + 1);
  }
  JsonLine j(line_, /*append=*/true);
  j.Begin();
  j.Field(f::kType, f::kTensorsRecord);
  j.BeginArray(f::kTensors);
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorRecord& t = tensors[i];
    j.BeginObjectInArray();
    j.Field(f::kName, t.name);
    j.Field(f::kKind, ToString(t.kind));
    j.Field(f::kNumel, t.numel);
    j.Field(f::kDtype, t.dtype);
    j.Field(f::kReplicated, t.replicated);
    if (ids[i] != 0) j.Field(f::kGroup, ids[i]);  // absent: the whole world, as before 2.2
    j.End();
  }
  j.EndArray();
  j.End();
  j.NewLine();
  KeepLayout(tensors, ids);
}

// The members a step record has only in some runs (each absent before a schema version), after
// the ones every step has. A function of its own: most runs' steps have none of them, and
// inlined, their code lay among the lines every step fetches cold after a training step.
[[gnu::noinline]] void TraceWriter::AppendOptionalStepMembers(const StepRecord& step) {
  JsonLine j(line_, /*append=*/true);
  j.ContinueObject();
  if (step.forwards) j.Field(f::kForwards, *step.forwards);  // absent: not counted, as before 2.5
  if (!step.optimizer.empty()) {  // absent: none recorded, as before 2.3
    j.RawKey(f::kOptimizer);
    j.Begin();
    for (const auto& [setting, value] : step.optimizer) j.NamedNumber(setting, value);
    j.End();
  }
  if (step.edited_after_update) {  // absent: not watched, as before 2.4
    j.BeginArray(f::kEditedAfterUpdate);
    for (const std::string& name : *step.edited_after_update) j.Item(name);
    j.EndArray();
  }
  if (!step.tp_inputs.empty()) {  // absent: none, as before 2.4
    j.BeginArray(f::kTpInputs);
    for (const TpInputRecord& in : step.tp_inputs) {
      j.BeginObjectInArray();
      j.Field(f::kModule, in.module);
      j.Field(f::kInput, in.input);
      j.Field(f::kDigest, in.digest);
      j.Field(f::kForwards, in.forwards);
      j.BeginArray(f::kRanks);
      for (size_t r = 0; r < in.group.ranks.size(); ++r) {
        if (r > 0) line_.push_back(',');
        line_ += std::to_string(in.group.ranks[r]);
      }
      j.EndArray();
      j.Field(f::kLabel, in.group.label);
      j.End();
    }
    j.EndArray();
  }
}

Status TraceWriter::WriteStep(const StepRecord& step) {
  std::lock_guard<std::mutex> lock(mu_);
  line_.clear();
  const bool same_id = step.layout_id != 0 && step.layout_id == layout_id_;
  layout_id_ = step.layout_id;
  // Names, kinds and shapes once, when they change (step 0, and the step that first has optimizer
  // state), in the same append as the step that needs them.
  if (!same_id && !SameLayout(step.tensors)) AppendLayoutRecords(step.tensors);
  char head[kStepHeadMax];
  line_.append(head, StepHead(step, head));
  AppendOptionalStepMembers(step);
  char tail[40];  // ,"n":N,"table":"
  char* t = PutInt(PutKey(tail, f::kN), static_cast<int64_t>(step.tensors.size()));
  t = PutKey(t, f::kTable);
  *t++ = '"';
  line_.append(tail, t);
  // The table, most of the record, is written where it goes, not into line_ and copied: after a
  // training step both are out of the cache, and each was a few KB of cold lines to write.
  static constexpr char kEnd[] = "\"}\n";  // the table's closing quote, the record's brace, newline
  const size_t table = step.tensors.size() * kTensorTableEntryChars;
  LOCKSTEP_ASSIGN_OR_RETURN(char* out, file_->Reserve(line_.size() + table + 3));
  std::memcpy(out, line_.data(), line_.size());
  WriteTensorTable(step.tensors, out + line_.size());
  std::memcpy(out + line_.size() + table, kEnd, 2);
  return file_->Commit(kEnd[2]);
}

Status TraceWriter::WriteCollectiveBegin(const CollectiveRecord& c) {
  std::lock_guard<std::mutex> lock(mu_);
  JsonLine j(line_);
  j.Begin();
  j.Field(f::kType, f::kCollectiveBeginRecord);
  j.Field(f::kGroup, c.group);
  j.Field(f::kSeq, c.seq);
  j.Field(f::kOp, c.op);
  j.Field(f::kDtype, c.dtype);
  j.Field(f::kCount, c.count);
  j.Field(f::kRoot, c.root);
  j.Field(f::kReduce, c.reduce);
  if (c.group_rank >= 0) j.Field(f::kGroupRank, c.group_rank);  // since 2.3, an all_to_all's
  auto splits = [&](const char* key, const std::vector<int64_t>& values) {
    if (values.empty()) return;
    j.BeginArray(key);
    for (size_t i = 0; i < values.size(); ++i) {
      if (i > 0) line_.push_back(',');
      line_ += std::to_string(values[i]);
    }
    j.EndArray();
  };
  splits(f::kInSplits, c.in_splits);
  splits(f::kOutSplits, c.out_splits);
  j.Field(f::kStep, c.step);
  j.Field(f::kStartS, c.start_s);
  if (c.end_s) j.Field(f::kEndS, *c.end_s);
  if (!c.where.empty()) j.Field(f::kWhere, c.where);  // since 2.6
  j.End();
  j.NewLine();
  return Flush();
}

Status TraceWriter::WriteCollectiveEnd(const std::string& group, uint64_t seq, double end_s) {
  std::lock_guard<std::mutex> lock(mu_);
  JsonLine j(line_);
  j.Begin();
  j.Field(f::kType, f::kCollectiveEndRecord);
  j.Field(f::kGroup, group);
  j.Field(f::kSeq, seq);
  j.Field(f::kEndS, end_s);
  j.End();
  j.NewLine();
  return Flush();
}

Status TraceWriter::WriteDiscovery(const DiscoveryRecord& d) {
  std::lock_guard<std::mutex> lock(mu_);
  JsonLine j(line_);
  j.Begin();
  j.Field(f::kType, f::kDiscoveryRecord);
  j.Field(f::kCall, d.call);
  j.Field(f::kName, d.name.empty() ? std::string(kTopologyDiscovery) : d.name);
  j.Field(f::kPhase, d.phase);
  j.Field(f::kStep, d.step);
  if (!d.where.empty()) j.Field(f::kWhere, d.where);
  if (!d.comm.empty()) j.Field(f::kComm, d.comm);
  j.End();
  j.NewLine();
  return Flush();
}

Status TraceWriter::WriteHeartbeat(int64_t step, double wall_s) {
  std::lock_guard<std::mutex> lock(mu_);
  JsonLine j(line_);
  j.Begin();
  j.Field(f::kType, f::kHeartbeatRecord);
  j.Field(f::kStep, step);
  j.Field(f::kWallS, wall_s);
  j.End();
  j.NewLine();
  return Flush();
}

Status TraceWriter::WriteFooter(const TraceFooter& footer) {
  std::lock_guard<std::mutex> lock(mu_);
  JsonLine j(line_);
  j.Begin();
  j.Field(f::kType, f::kFooterRecord);
  j.Field(f::kStepsCompleted, footer.steps_completed);
  j.Field(f::kStatus, footer.status);
  j.End();
  j.NewLine();
  return Flush();
}

Status TraceWriter::WriteLog(const std::string& text) {
  std::lock_guard<std::mutex> lock(mu_);
  JsonLine j(line_);
  j.Begin();
  j.Field(f::kType, f::kLogRecord);
  j.Field(f::kLine, text);
  j.End();
  j.NewLine();
  return Flush();
}

}  // namespace lockstep
