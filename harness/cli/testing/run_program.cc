#include "harness/cli/testing/run_program.h"
#include "harness/core/testing/build_paths.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace lockstep::testing {
namespace {

std::string ReadAll(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

}  // namespace

std::filesystem::path FreshOutDir(const std::string& suite, const std::string& name) {
  const std::filesystem::path dir = std::filesystem::path(LOCKSTEP_BINARY_DIR) / suite / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir.parent_path());
  return dir;
}

ProgramResult RunProgram(const std::filesystem::path& program, const std::vector<std::string>& args,
                         const std::filesystem::path& cwd) {
  ProgramResult result;
  // Files rather than pipes: no risk of a full pipe blocking the child while we wait.
  std::string dir_template = (std::filesystem::temp_directory_path() / "lockstep_run_XXXXXX").string();
  if (mkdtemp(dir_template.data()) == nullptr) return result;
  const std::filesystem::path dir = dir_template;
  const std::string out_path = (dir / "out").string(), err_path = (dir / "err").string();

  std::vector<std::string> argv_storage = {program.string()};
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_storage) argv.push_back(a.data());
  argv.push_back(nullptr);

  const pid_t pid = fork();
  if (pid == 0) {
    const int out_fd = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int err_fd = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (out_fd < 0 || err_fd < 0 || dup2(out_fd, 1) < 0 || dup2(err_fd, 2) < 0 || chdir(cwd.c_str()) != 0) _exit(126);
    execv(argv[0], argv.data());
    _exit(127);
  }
  if (pid > 0) {
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    result.out = ReadAll(out_path);
    result.err = ReadAll(err_path);
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return result;
}

std::filesystem::path LockstepBinary() { return std::filesystem::path(LOCKSTEP_BINARY_DIR) / "bin" / "lockstep"; }

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

}  // namespace lockstep::testing
