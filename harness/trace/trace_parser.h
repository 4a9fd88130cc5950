// The one reader of the trace format (docs/TRACE.md): turns a trace's lines, one at a time, into
// TraceRecords. Everything that reads traces goes through it: RankTraceStream and ReadTrace
// (checkers, diff, repro, bless, the probe's tests) and the launcher's watchdog, which feeds it
// the lines a running rank has appended since its last look.
//
// It reads every schema major version from kOldestTraceSchemaMajor to kTraceSchemaMajor:
// /1 lists each step's tensors in JSON; /2 names them once in a `tensors` record and gives each
// step a packed table of digests and norms (harness/trace/tensor_table.h). The parser keeps the
// current `tensors` record, so it must see a trace's lines in order, from the header on.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "harness/core/status.h"
#include "harness/trace/trace_record.h"

namespace lockstep {

// What a reader takes in at most per record (a step of /1 lists every tensor of the model).
inline constexpr size_t kMaxTraceRecordBytes = size_t{64} << 20;

class TraceParser {
 public:
  struct Options {
    // false: step records come out without tensors, their table not even decoded (the watchdog
    // needs the step number only). The `tensors` records are still followed.
    bool tensors = true;
  };

  // `file` names the trace in messages: "rank-1.trace:57: ...".
  explicit TraceParser(std::string file, Options options);
  explicit TraceParser(std::string file) : TraceParser(std::move(file), Options{}) {}

  // One whole record: a line without its '\n'. nullopt for a blank line, a `tensors` or
  // `replica_group` record (folded into the parser) and a record type of a newer minor version (skipped). Errors name
  // file:line: the first record not a header, another major version, a record that is not a
  // JSON object or is larger than kMaxTraceRecordBytes or nested deeper than kMaxJsonDepth, a
  // field of the wrong type, an integer that is not a JSON integer in range, a step table that
  // does not match the current `tensors` record. An error leaves the parser as it was, so a
  // caller that skips bad records (the watchdog) can go on with the next line.
  Result<std::optional<TraceRecord>> Parse(std::string_view line);

  int line() const { return line_; }              // lines given so far
  bool have_header() const { return have_header_; }
  const TraceHeader& header() const { return header_; }
  std::string Where() const;                      // "rank-1.trace:57": the last line given

 private:
  std::string file_;
  Options options_;
  int line_ = 0;
  bool have_header_ = false;
  TraceHeader header_;
  // /2: the tensors each step's table lists, in order (their digest and norm unset).
  std::vector<TensorRecord> layout_;
  // 2.2: the replica groups defined so far, by id.
  std::map<int64_t, std::shared_ptr<const ReplicaGroup>> groups_;
};

// A trace's data ends at its first zero byte: a writer that was killed before it closed the file
// leaves the tail it had reserved as zeros (trace_writer.h), and a record being stored has zeros
// where its bytes are not yet. The length of `bytes` up to that byte (all of it without one).
size_t TraceDataLength(std::string_view bytes);

// Splits bytes that arrive in pieces (a file read in chunks, or appended to while it is read)
// into whole lines: a record is whole only with its '\n', which the writer stores last.
class TraceLines {
 public:
  void Append(std::string_view bytes);
  // The next whole line without its '\n', valid until the next call of any method; nullopt when
  // no whole line is left.
  std::optional<std::string_view> Next();
  size_t pending() const { return buffer_.size() - pos_; }  // bytes of a line not yet whole
  void Clear() { buffer_.clear(); pos_ = 0; }

 private:
  std::string buffer_;
  size_t pos_ = 0;  // start of the first line not yet handed out
};

}  // namespace lockstep
