#include "harness/scenario/scenario_loader.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <system_error>
#include <tuple>
#include <utility>

#include "harness/core/untrusted_input.h"
#include "harness/scenario/internal/scenario_builder.h"
#include "harness/scenario/internal/source_text.h"
#include "harness/scenario/internal/yaml_documents.h"
#include "harness/scenario/internal/yaml_error_message.h"
#include "harness/scenario/internal/yaml_reader.h"

namespace lockstep {
namespace {

namespace fs = std::filesystem;
using internal::LayerKind;
using internal::ScenarioBuilder;
using internal::SourceText;
using internal::TextPosition;
using internal::YamlReader;

SourceLocation At(const std::string& file, int line = 0, int column = 0) { return SourceLocation{file, line, column}; }

bool IsScenarioFileName(const fs::path& p) {
  const std::string ext = p.extension().string();
  return (ext == ".yaml" || ext == ".yml") && p.filename() != kDefaultsFileName;
}

// Paths in diagnostics: as given, cleaned ("./a//b.yaml" -> "a/b.yaml").
std::string DisplayPath(const fs::path& p) {
  std::string s = p.lexically_normal().generic_string();
  return s.empty() ? p.generic_string() : s;
}

// Paths the user did not type (defaults files found by walking up): relative to the working
// directory when under it, absolute otherwise.
std::string DisplayFoundPath(const fs::path& absolute) {
  std::error_code ec;
  fs::path cwd = fs::current_path(ec);
  if (!ec) {
    fs::path rel = absolute.lexically_relative(cwd);
    if (!rel.empty() && *rel.begin() != "..") return rel.generic_string();
  }
  return absolute.generic_string();
}

fs::path Absolute(const fs::path& p) {
  std::error_code ec;
  fs::path abs = fs::absolute(p, ec);
  return (ec ? p : abs).lexically_normal();
}

// A file read, checked and parsed into one YAML mapping.
struct ParsedFile {
  std::string display;
  std::shared_ptr<SourceText> text;
  YAML::Node root;
};

// A file's read problem as the diagnostic a scenario file gets, or nullopt when it was read.
std::optional<Diagnostic> ReadProblem(const BoundedRead& read, const std::string& display) {
  using Problem = BoundedRead::Problem;
  const std::string limit = "a scenario file may be at most 1 MiB (" + std::to_string(kMaxScenarioFileBytes) + " bytes)";
  switch (read.problem) {
    case Problem::kNone: return std::nullopt;
    case Problem::kMissing: return Diagnostic{At(display), "no such file or directory"};
    case Problem::kCannotAccess: return Diagnostic{At(display), "cannot access: " + read.detail};
    case Problem::kFolder: return Diagnostic{At(display), "is a folder, not a scenario file"};
    case Problem::kNotRegular: return Diagnostic{At(display), "is not a regular file"};
    case Problem::kTooLarge:
      return Diagnostic{At(display, 1, 1), read.size ? "file is " + std::to_string(*read.size) + " bytes; " + limit
                                                     : "file is larger than 1 MiB; " + limit};
    case Problem::kCannotOpen: return Diagnostic{At(display), "cannot open: " + read.detail};
    case Problem::kCannotRead: return Diagnostic{At(display), "cannot read the file"};
  }
  return Diagnostic{At(display), "cannot read the file"};
}

std::optional<ParsedFile> ReadAndParse(const fs::path& path, const std::string& display, std::vector<Diagnostic>& out) {
  // A scenario is a few dozen lines, and yaml-cpp's memory and time grow with the input.
  BoundedRead read = ReadBounded(path, kMaxScenarioFileBytes);
  if (std::optional<Diagnostic> problem = ReadProblem(read, display)) {
    out.push_back(std::move(*problem));
    return std::nullopt;
  }
  std::string bytes = std::move(read.bytes);

  auto text = std::make_shared<SourceText>(std::move(bytes));
  // Checked before parsing: yaml-cpp passes invalid bytes through into strings.
  if (auto problem = text->FindEncodingProblem()) {
    TextPosition pos = text->PositionOfOffset(problem->offset);
    out.push_back({At(display, pos.line, pos.column), problem->message});
    return std::nullopt;
  }
  YAML::Node root;
  internal::YamlDocuments documents;
  try {
    documents = internal::ScanDocuments(text->bytes());
    if (!documents.stuck_at && documents.count == 1) root = YAML::Load(text->bytes());
  } catch (const YAML::ParserException& e) {
    TextPosition pos = text->PositionOfMark(e.mark.line, e.mark.column);
    std::string message = "invalid YAML: " + internal::YamlErrorMessage(e.msg, *text, e.mark.line, e.mark.column);
    if (text->LineIndentedWithTab(e.mark.line)) message += " (this line is indented with a tab; YAML needs spaces)";
    out.push_back({At(display, pos.line, pos.column), message});
    return std::nullopt;
  } catch (const YAML::Exception& e) {
    out.push_back({At(display, 1, 1), "invalid YAML: " + e.msg});
    return std::nullopt;
  }
  YamlReader reader(text.get(), display, &out);
  if (documents.stuck_at) {
    const std::size_t offset = static_cast<std::size_t>(documents.stuck_at->pos) + (text->has_bom() ? 3 : 0);
    const std::string what = offset < text->bytes().size() ? internal::Quote(text->bytes().substr(offset, 1)) : "end of file";
    out.push_back({reader.Locate(*documents.stuck_at), "invalid YAML: unexpected " + what});
    return std::nullopt;
  }
  if (documents.count == 0 || (documents.count == 1 && root.IsNull())) {
    out.push_back({At(display, 1, 1), "empty scenario file"});
    return std::nullopt;
  }
  if (documents.count > 1) {
    out.push_back({reader.Locate(*documents.second), "a scenario file holds one YAML document; a second one starts here"});
    return std::nullopt;
  }
  if (!root.IsMap()) {
    out.push_back({reader.Locate(root.Mark()),
                   "the top level must be a mapping of scenario keys, got " + internal::Describe(root)});
    return std::nullopt;
  }
  return ParsedFile{display, std::move(text), root};
}

// Diagnostics of one file in file order; those that point into another file (a defaults file,
// for a rule that involves its values) after them.
void SortInFileOrder(std::vector<Diagnostic>& diagnostics, const std::string& file) {
  std::stable_sort(diagnostics.begin(), diagnostics.end(), [&](const Diagnostic& a, const Diagnostic& b) {
    auto key = [&](const Diagnostic& d) {
      return std::make_tuple(d.location.file != file, d.location.file, d.location.line, d.location.column);
    };
    return key(a) < key(b);
  });
}

// The defaults files that apply to `file`, outermost first.
std::vector<fs::path> DefaultsChain(const fs::path& file) {
  std::vector<fs::path> chain;
  fs::path dir = Absolute(file).parent_path();
  std::error_code ec;
  while (!dir.empty()) {
    fs::path candidate = dir / kDefaultsFileName;
    if (fs::is_regular_file(candidate, ec)) chain.push_back(candidate);
    if (dir.filename() == "scenarios" || fs::exists(dir / ".git", ec) || dir == dir.root_path()) break;
    dir = dir.parent_path();
  }
  std::reverse(chain.begin(), chain.end());
  return chain;
}

class Loader {
 public:
  explicit Loader(LoadOptions options) : options_(std::move(options)) {}

  const std::vector<Diagnostic>& diagnostics() const { return diagnostics_; }

  void Report(Diagnostic d) { Emit({std::move(d)}); }

  // A scenario, or nullopt after reporting why not. `name_at`: where `name` was set, if it was.
  std::optional<Scenario> Load(const fs::path& file, std::optional<SourceLocation>* name_at) {
    const std::string display = DisplayPath(file);
    std::vector<Diagnostic> local;
    if (file.filename() == kDefaultsFileName) {
      Emit({{At(display), "holds defaults for the scenarios around it; it is not a scenario"}});
      return std::nullopt;
    }
    std::optional<ParsedFile> parsed = ReadAndParse(file, display, local);
    if (!parsed) {
      Emit(std::move(local));
      return std::nullopt;
    }
    // A resolved file says so itself, so that it loads the same wherever it is read.
    LoadOptions options = options_;
    const YAML::Node& root = parsed->root;  // const: looking a key up must not add it
    options.resolved = options.resolved || (root.IsMap() && root[std::string(kResolvedFromKey)]);
    ScenarioBuilder builder(options);
    bool defaults_ok = true;
    for (const fs::path& defaults_path : options.resolved ? std::vector<fs::path>{} : DefaultsChain(file)) {
      const DefaultsFile* defaults = Defaults(defaults_path);
      if (defaults == nullptr) continue;
      if (!defaults->ok) {
        defaults_ok = false;
        continue;
      }
      // Already validated (and reported) once: apply it quietly.
      YamlReader quiet(defaults->parsed.text.get(), defaults->parsed.display, nullptr);
      builder.Apply(defaults->parsed.root, LayerKind::kDefaults, quiet);
    }
    YamlReader reader(parsed->text.get(), display, &local);
    builder.Apply(parsed->root, LayerKind::kScenario, reader);
    // With a broken defaults file the values are incomplete, and rules across keys would only
    // report its consequences.
    std::optional<Scenario> scenario;
    if (defaults_ok) scenario = builder.Finish(display, DefaultScenarioName(file), reader);
    SortInFileOrder(local, display);
    const bool ok = local.empty() && defaults_ok;
    Emit(std::move(local));
    if (!ok) return std::nullopt;
    if (name_at) *name_at = builder.NameLocation();
    return scenario;
  }

  // A defaults file named on the command line: checked on its own.
  void ValidateDefaults(const fs::path& file) {
    std::error_code ec;
    if (!fs::is_regular_file(file, ec)) {
      Emit({{At(DisplayPath(file)), "no such file or directory"}});
      return;
    }
    Defaults(Absolute(file), DisplayPath(file));
  }

 private:
  struct DefaultsFile {
    bool ok = false;
    ParsedFile parsed;
  };

  // Parsed and validated on first use, its diagnostics reported once however many scenarios it
  // applies to; nullptr when it cannot be read at all.
  const DefaultsFile* Defaults(const fs::path& absolute, const std::string& display_override = "") {
    const std::string key = absolute.generic_string();
    auto it = defaults_.find(key);
    if (it != defaults_.end()) return &it->second;
    const std::string display = display_override.empty() ? DisplayFoundPath(absolute) : display_override;
    std::vector<Diagnostic> local;
    DefaultsFile entry;
    if (std::optional<ParsedFile> parsed = ReadAndParse(absolute, display, local)) {
      YamlReader reader(parsed->text.get(), display, &local);
      ScenarioBuilder validator(options_);
      validator.Apply(parsed->root, LayerKind::kDefaults, reader);
      entry.parsed = std::move(*parsed);
    }
    SortInFileOrder(local, display);
    entry.ok = local.empty();
    Emit(std::move(local));
    return &defaults_.emplace(key, std::move(entry)).first->second;
  }

  // Appends, dropping exact repeats (a rule that fails on a defaults file's value fails the same
  // way for every scenario under it).
  void Emit(std::vector<Diagnostic> diagnostics) {
    for (Diagnostic& d : diagnostics) {
      std::string line = d.ToString();
      if (emitted_.insert(line).second) diagnostics_.push_back(std::move(d));
    }
  }

  LoadOptions options_;
  std::map<std::string, DefaultsFile> defaults_;
  std::vector<Diagnostic> diagnostics_;
  std::set<std::string> emitted_;
};

std::string ErrorCountMessage(std::size_t n) {
  return std::to_string(n) + (n == 1 ? " error" : " errors") + " in scenario files";
}

void CopyOut(const std::vector<Diagnostic>& from, std::vector<Diagnostic>* to) {
  if (to) to->insert(to->end(), from.begin(), from.end());
}

// *.yaml and *.yml under `dir`, sorted; hidden entries and defaults files skipped.
std::vector<fs::path> FindScenarioFiles(const fs::path& dir, Loader& loader) {
  std::vector<fs::path> files;
  std::error_code ec;
  fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    const fs::path& p = it->path();
    if (p.filename().string().rfind('.', 0) == 0) {
      if (it->is_directory(ec)) it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file(ec) && IsScenarioFileName(p)) files.push_back(p);
  }
  if (ec) loader.Report({At(DisplayPath(dir)), "cannot list the folder: " + ec.message()});
  std::sort(files.begin(), files.end(),
            [](const fs::path& a, const fs::path& b) { return a.generic_string() < b.generic_string(); });
  return files;
}

}  // namespace

std::string DefaultScenarioName(const fs::path& file) {
  const fs::path abs = Absolute(file);
  std::vector<fs::path> parts(abs.begin(), abs.end());
  for (std::size_t i = parts.size(); i-- > 1;) {
    if (parts[i - 1] != "scenarios") continue;
    fs::path rel;
    for (std::size_t j = i; j < parts.size(); ++j) rel /= parts[j];
    return rel.replace_extension().generic_string();
  }
  return file.stem().string();
}

Result<Scenario> LoadScenarioFile(const fs::path& file, const LoadOptions& options,
                                  std::vector<Diagnostic>* diagnostics) {
  Loader loader(options);
  std::optional<Scenario> scenario = loader.Load(file, nullptr);
  CopyOut(loader.diagnostics(), diagnostics);
  if (!scenario) {
    const std::size_t n = std::max<std::size_t>(1, loader.diagnostics().size());
    return InvalidArgumentError(DisplayPath(file) + ": " + std::to_string(n) + (n == 1 ? " error" : " errors"));
  }
  return std::move(*scenario);
}

Result<std::vector<Scenario>> LoadScenarios(const std::vector<std::string>& paths, const LoadOptions& options,
                                            std::vector<Diagnostic>* diagnostics) {
  Loader loader(options);
  // Files to load, and problems with the paths themselves, in the order of the arguments.
  struct Item {
    fs::path file;
    std::optional<Diagnostic> problem;
  };
  std::vector<Item> items;
  std::set<std::string> seen;
  auto add = [&](const fs::path& p) {
    std::error_code ec;
    fs::path canonical = fs::weakly_canonical(p, ec);
    if (seen.insert((ec ? Absolute(p) : canonical).generic_string()).second) items.push_back({p, std::nullopt});
  };
  bool failed = false;
  for (const std::string& arg : paths) {
    const fs::path p(arg);
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      std::vector<fs::path> found = FindScenarioFiles(p, loader);
      if (found.empty()) items.push_back({p, Diagnostic{At(DisplayPath(p)), "no scenario files (*.yaml, *.yml) in this folder"}});
      for (const fs::path& f : found) add(f);
    } else {
      add(p);
    }
  }

  std::vector<Scenario> scenarios;
  std::map<std::string, std::string> id_owner;  // id -> display path of the file that has it
  std::vector<SourceLocation> name_locations;    // per scenario: where its id was set
  for (const Item& item : items) {
    const fs::path& file = item.file;
    if (item.problem) {
      loader.Report(*item.problem);
      failed = true;
      continue;
    }
    if (file.filename() == kDefaultsFileName) {
      loader.ValidateDefaults(file);
      continue;
    }
    std::optional<SourceLocation> name_at;
    std::optional<Scenario> scenario = loader.Load(file, &name_at);
    if (!scenario) {
      failed = true;
      continue;
    }
    auto [owner, inserted] = id_owner.emplace(scenario->name, scenario->location.file);
    if (!inserted) {
      loader.Report({name_at.value_or(scenario->location),
                     "name: duplicate scenario id " + internal::Quote(scenario->name) + "; " + owner->second +
                         " has it too"});
      failed = true;
      continue;
    }
    name_locations.push_back(name_at.value_or(scenario->location));
    scenarios.push_back(std::move(*scenario));
  }
  // Each id is a folder of the run directory: "a/reference" lies inside "a" (and inside its
  // reference run's folder), so one run cannot hold both.
  for (std::size_t i = 0; i < scenarios.size(); ++i) {
    const std::string& id = scenarios[i].name;
    for (std::size_t slash = id.find('/'); slash != std::string::npos; slash = id.find('/', slash + 1)) {
      auto owner = id_owner.find(id.substr(0, slash));
      if (owner == id_owner.end()) continue;
      loader.Report({name_locations[i], "name: scenario id " + internal::Quote(id) + " would lie inside the folder of " +
                                            internal::Quote(owner->first) + " (" + owner->second +
                                            "); ids in one run may not nest"});
      failed = true;
      break;
    }
  }
  CopyOut(loader.diagnostics(), diagnostics);
  if (failed || !loader.diagnostics().empty()) {
    return InvalidArgumentError(ErrorCountMessage(std::max<std::size_t>(1, loader.diagnostics().size())));
  }
  return scenarios;
}

}  // namespace lockstep
