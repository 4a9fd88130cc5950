// yaml-cpp's parser messages in lockstep's own words where yaml-cpp's wording differs between its
// releases: a user's CI log (and lockstep's expected-output corpus) must read the same whichever
// yaml-cpp the distribution ships. yaml-cpp 0.8 appends the anchor's name to "the referenced
// anchor is not defined" (0.7 does not); lockstep names it itself, from the file's text.
#pragma once

#include <string>

#include "harness/scenario/internal/source_text.h"

namespace lockstep::internal {

// The message for a YAML::ParserException of yaml-cpp's words `message` raised at the 0-based
// mark (line0, byte_column0) of `text`, without the "invalid YAML: " prefix.
std::string YamlErrorMessage(const std::string& message, const SourceText& text, int line0, int byte_column0);

}  // namespace lockstep::internal
