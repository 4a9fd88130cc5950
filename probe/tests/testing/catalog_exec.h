// Runs one program of a catalog directory (examples/, examples/real_bugs/: plain PyTorch programs,
// each with its `.expect.json` sidecar, probe/catalog_expectation.h) the way a user checks their
// own program: `lockstep exec --ranks N --out DIR -- python3 PROGRAM`, the findings read back from
// DIR/report.json. Shared by example_catalog_exec_test and real_bug_corpus_test, so both catalogs
// are held to their sidecars the same way. Needs LOCKSTEP_PROBE_PYTHON and LOCKSTEP_SOURCE_DIR.
#pragma once

#include <filesystem>
#include <string>

namespace lockstep::probe {

// Runs `<catalog>/<name>.py` as its sidecar says, every repeat, with gtest assertions: exec's exit
// code (0 clean, 1 a finding), the report's findings against the sidecar's, the tensors compared.
// Once, or the sidecar's repeats in the soak tier (LOCKSTEP_SOAK=1). `launcher` and `repeats`,
// when given, replace those (the same program and expectation under another launcher). `suite` names the output folder under the build directory.
void ExecCatalogEntry(const std::filesystem::path& catalog, const std::string& suite, const std::string& name,
                      const std::string& launcher = "", int repeats = 0);

}  // namespace lockstep::probe
