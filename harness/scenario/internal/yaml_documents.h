// Walks the documents of a YAML text without building nodes, guarding against a yaml-cpp 0.7
// bug: YAML::LoadAll loops forever on some invalid inputs (a document that starts with ','),
// because the parser then reports an empty document without consuming anything.
#pragma once

#include <yaml-cpp/yaml.h>

#include <optional>
#include <string>

namespace lockstep::internal {

struct YamlDocuments {
  int count = 0;                          // documents, empty ones included
  std::optional<YAML::Mark> second;       // where the second document's content (or the document) starts
  std::optional<YAML::Mark> stuck_at;     // where the parser stopped making progress
};

// Throws YAML::ParserException for invalid YAML, as yaml-cpp's loaders do. Stops at the second
// document, or where the parser is stuck.
YamlDocuments ScanDocuments(const std::string& text);

}  // namespace lockstep::internal
