// The run directory (`lockstep run --out DIR`) and what lockstep may delete in it. A directory
// lockstep made carries a marker file; lockstep runs into a directory only when it is new, empty
// or marked (or when told to adopt it), replaces a scenario's folder only when lockstep made that
// folder, and removes the old report.json before the first rank starts, so a run killed halfway
// never leaves the previous run's verdict beside its own partial traces.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "harness/core/status.h"

namespace lockstep {

inline constexpr const char* kRunMarkerFile = ".lockstep-run";
inline constexpr const char* kScenarioMarkerFile = ".lockstep-scenario";
inline constexpr const char* kReportFile = "report.json";

// Checks, then prepares, DIR for a run of the scenarios `ids`; nothing is written unless every
// check passes. Refused (InvalidArgument): DIR is not a directory; DIR exists, is not empty and
// is not a run directory (no marker and no lockstep report.json) unless `adopt_existing`;
// another live lockstep process holds DIR's lock (LockRunDirectory);
// DIR/<id> exists and lockstep did not make it. Then DIR gets its marker and loses report.json.
Status PrepareRunDirectory(const std::filesystem::path& dir, const std::vector<std::string>& ids,
                           bool adopt_existing);

// A report written on request (--junit, --html, ...) may not land on the run's own files:
// DIR/report.json, the marker, or anything inside a scenario's folder. Nor may it be a directory.
// `flag` names the option in the message.
Status CheckReportOutput(const std::filesystem::path& run_dir, const std::vector<std::string>& ids,
                         const std::string& flag, const std::filesystem::path& output);

// Empties a scenario's folder for a new launch: removes it only when lockstep made it (its marker,
// naming the folder's id), then creates it with its marker. A folder's entries prove nothing.
Status ResetScenarioDirectory(const std::filesystem::path& dir);

// Whether lockstep made this scenario folder: it holds a regular-file marker whose first line is
// "lockstep.scenario/1 id=<the folder's name>" (or the exact text of the markers before ids).
bool IsScenarioDirectory(const std::filesystem::path& dir);

// Locks the run directory DIR for the rest of this process's life (flock on the directory, held
// by no child, released however the process ends). A second lockstep process locking DIR while
// the first lives gets InvalidArgument (exit 2) naming the holder. Idempotent within a process.
// PrepareRunDirectory takes it first.
Status LockRunDirectory(const std::filesystem::path& dir);

}  // namespace lockstep
