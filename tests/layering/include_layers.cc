#include "tests/layering/include_layers.h"

#include <algorithm>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>

namespace lockstep {
namespace fs = std::filesystem;
namespace {

bool IsSource(const fs::path& p) {
  static const std::set<std::string> kExtensions = {".h", ".hpp", ".cc", ".cpp", ".cu", ".cuh", ".in"};
  return kExtensions.count(p.extension().string()) > 0;
}

// The position in `order` of the longest folder that contains `file`.
std::optional<std::size_t> LayerOf(const std::vector<std::string>& order, const std::string& file) {
  std::optional<std::size_t> best;
  std::size_t best_length = 0;
  for (std::size_t i = 0; i < order.size(); ++i) {
    const std::string& folder = order[i];
    if (file.size() > folder.size() && file.compare(0, folder.size(), folder) == 0 && file[folder.size()] == '/' &&
        folder.size() > best_length) {
      best = i;
      best_length = folder.size();
    }
  }
  return best;
}

// Cycles among the files, each reported once, as "a -> b -> a".
std::vector<std::string> FindCycles(const std::vector<IncludeEdge>& edges) {
  std::map<std::string, std::vector<std::string>> graph;
  for (const IncludeEdge& e : edges) graph[e.from].push_back(e.to);
  std::map<std::string, int> state;  // 0 unseen, 1 on the stack, 2 done
  std::vector<std::string> stack;
  std::vector<std::string> cycles;
  std::function<void(const std::string&)> visit = [&](const std::string& node) {
    state[node] = 1;
    stack.push_back(node);
    for (const std::string& next : graph[node]) {
      if (state[next] == 1) {
        std::string text;
        for (auto it = std::find(stack.begin(), stack.end(), next); it != stack.end(); ++it) text += *it + " -> ";
        cycles.push_back("include cycle: " + text + next);
      } else if (state[next] == 0) {
        visit(next);
      }
    }
    stack.pop_back();
    state[node] = 2;
  };
  for (const auto& [node, unused] : graph) {
    if (state[node] == 0) visit(node);
  }
  return cycles;
}

}  // namespace

namespace {

// Every line of the sources under `dirs` (sorted, for stable messages) that `include` matches, as
// an edge from the file to the regex's first group. `skip_tests` leaves out *_test.cc files and
// the testing/ and testdata/ folders.
std::vector<IncludeEdge> ScanMatches(const fs::path& root, const std::vector<std::string>& dirs,
                                     const std::regex& include, bool skip_tests) {
  std::vector<IncludeEdge> edges;
  for (const std::string& dir : dirs) {
    if (!fs::is_directory(root / dir)) continue;
    std::vector<fs::path> files;
    for (const auto& entry : fs::recursive_directory_iterator(root / dir)) {
      if (entry.is_regular_file() && IsSource(entry.path())) files.push_back(entry.path());
    }
    std::sort(files.begin(), files.end());
    for (const fs::path& file : files) {
      const std::string from = file.lexically_relative(root).generic_string();
      const bool test = from.size() > 8 && from.compare(from.size() - 8, 8, "_test.cc") == 0;
      if (skip_tests && (test || from.find("/testing/") != std::string::npos ||
                         from.find("/testdata/") != std::string::npos)) {
        continue;
      }
      std::ifstream in(file);
      std::string text;
      int line = 0;
      while (std::getline(in, text)) {
        ++line;
        std::smatch m;
        if (std::regex_search(text, m, include)) edges.push_back({from, line, m[1].str()});
      }
    }
  }
  return edges;
}

}  // namespace

std::vector<IncludeEdge> ScanIncludes(const fs::path& root, const std::vector<std::string>& dirs) {
  static const std::regex kInclude(R"re(^\s*#\s*include\s*"([^"]+)")re");
  return ScanMatches(root, dirs, kInclude, /*skip_tests=*/false);
}

std::vector<std::string> CheckIncludeLayers(const std::vector<std::string>& order,
                                            const std::vector<IncludeEdge>& edges) {
  std::vector<std::string> problems;
  for (const IncludeEdge& e : edges) {
    const std::string where = e.from + ":" + std::to_string(e.line) + ": includes \"" + e.to + "\": ";
    std::optional<std::size_t> from = LayerOf(order, e.from);
    std::optional<std::size_t> to = LayerOf(order, e.to);
    if (!from) {
      problems.push_back(where + "the including file is in no layer");
    } else if (!to) {
      problems.push_back(where + "the included file is in no layer");
    } else if (*to > *from) {
      problems.push_back(where + order[*from] + " is below " + order[*to] + " and may not include it");
    }
  }
  for (std::string& cycle : FindCycles(edges)) problems.push_back(std::move(cycle));
  return problems;
}

std::vector<IncludeEdge> ScanSystemIncludes(const fs::path& root, const std::vector<std::string>& dirs) {
  // Only the parts' own files are held to the rule: tests and their helpers are left out.
  static const std::regex kInclude(R"re(^\s*#\s*include\s*<([^>]+)>)re");
  return ScanMatches(root, dirs, kInclude, /*skip_tests=*/true);
}

std::vector<std::string> CheckSystemHeaders(const std::vector<std::string>& order,
                                            const std::vector<SystemHeaderRule>& rules,
                                            const std::vector<IncludeEdge>& edges,
                                            const std::vector<std::string>& allowed) {
  std::vector<std::string> problems;
  for (const IncludeEdge& e : edges) {
    if (std::find(allowed.begin(), allowed.end(), e.from) != allowed.end()) continue;
    const std::optional<std::size_t> from = LayerOf(order, e.from);
    for (const SystemHeaderRule& rule : rules) {
      if (e.to.compare(0, rule.prefix.size(), rule.prefix) != 0) continue;
      const auto lowest = std::find(order.begin(), order.end(), rule.lowest);
      if (from && lowest != order.end() && *from < static_cast<std::size_t>(lowest - order.begin())) {
        problems.push_back(e.from + ":" + std::to_string(e.line) + ": includes <" + e.to + ">, which belongs to " +
                           rule.lowest + "'s layer or above; " + order[*from] + " is below it");
      }
    }
  }
  return problems;
}

std::vector<std::string> SplitLayerOrder(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> order;
  for (std::string folder; in >> folder;) order.push_back(folder);
  return order;
}

}  // namespace lockstep
