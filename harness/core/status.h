// Errors as values at module boundaries (abseil style). LibTorch, MPI, NCCL and c10d errors are
// converted into a Status where they enter our code; a Status becomes an exit code only in main.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace lockstep {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,  // bad input: a scenario file, a flag
  kNotFound,
  kIoError,
  kCommunication,    // a collective or rendezvous failed
  kTimeout,
  kUnavailable,      // a feature this build or machine lacks (no GPU, no NCCL, no SDPA)
  kInternal,         // the harness itself is broken
};

const char* StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "communication: rank 1: MPI_Allreduce: ..." ; "ok" when ok.
  std::string ToString() const;

  // Returns a copy whose message is prefixed with `context: `.
  Status WithContext(const std::string& context) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status InvalidArgumentError(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
inline Status NotFoundError(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status IoError(std::string m) { return {StatusCode::kIoError, std::move(m)}; }
inline Status CommunicationError(std::string m) { return {StatusCode::kCommunication, std::move(m)}; }
inline Status TimeoutError(std::string m) { return {StatusCode::kTimeout, std::move(m)}; }
inline Status UnavailableError(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
inline Status InternalError(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

// A value or the error that prevented it.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design, like absl::StatusOr
  Result(Status status) : v_(std::move(status)) {  // NOLINT
    if (std::get<Status>(v_).ok()) v_ = Status(StatusCode::kInternal, "Result built from an ok Status");
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  Status status() const { return ok() ? Status::Ok() : std::get<Status>(v_); }

  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<Status, T> v_;
};

}  // namespace lockstep

#define LOCKSTEP_CONCAT_INNER(a, b) a##b
#define LOCKSTEP_CONCAT(a, b) LOCKSTEP_CONCAT_INNER(a, b)

#define LOCKSTEP_RETURN_IF_ERROR(expr)                 \
  do {                                                 \
    ::lockstep::Status lockstep_status_ = (expr);      \
    if (!lockstep_status_.ok()) return lockstep_status_; \
  } while (0)

#define LOCKSTEP_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                   \
  if (!tmp.ok()) return tmp.status();                  \
  lhs = std::move(tmp).value()

#define LOCKSTEP_ASSIGN_OR_RETURN(lhs, expr) \
  LOCKSTEP_ASSIGN_OR_RETURN_IMPL(LOCKSTEP_CONCAT(lockstep_result_, __LINE__), lhs, expr)
