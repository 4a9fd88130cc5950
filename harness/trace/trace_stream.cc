#include "harness/trace/trace_stream.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>
#include <type_traits>

#include "harness/trace/trace_writer.h"

namespace lockstep {
namespace {

constexpr size_t kReadChunk = size_t{64} << 10;

}  // namespace

RankTraceStream::RankTraceStream(std::string file, int fd, std::string_view memory)
    : file_(std::move(file)), fd_(fd), memory_(memory), parser_(file_) {}

RankTraceStream::~RankTraceStream() {
  if (fd_ >= 0) ::close(fd_);
}

Result<std::unique_ptr<RankTraceStream>> RankTraceStream::Open(const std::filesystem::path& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  // Messages name the file as given, directory included: two runs' rank-0.trace told apart.
  const std::string file = path.string();
  if (!fs::exists(status)) {
    std::unique_ptr<RankTraceStream> s(new RankTraceStream(file, -1, {}));
    s->trace_.missing = true;
    s->trace_.truncation_note = file + ": missing (the rank never started writing its trace)";
    s->at_end_ = true;
    return s;
  }
  if (fs::is_directory(status)) return InvalidArgumentError(path.string() + ": is a directory, not a trace file");
  if (!fs::is_regular_file(status)) return InvalidArgumentError(path.string() + ": is not a regular file");
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return IoError(path.string() + ": cannot open the trace file: " + std::strerror(errno));
  return std::unique_ptr<RankTraceStream>(new RankTraceStream(file, fd, {}));
}

std::unique_ptr<RankTraceStream> RankTraceStream::FromBytes(std::string_view data, std::string file) {
  return std::unique_ptr<RankTraceStream>(new RankTraceStream(std::move(file), -1, data));
}

Result<bool> RankTraceStream::Fill() {
  if (fd_ < 0) {
    if (memory_.empty()) return false;
    const size_t n = std::min(memory_.size(), kReadChunk);
    const size_t data = TraceDataLength(memory_.substr(0, n));
    lines_.Append(memory_.substr(0, data));
    memory_.remove_prefix(data < n ? memory_.size() : n);
    return data > 0;
  }
  if (data_ended_) return false;
  char chunk[kReadChunk];
  for (;;) {
    const ssize_t n = ::read(fd_, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return IoError(file_ + ": cannot read the trace file: " + std::strerror(errno));
    if (n == 0) return false;
    // The zero tail a killed writer left (TraceDataLength) is no part of the trace.
    const size_t data = TraceDataLength(std::string_view(chunk, static_cast<size_t>(n)));
    data_ended_ = data < static_cast<size_t>(n);
    lines_.Append(std::string_view(chunk, data));
    return data > 0 || !data_ended_;
  }
}

Result<std::optional<TraceRecord>> RankTraceStream::NextRecord() {
  while (!at_end_) {
    std::optional<std::string_view> line = lines_.Next();
    if (!line) {
      // A record longer than any the writer makes, with no newline in sight: stop reading
      // before it takes the memory.
      if (lines_.pending() > kMaxTraceRecordBytes) {
        return InvalidArgumentError(file_ + ":" + std::to_string(parser_.line() + 1) + ": record of more than " +
                                    std::to_string(kMaxTraceRecordBytes) + " bytes without its end");
      }
      LOCKSTEP_ASSIGN_OR_RETURN(bool more, Fill());
      if (!more) LOCKSTEP_RETURN_IF_ERROR(Finish());
      continue;
    }
    LOCKSTEP_ASSIGN_OR_RETURN(std::optional<TraceRecord> record, parser_.Parse(*line));
    if (!record) continue;
    Fold(*record);
    return record;
  }
  return std::optional<TraceRecord>();
}

Result<std::optional<StepRecord>> RankTraceStream::NextStep() {
  for (;;) {
    LOCKSTEP_ASSIGN_OR_RETURN(std::optional<TraceRecord> record, NextRecord());
    if (!record) return std::optional<StepRecord>();
    if (auto* step = std::get_if<StepRecord>(&*record)) return std::optional<StepRecord>(std::move(*step));
  }
}

Status RankTraceStream::ReadHeader() {
  while (!parser_.have_header() && !at_end_) {
    LOCKSTEP_ASSIGN_OR_RETURN(std::optional<TraceRecord> record, NextRecord());
    if (!record) break;
  }
  return Status::Ok();
}

void RankTraceStream::Fold(const TraceRecord& record) {
  std::visit(
      [this](const auto& r) {
        using T = std::decay_t<decltype(r)>;
        if constexpr (std::is_same_v<T, TraceHeader>) {
          trace_.header = r;
        } else if constexpr (std::is_same_v<T, StepRecord>) {
          StepRecord& kept = trace_.steps.emplace_back();
          kept.step = r.step;
          kept.loss = r.loss;
          kept.loss_reported = r.loss_reported;
          kept.grad_norm = r.grad_norm;
          kept.lr = r.lr;
          kept.wall_s = r.wall_s;
          kept.forwards = r.forwards;  // one number a step, as the scalars above
          if (keep_tensors_) {
            kept.tensors = r.tensors;
            kept.optimizer = r.optimizer;  // per step and group: the judges' to read, as tensors
            kept.edited_after_update = r.edited_after_update;
            kept.tp_inputs = r.tp_inputs;
          }
        } else if constexpr (std::is_same_v<T, CollectiveRecord>) {
          open_collectives_[{r.group, r.seq}] = trace_.collectives.size();
          trace_.collectives.push_back(r);
        } else if constexpr (std::is_same_v<T, CollectiveEndRecord>) {
          // An end without its begin cannot be placed; ignoring it keeps the rest readable.
          auto it = open_collectives_.find({r.group, r.seq});
          if (it != open_collectives_.end()) {
            trace_.collectives[it->second].end_s = r.end_s;
            open_collectives_.erase(it);
          }
        } else if constexpr (std::is_same_v<T, DiscoveryRecord>) {
          trace_.discoveries.push_back(r);
        } else if constexpr (std::is_same_v<T, HeartbeatRecord>) {
          trace_.last_heartbeat_s = r.wall_s;
        } else if constexpr (std::is_same_v<T, TraceFooter>) {
          trace_.footer = r;
        } else if constexpr (std::is_same_v<T, LogRecord>) {
          log_tail_.push_back(r.line);
          if (log_tail_.size() > kTraceLogTailLines) log_tail_.pop_front();
        }
      },
      record);
}

Status RankTraceStream::Finish() {
  at_end_ = true;
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
  trace_.log_tail.assign(log_tail_.begin(), log_tail_.end());
  if (parser_.line() == 0 && lines_.pending() == 0) {
    // The header is written at open, so an empty file means the rank died inside that write.
    trace_.truncated = true;
    trace_.truncation_note = file_ + ":1: empty file (the rank died before its header was written)";
  } else if (lines_.pending() > 0) {
    // A record is whole only with its newline: the writer emits both in one write(2).
    trace_.truncated = true;
    trace_.truncation_note = file_ + ":" + std::to_string(parser_.line() + 1) + ": last record cut (" +
                             std::to_string(lines_.pending()) + " bytes)";
  }
  if (!parser_.have_header() && !trace_.truncated) {
    return InvalidArgumentError(file_ + ": not a lockstep trace (no header record)");
  }
  return Status::Ok();
}

Result<std::vector<std::unique_ptr<RankTraceStream>>> OpenTraceDir(const std::filesystem::path& dir, int world_size) {
  if (world_size < 1) return InvalidArgumentError("OpenTraceDir: world size " + std::to_string(world_size) + " < 1");
  std::vector<std::unique_ptr<RankTraceStream>> streams;
  streams.reserve(static_cast<size_t>(world_size));
  for (int r = 0; r < world_size; ++r) {
    const std::filesystem::path path = dir / TraceFileName(r);
    LOCKSTEP_ASSIGN_OR_RETURN(std::unique_ptr<RankTraceStream> s, RankTraceStream::Open(path));
    LOCKSTEP_RETURN_IF_ERROR(s->ReadHeader());
    TraceHeader& header = s->trace_.header;
    if (header.schema.empty()) {
      // Missing or empty: no header to say which rank it was; the file name does.
      header.rank = r;
      header.world_size = world_size;
    } else if (header.rank != r) {
      return InvalidArgumentError(path.string() + ": header says rank " + std::to_string(header.rank) +
                                  ", file name says rank " + std::to_string(r));
    }
    streams.push_back(std::move(s));
  }
  return streams;
}

}  // namespace lockstep
