// `lockstep trace dump FILE...`: prints traces as JSON lines for people and scripts, one record
// per line in lockstep.trace/1's shape whatever version the file has (harness/trace/
// trace_record_json.h): a step lists its tensors by name with their digests in hex. It reads
// through the one trace reader, so it accepts exactly what the checkers accept.
#include <nlohmann/json.hpp>

#include "harness/cli/command.h"
#include "harness/trace/trace_record_json.h"
#include "harness/trace/trace_stream.h"

namespace lockstep {
namespace {

struct TraceFlags {
  std::vector<std::string> files;
};

}  // namespace

Command AddTraceCommand(CLI::App& app, const CommandEnvironment& env) {
  CLI::App* cmd = app.add_subcommand(
      "trace", "Work with trace files (rank-<r>.trace, docs/TRACE.md).");
  cmd->require_subcommand(1);
  auto flags = std::make_shared<TraceFlags>();
  CLI::App* dump = cmd->add_subcommand(
      "dump",
      "Print each record of the traces as one JSON line, a step with its tensors listed by name (the shape of "
      "lockstep.trace/1, whatever version the file has). With several files every line gets a \"file\" field. "
      "A trace cut inside its last record (a rank that died) is printed up to that record, with a note on "
      "stderr. Exit 0, or 2 when a file is missing or not a trace (nothing more is printed from it).");
  dump->add_option("files", flags->files, "Trace files")->required()->type_name("FILE");

  return {cmd, [flags, &env]() -> CommandResult {
            std::ostream& out = *env.out;
            std::ostream& err = *env.err;
            const bool name_files = flags->files.size() > 1;
            for (const std::string& file : flags->files) {
              Result<std::unique_ptr<RankTraceStream>> stream = RankTraceStream::Open(file);
              if (stream.ok() && (*stream)->trace().missing) stream = NotFoundError(file + ": no such trace file");
              if (!stream.ok()) return InvalidArgumentError(stream.status().message());
              for (;;) {
                Result<std::optional<TraceRecord>> record = (*stream)->NextRecord();
                if (!record.ok()) {
                  out.flush();
                  return InvalidArgumentError(record.status().message());
                }
                if (!*record) break;
                std::string line = TraceRecordToJson(**record);
                if (name_files) {
                  // {"file":"...", then the record's own fields.
                  nlohmann::json name = file;
                  line = "{\"file\":" + name.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "," +
                         line.substr(1);
                }
                out << line << "\n";
              }
              if ((*stream)->trace().truncated) err << "lockstep trace dump: " << (*stream)->trace().truncation_note << "\n";
            }
            out.flush();
            return CommandVerdict::kPassed;
          }};
}

}  // namespace lockstep
