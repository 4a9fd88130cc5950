// A scenario written back as a scenario file: how the runner hands each launch the scenario it
// resolved (the command line's overrides applied, the reference variant made), so that a rank
// loads exactly what the runner decided and applies nothing itself. Every key is written, so the
// file means the same wherever it lies; its first key, `resolved_from` (the user's file), makes
// the loader read it as resolved (LoadOptions::resolved: no defaults files around it apply),
// whoever loads it, so `lockstep run DIR/<id>/scenario.yaml` runs that launch again. Loading
// what this writes gives back an equal scenario (scenario_writer_test pins it for every key path
// of the loader).
#pragma once

#include <filesystem>
#include <string>

#include "harness/core/status.h"
#include "harness/scenario/scenario.h"

namespace lockstep {

// The scenario as YAML, every key set; `comment` (one line each) opens the text as # lines.
std::string ScenarioYaml(const Scenario& scenario, const std::string& comment = "");

// Writes ScenarioYaml to `file` (replacing it); IoError naming the file when it cannot.
Status WriteScenarioFile(const Scenario& scenario, const std::filesystem::path& file, const std::string& comment = "");

}  // namespace lockstep
