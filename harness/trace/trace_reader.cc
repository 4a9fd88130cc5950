#include "harness/trace/trace_reader.h"

#include <system_error>
#include <utility>

namespace lockstep {
namespace {

Result<RankTrace> ReadWhole(RankTraceStream& stream) {
  stream.KeepTensors();
  for (;;) {
    LOCKSTEP_ASSIGN_OR_RETURN(std::optional<StepRecord> step, stream.NextStep());
    if (!step) return stream.TakeTrace();
  }
}

}  // namespace

Result<RankTrace> ReadTrace(const std::filesystem::path& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (!fs::exists(status)) return NotFoundError(path.string() + ": no such trace file");
  if (fs::is_regular_file(status)) {
    const std::uintmax_t size = fs::file_size(path, ec);
    if (!ec && size > kMaxTraceBytes) {
      return InvalidArgumentError(path.string() + ": trace file is " + std::to_string(size) + " bytes; at most " +
                                  std::to_string(kMaxTraceBytes) + " bytes are read");
    }
  }
  LOCKSTEP_ASSIGN_OR_RETURN(std::unique_ptr<RankTraceStream> stream, RankTraceStream::Open(path));
  return ReadWhole(*stream);
}

Result<RankTrace> ParseTrace(std::string_view data, const std::string& file) {
  return ReadWhole(*RankTraceStream::FromBytes(data, file));
}

Result<std::vector<RankTrace>> ReadTraceDir(const std::filesystem::path& dir, int world_size) {
  if (world_size < 1) return InvalidArgumentError("ReadTraceDir: world size " + std::to_string(world_size) + " < 1");
  LOCKSTEP_ASSIGN_OR_RETURN(std::vector<std::unique_ptr<RankTraceStream>> streams, OpenTraceDir(dir, world_size));
  std::vector<RankTrace> traces;
  traces.reserve(streams.size());
  for (auto& s : streams) {
    LOCKSTEP_ASSIGN_OR_RETURN(RankTrace t, ReadWhole(*s));
    traces.push_back(std::move(t));
  }
  return traces;
}

}  // namespace lockstep
