#include "harness/core/untrusted_input.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <system_error>

namespace lockstep {

BoundedRead ReadBounded(const std::filesystem::path& path, std::uintmax_t max_bytes) {
  namespace fs = std::filesystem;
  using Problem = BoundedRead::Problem;
  BoundedRead read;
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (!fs::exists(status)) {
    read.problem = ec && ec != std::errc::no_such_file_or_directory ? Problem::kCannotAccess : Problem::kMissing;
    read.detail = ec.message();
    return read;
  }
  if (fs::is_directory(status)) read.problem = Problem::kFolder;
  else if (!fs::is_regular_file(status)) read.problem = Problem::kNotRegular;
  if (read.problem != Problem::kNone) return read;
  // Refused before reading when the size says so: what reads it grows with the input.
  const std::uintmax_t size = fs::file_size(path, ec);
  if (!ec && size > max_bytes) {
    read.problem = Problem::kTooLarge;
    read.size = size;
    return read;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    read.problem = Problem::kCannotOpen;
    read.detail = std::strerror(errno);
    return read;
  }
  // Read in chunks up to one byte past the limit: the file may have grown since the size check.
  read.bytes.reserve(static_cast<std::size_t>(std::min<std::uintmax_t>(ec ? 0 : size, max_bytes)));
  char chunk[1 << 16];
  while (in) {
    in.read(chunk, sizeof chunk);
    read.bytes.append(chunk, static_cast<std::size_t>(in.gcount()));
    if (read.bytes.size() > max_bytes) {
      read.problem = Problem::kTooLarge;
      read.bytes.clear();
      return read;
    }
  }
  if (in.bad()) read.problem = Problem::kCannotRead;
  return read;
}

Result<std::string> ReadBoundedFile(const std::filesystem::path& path, std::uintmax_t max_bytes,
                                    const std::string& what) {
  using Problem = BoundedRead::Problem;
  BoundedRead read = ReadBounded(path, max_bytes);
  const std::string file = path.string() + ": ";
  switch (read.problem) {
    case Problem::kNone: return std::move(read.bytes);
    case Problem::kMissing:
    case Problem::kCannotAccess: return NotFoundError(file + "no such " + what + " file");
    case Problem::kFolder: return InvalidArgumentError(file + "is a directory, not a " + what + " file");
    case Problem::kNotRegular: return InvalidArgumentError(file + "is not a regular file");
    case Problem::kTooLarge:
      return InvalidArgumentError(file + what + " file is " +
                                  (read.size ? std::to_string(*read.size) + " bytes" : "larger than that") +
                                  "; at most " + std::to_string(max_bytes) + " bytes are read");
    case Problem::kCannotOpen: return IoError(file + "cannot open the " + what + " file");
    case Problem::kCannotRead: return IoError(file + "cannot read the " + what + " file");
  }
  return IoError(file + "cannot read the " + what + " file");
}

std::string TextPositionOf(std::string_view text, std::size_t offset) {
  std::size_t line = 1, column = 1;
  for (std::size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

std::optional<std::string> FindJsonTooDeep(std::string_view text, int max_depth) {
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // the escaped character, whatever it is
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    switch (c) {
      case '"': in_string = true; break;
      case '[':
      case '{':
        if (++depth > max_depth) {
          return TextPositionOf(text, i) + ": nested deeper than " + std::to_string(max_depth) + " levels";
        }
        break;
      case ']':
      case '}':
        if (depth > 0) --depth;  // unbalanced input is the parser's to report
        break;
      default: break;
    }
  }
  return std::nullopt;
}

std::string CutLongText(std::string_view text, std::size_t keep) {
  if (text.size() <= 2 * keep + 64) return std::string(text);
  const std::size_t cut = text.size() - 2 * keep;
  return std::string(text.substr(0, keep)) + " ... [" + std::to_string(cut) + " bytes cut] ... " +
         std::string(text.substr(text.size() - keep));
}

}  // namespace lockstep
