#include "harness/core/untrusted_input.h"

#include <fstream>
#include <system_error>

namespace lockstep {

Result<std::string> ReadBoundedFile(const std::filesystem::path& path, std::uintmax_t max_bytes,
                                    const std::string& what) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (!fs::exists(status)) return NotFoundError(path.string() + ": no such " + what + " file");
  if (fs::is_directory(status)) return InvalidArgumentError(path.string() + ": is a directory, not a " + what + " file");
  if (!fs::is_regular_file(status)) return InvalidArgumentError(path.string() + ": is not a regular file");
  const std::uintmax_t size = fs::file_size(path, ec);
  auto too_large = [&](const std::string& size_text) {
    return InvalidArgumentError(path.string() + ": " + what + " file is " + size_text + "; at most " +
                                std::to_string(max_bytes) + " bytes are read");
  };
  if (!ec && size > max_bytes) return too_large(std::to_string(size) + " bytes");
  std::ifstream in(path, std::ios::binary);
  if (!in) return IoError(path.string() + ": cannot open the " + what + " file");
  // Read in chunks up to one byte past the limit: the file may have grown since the size check.
  std::string bytes;
  bytes.reserve(static_cast<std::size_t>(std::min<std::uintmax_t>(ec ? 0 : size, max_bytes)));
  char chunk[1 << 16];
  while (in) {
    in.read(chunk, sizeof chunk);
    bytes.append(chunk, static_cast<std::size_t>(in.gcount()));
    if (bytes.size() > max_bytes) return too_large("larger than that");
  }
  if (in.bad()) return IoError(path.string() + ": cannot read the " + what + " file");
  return bytes;
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
