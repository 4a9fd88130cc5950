#include "harness/trace/mapped_append_file.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <vector>

namespace lockstep {
namespace {

// Enough virtual room for any trace (a mapping beyond the file's end costs no memory); a trace
// that outgrows it is written with write(2) from then on.
constexpr size_t kVirtualBytes = size_t{1} << 36;  // 64 GiB
constexpr size_t kPage = 4096;

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14; older kernels say EINVAL and the stores fault instead
#endif

size_t RoundUp(size_t n) { return (n + kPage - 1) / kPage * kPage; }

// Incremented in every forked child: an object made before a fork is not the child's to use.
std::atomic<uint64_t> fork_generation{0};
void CountFork() { fork_generation.fetch_add(1, std::memory_order_relaxed); }
std::once_flag fork_handler_once;

}  // namespace

Result<std::unique_ptr<MappedAppendFile>> MappedAppendFile::Open(int fd, std::string name, size_t window_bytes,
                                                                 AppendBy by) {
  std::call_once(fork_handler_once, [] { ::pthread_atfork(nullptr, nullptr, &CountFork); });
  std::unique_ptr<MappedAppendFile> f(new MappedAppendFile(fd, std::move(name), RoundUp(std::max(window_bytes, kPage))));
  f->fork_generation_ = fork_generation.load(std::memory_order_relaxed);
  if (by == AppendBy::kWrite) return f;
  void* m = ::mmap(nullptr, kVirtualBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (m == MAP_FAILED) return f;  // write(2)
  f->map_ = static_cast<char*>(m);
  f->virtual_ = kVirtualBytes;
  bool cannot_map = false;
  std::unique_lock<std::mutex> lock(f->mu_);
  Status s = f->Prepare(f->window_, &cannot_map);
  lock.unlock();
  LOCKSTEP_RETURN_IF_ERROR(s);  // a full disk, say
  if (cannot_map) {
    // No reservation on this file system (fallocate unsupported): write(2) for good, no helper.
    LOCKSTEP_RETURN_IF_ERROR(f->GoDirect());
    return f;
  }
  pthread_t thread;
  if (::pthread_create(&thread, nullptr, [](void* self) -> void* {
        static_cast<MappedAppendFile*>(self)->Helper();
        return nullptr;
      }, f.get()) == 0) {
    f->helper_ = thread;
    f->has_helper_ = true;
  }
  return f;
}

MappedAppendFile::~MappedAppendFile() {
  const bool mine = InOpeningProcess();
  if (has_helper_ && mine) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    wake_.notify_one();
    ::pthread_join(helper_, nullptr);
  }
  if (map_ != nullptr) {
    ::munmap(map_, virtual_);
    // The file is what was appended; a forked child's copy of this object cuts nothing.
    if (mine && ::ftruncate(fd_, static_cast<off_t>(used_)) != 0) {
      // Nobody to tell; readers stop at the reserved tail's first zero byte anyway.
    }
  }
  ::close(fd_);
}

bool MappedAppendFile::InOpeningProcess() const {
  return fork_generation.load(std::memory_order_relaxed) == fork_generation_;
}

Status MappedAppendFile::Prepare(size_t end, bool* cannot_map) {
  end = RoundUp(end);
  if (end <= ready_.load(std::memory_order_relaxed)) return Status::Ok();
  if (end > virtual_) {
    *cannot_map = true;
    return Status::Ok();
  }
  if (end > reserved_) {
    // Reserve in steps of at least the window and an eighth of the file: few calls for a long run.
    const size_t target = std::min(virtual_, std::max(end, reserved_ + std::max(window_, reserved_ / 8)));
    if (::fallocate(fd_, 0, static_cast<off_t>(reserved_), static_cast<off_t>(target - reserved_)) != 0) {
      if (errno == EOPNOTSUPP || errno == ENOSYS || errno == EINVAL) {
        *cannot_map = true;
        return Status::Ok();
      }
      return IoError("cannot write trace " + name_ + ": " + std::strerror(errno));
    }
    reserved_ = target;
  }
  const size_t from = ready_.load(std::memory_order_relaxed);
  if (populate_ && ::madvise(map_ + from, end - from, MADV_POPULATE_WRITE) != 0) {
    populate_ = false;  // an older kernel: the first store to each page faults, as it would anyway
  }
  ready_.store(end, std::memory_order_release);
  return Status::Ok();
}

void MappedAppendFile::Helper() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    wake_.wait(lock, [this] { return stop_ || asked_.load(std::memory_order_relaxed); });
    if (stop_) return;
    // A failure here (a full disk, the mapping used up) is met again, and reported, by the next
    // Append that finds the window not ready.
    bool cannot_map = false;
    (void)Prepare(want_, &cannot_map);
    asked_.store(false, std::memory_order_relaxed);
  }
}

Status MappedAppendFile::GoDirect() {
  if (map_ != nullptr) {
    ::munmap(map_, virtual_);
    map_ = nullptr;
  }
  if (::ftruncate(fd_, static_cast<off_t>(used_)) != 0 || ::lseek(fd_, static_cast<off_t>(used_), SEEK_SET) < 0) {
    return IoError("cannot write trace " + name_ + ": " + std::strerror(errno));
  }
  return Status::Ok();
}

Status MappedAppendFile::WriteDirect(std::string_view bytes) {
  const char* p = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {
    const ssize_t n = ::write(fd_, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return IoError("cannot write trace " + name_ + ": " + std::strerror(errno));
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  used_ += bytes.size();
  return Status::Ok();
}

Status MappedAppendFile::Append(std::string_view bytes) {
  if (InOpeningProcess() && map_ == nullptr) return WriteDirect(bytes);
  LOCKSTEP_ASSIGN_OR_RETURN(char* room, Reserve(bytes.size()));
  std::memcpy(room, bytes.data(), bytes.size() - 1);
  return Commit(bytes.back());
}

Result<char*> MappedAppendFile::Reserve(size_t n) {
  if (!InOpeningProcess()) {
    return InternalError("cannot write trace " + name_ + " from a forked child of the process that opened it");
  }
  if (reserved_for_ > 0 && map_ != nullptr) {
    // A reservation given up: its bytes cleared, so that none is read as the start of a record.
    std::memset(map_ + used_, 0, reserved_for_);
  }
  reserved_for_ = 0;
  if (map_ != nullptr && used_ + n > ready_.load(std::memory_order_acquire)) {
    // The helper is behind (a burst, or its work failed): do it here.
    bool cannot_map = false;
    std::unique_lock<std::mutex> lock(mu_);
    Status s = Prepare(used_ + n + window_, &cannot_map);
    lock.unlock();
    if (cannot_map) {
      if (has_helper_) {
        {
          std::lock_guard<std::mutex> stop(mu_);
          stop_ = true;
        }
        wake_.notify_one();
        ::pthread_join(helper_, nullptr);
        has_helper_ = false;
      }
      LOCKSTEP_RETURN_IF_ERROR(GoDirect());
    } else {
      LOCKSTEP_RETURN_IF_ERROR(s);
    }
  }
  reserved_for_ = n;
  if (map_ == nullptr) {
    direct_room_.resize(n);
    return direct_room_.data();
  }
  return map_ + used_;
}

Status MappedAppendFile::Commit(char last) {
  const size_t n = reserved_for_;
  if (n == 0) return InternalError("trace " + name_ + ": a commit without a reservation");
  reserved_for_ = 0;
  if (map_ == nullptr) {
    direct_room_[n - 1] = last;
    return WriteDirect(direct_room_);
  }
  // The bytes, then the last one (a record's newline): a reader never takes a line whose end it
  // sees before the rest, and takes nothing past a zero byte (TraceDataLength).
  std::atomic_thread_fence(std::memory_order_release);
  map_[used_ + n - 1] = last;
  used_ += n;
  AskAhead();
  return Status::Ok();
}

void MappedAppendFile::AskAhead() {
  // Less than half a window left ready: ask the helper for the next, once.
  if (has_helper_ && !asked_.load(std::memory_order_relaxed) &&
      ready_.load(std::memory_order_relaxed) - used_ < window_ / 2) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      want_ = used_ + window_;
      asked_.store(true, std::memory_order_relaxed);
    }
    wake_.notify_one();
  }
}

Status CutReservedTail(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    return errno == ENOENT ? Status::Ok() : IoError("cannot open " + path.string() + ": " + std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || st.st_size == 0) {
    ::close(fd);
    return Status::Ok();
  }
  // The data are text without zero bytes followed by the zeros of the reserved tail (a record in
  // flight may have left a piece of itself, zeros within it). Only the tail is read: backwards
  // from the end, past the zeros, to the last newline before them; the data end at the first
  // zero after that newline.
  constexpr size_t kBlock = 64 * 1024;
  std::vector<char> block(kBlock);
  off_t end = st.st_size;       // nothing past here is data
  off_t last_newline = -1;      // the last '\n' at or before the last non-zero byte
  bool seen_data = false;
  for (off_t at = st.st_size; at > 0 && last_newline < 0;) {
    const off_t from = at > static_cast<off_t>(kBlock) ? at - static_cast<off_t>(kBlock) : 0;
    const ssize_t n = ::pread(fd, block.data(), static_cast<size_t>(at - from), from);
    if (n != at - from) {
      ::close(fd);
      return IoError("cannot read " + path.string() + ": " + std::strerror(errno));
    }
    for (ssize_t i = n - 1; i >= 0; --i) {
      if (!seen_data && block[static_cast<size_t>(i)] != 0) seen_data = true;
      if (seen_data && block[static_cast<size_t>(i)] == '\n') {
        last_newline = from + i;
        break;
      }
    }
    at = from;
  }
  if (!seen_data) {
    end = 0;
  } else {
    // The first zero after the last newline (or from the start): the end of the data.
    off_t at = last_newline + 1;
    end = st.st_size;
    while (at < st.st_size && end == st.st_size) {
      const size_t want = static_cast<size_t>(std::min<off_t>(static_cast<off_t>(kBlock), st.st_size - at));
      const ssize_t n = ::pread(fd, block.data(), want, at);
      if (n <= 0) break;
      for (ssize_t i = 0; i < n; ++i) {
        if (block[static_cast<size_t>(i)] == 0) {
          end = at + i;
          break;
        }
      }
      at += n;
    }
  }
  Status s = Status::Ok();
  if (end < st.st_size && ::ftruncate(fd, end) != 0) {
    s = IoError("cannot cut " + path.string() + " to its data: " + std::strerror(errno));
  }
  ::close(fd);
  return s;
}

}  // namespace lockstep
