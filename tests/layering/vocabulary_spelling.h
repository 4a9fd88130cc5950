// One table per vocabulary (docs/ARCHITECTURE.md "Layers"): a vocabulary's names are spelled in
// its table and read from there, never written again as string literals elsewhere. This scans
// the sources for such literals, so a name spelled outside its table fails a test.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace lockstep {

// A vocabulary: what it is called in messages, its names, and the files that may spell them (its
// table). Several vocabularies may share a word ("hang": a checker, an injection kind, a launch
// ending); a literal is fine in the home of any vocabulary that has the word.
struct Vocabulary {
  std::string what;                // "checker name"
  std::vector<std::string> words;  // "replica_weights", ...
  std::vector<std::string> homes;  // files (relative to the root) that may spell them
};

// One string literal of a C++ source that is exactly some word: `"hang"`.
struct SpelledWord {
  std::string file;  // relative to the root
  int line = 0;
  std::string word;
};

// Every string literal that is exactly one of `words` in the C++ sources (.h, .cc) under `dirs`,
// tests and test data left out (*_test.cc, testing/, testdata/): those spell names on purpose, to
// check them.
std::vector<SpelledWord> ScanStringLiterals(const std::filesystem::path& root, const std::vector<std::string>& dirs,
                                            const std::vector<std::string>& words);

// The same for one file's text, as if it were `file`.
std::vector<SpelledWord> ScanText(const std::string& file, const std::string& text,
                                  const std::vector<std::string>& words);

// "file:line: spells the checker name "hang" outside its table (...)" for every literal in no
// home of a vocabulary that has its word.
std::vector<std::string> CheckSpelling(const std::vector<Vocabulary>& vocabularies,
                                       const std::vector<SpelledWord>& spelled);

}  // namespace lockstep
