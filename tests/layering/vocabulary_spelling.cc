#include "tests/layering/vocabulary_spelling.h"

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

namespace lockstep {
namespace {

bool EndsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

bool IsTestSource(const std::string& file) {
  return EndsWith(file, "_test.cc") || file.find("/testing/") != std::string::npos ||
         file.find("/testdata/") != std::string::npos;
}

}  // namespace

std::vector<SpelledWord> ScanText(const std::string& file, const std::string& text,
                                  const std::vector<std::string>& words) {
  const std::set<std::string> wanted(words.begin(), words.end());
  std::vector<SpelledWord> out;
  int line = 1;
  bool in_line_comment = false, in_block_comment = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') {
      ++line;
      in_line_comment = false;
      continue;
    }
    if (in_line_comment) continue;
    if (in_block_comment) {
      if (c == '*' && i + 1 < text.size() && text[i + 1] == '/') in_block_comment = false;
      continue;
    }
    if (c == '/' && i + 1 < text.size() && text[i + 1] == '/') {
      in_line_comment = true;
      continue;
    }
    if (c == '/' && i + 1 < text.size() && text[i + 1] == '*') {
      in_block_comment = true;
      continue;
    }
    if (c == '\'') {  // a character literal, '"' among them
      for (++i; i < text.size() && text[i] != '\''; ++i) {
        if (text[i] == '\\') ++i;
      }
      continue;
    }
    if (c != '"') continue;
    // A string literal up to its closing quote (raw strings are read as plain ones: the names
    // this looks for never hold a quote or a backslash).
    std::string literal;
    for (++i; i < text.size() && text[i] != '"' && text[i] != '\n'; ++i) {
      if (text[i] == '\\' && i + 1 < text.size()) literal += text[i++];
      literal += text[i];
    }
    if (wanted.count(literal)) out.push_back({file, line, literal});
  }
  return out;
}

std::vector<SpelledWord> ScanStringLiterals(const std::filesystem::path& root, const std::vector<std::string>& dirs,
                                            const std::vector<std::string>& words) {
  namespace fs = std::filesystem;
  std::vector<SpelledWord> out;
  for (const std::string& dir : dirs) {
    std::error_code ec;
    for (fs::recursive_directory_iterator it(root / dir, ec), end; it != end; it.increment(ec)) {
      if (ec) break;
      const fs::path& p = it->path();
      if (!it->is_regular_file() || (p.extension() != ".cc" && p.extension() != ".h")) continue;
      const std::string file = p.lexically_relative(root).generic_string();
      if (IsTestSource(file)) continue;
      std::ifstream in(p, std::ios::binary);
      std::stringstream text;
      text << in.rdbuf();
      std::vector<SpelledWord> found = ScanText(file, text.str(), words);
      out.insert(out.end(), found.begin(), found.end());
    }
  }
  std::sort(out.begin(), out.end(), [](const SpelledWord& a, const SpelledWord& b) {
    return a.file != b.file ? a.file < b.file : a.line < b.line;
  });
  return out;
}

std::vector<std::string> CheckSpelling(const std::vector<Vocabulary>& vocabularies,
                                       const std::vector<SpelledWord>& spelled) {
  std::vector<std::string> problems;
  for (const SpelledWord& s : spelled) {
    bool at_home = false;
    std::string whose, where;
    for (const Vocabulary& v : vocabularies) {
      if (std::find(v.words.begin(), v.words.end(), s.word) == v.words.end()) continue;
      if (std::find(v.homes.begin(), v.homes.end(), s.file) != v.homes.end()) at_home = true;
      whose += (whose.empty() ? "" : " / ") + v.what;
      for (const std::string& h : v.homes) where += (where.empty() ? "" : ", ") + h;
    }
    if (!at_home) {
      problems.push_back(s.file + ":" + std::to_string(s.line) + ": spells the " + whose + " \"" + s.word +
                         "\" outside its table (" + where + "): take it from there");
    }
  }
  return problems;
}

}  // namespace lockstep
