// An append-only file whose appends are a memcpy: what a trace's writer stores a record with, on
// the training step's thread, without a system call or a page fault (issue 47).
//
// The file is mapped MAP_SHARED over a large virtual range once (beyond its end, which is legal
// and costs no memory), and a helper thread keeps a window ahead of the appended bytes ready:
// its blocks reserved (fallocate: a full disk is an error of Append, never a SIGBUS at a store
// later) and its pages mapped writable (MADV_POPULATE_WRITE: the minor fault a first store to a
// shared file page takes, about 1.7 us a page on the development VM, happens there). An append
// stores its bytes, its last byte after the rest (a reader takes a record only once its newline
// is there), and a store into a shared mapping is in the page cache at once: a SIGKILL a moment
// later keeps it, as a write(2) did. When the helper is behind, Append does its work itself.
//
// The file's size is what was reserved, not what was appended: a reader takes the data up to the
// first zero byte (trace_parser.h, TraceDataLength). Closing cuts the file to what was appended;
// a process killed before leaves the reserved tail as zeros. A forked child (a data loader's
// worker) inherits the mapping: it may not append, and its exit cuts nothing.
//
// Where the file system cannot reserve blocks (fallocate unsupported), or the virtual range is
// used up, appends are write(2) calls from then on, with the same results for readers.
#pragma once

#include <pthread.h>

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "harness/core/status.h"

namespace lockstep {

// How appends reach the file: stored into the mapping (the default, falling back to write(2) where
// it cannot serve), or write(2) calls from the start (what that fallback does; tests take both).
enum class AppendBy { kMapping, kWrite };

class MappedAppendFile {
 public:
  // Takes `fd`, an empty regular file open for reading and writing (closed by the destructor).
  // `window_bytes`: how far ahead the helper keeps the file ready (tests make it small).
  // `name` goes into error messages.
  static Result<std::unique_ptr<MappedAppendFile>> Open(int fd, std::string name, size_t window_bytes,
                                                        AppendBy by = AppendBy::kMapping);
  ~MappedAppendFile();
  MappedAppendFile(const MappedAppendFile&) = delete;
  MappedAppendFile& operator=(const MappedAppendFile&) = delete;

  // Appends `bytes` (not empty). Not thread-safe: the caller serializes appends.
  Status Append(std::string_view bytes);

  // The same in two steps, for a caller that writes a record where it goes instead of copying it
  // there (a step record's table, a few KB after every step): Reserve(n) gives room for n bytes
  // (n >= 1), the caller stores the first n - 1, and Commit(last) stores the last one after them,
  // as Append does. Where appends are write(2) calls, the room is a buffer of this object's,
  // written at Commit. Nothing else is appended in between. A Reserve without its Commit appends
  // nothing: the next Reserve or Append clears its room and reuses it (until then its bytes lie
  // past the data, where a reader sees an unfinished last line, as of a rank killed mid-record).
  Result<char*> Reserve(size_t n);
  Status Commit(char last);

  bool mapped() const { return map_ != nullptr; }
  size_t appended() const { return used_; }

 private:
  MappedAppendFile(int fd, std::string name, size_t window) : fd_(fd), name_(std::move(name)), window_(window) {}
  // Makes [ready_, end) ready (reserved and writable). Under mu_. Sets *cannot_map instead of
  // failing where the mapping cannot serve (fallocate unsupported, the virtual range used up).
  Status Prepare(size_t end, bool* cannot_map);
  void Helper();
  // Switches to write(2) for good: the file cut to what was appended, the mapping gone.
  Status GoDirect();
  Status WriteDirect(std::string_view bytes);
  bool InOpeningProcess() const;
  // Asks the helper for the next window once less than half of one is left ready.
  void AskAhead();

  int fd_;
  std::string name_;
  size_t window_;
  char* map_ = nullptr;
  size_t virtual_ = 0;        // the mapping's length
  size_t used_ = 0;           // appended
  size_t reserved_for_ = 0;   // the pending Reserve's size (0: none)
  std::string direct_room_;   // Reserve's room where appends are write(2) calls
  size_t reserved_ = 0;       // the file's size: blocks reserved up to here (under mu_)
  std::atomic<size_t> ready_{0};  // reserved and writable up to here
  bool populate_ = true;      // MADV_POPULATE_WRITE works here
  uint64_t fork_generation_ = 0;  // the process's at Open (see .cc)

  std::mutex mu_;
  std::condition_variable wake_;
  size_t want_ = 0;           // where the helper is asked to get to (under mu_)
  std::atomic<bool> asked_{false};  // a request is pending: Append does not ask again
  bool stop_ = false;
  // The helper, a plain pthread: a forked child inherits this object but not the thread, and
  // neither joins nor detaches it.
  pthread_t helper_{};
  bool has_helper_ = false;
};

// Cuts a file that a MappedAppendFile's process left without closing it (killed) to its data: up
// to the first zero byte of its reserved tail. A file without such a tail is left as it is; one
// that does not exist is no error. For whoever owns the file once its writer is gone (the
// launcher, after its ranks ended), so that what stays on disk is exactly what was appended.
Status CutReservedTail(const std::filesystem::path& path);

}  // namespace lockstep
