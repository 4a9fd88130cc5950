#include "bench/crash_report.h"

#include <dlfcn.h>
#include <signal.h>
#include <ucontext.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <initializer_list>

namespace lockstep::bench {
namespace {

void Print(const char* text) {
  const size_t n = std::strlen(text);
  ssize_t ignored = ::write(STDERR_FILENO, text, n);
  (void)ignored;
}

// "0x... libtorch_cuda.so+0x1234 (symbol+0x10)", or nothing for a word that is no code address.
// dladdr is not async-signal-safe; the process is dying anyway and this is its only report.
bool Describe(uintptr_t address, char* out, size_t size) {
  Dl_info info{};
  if (address == 0 || ::dladdr(reinterpret_cast<void*>(address), &info) == 0 || info.dli_fname == nullptr) {
    return false;
  }
  const uintptr_t base = reinterpret_cast<uintptr_t>(info.dli_fbase);
  if (info.dli_sname != nullptr) {
    std::snprintf(out, size, "%#lx %s+%#lx (%s+%#lx)", static_cast<unsigned long>(address), info.dli_fname,
                  static_cast<unsigned long>(address - base), info.dli_sname,
                  static_cast<unsigned long>(address - reinterpret_cast<uintptr_t>(info.dli_saddr)));
  } else {
    std::snprintf(out, size, "%#lx %s+%#lx", static_cast<unsigned long>(address), info.dli_fname,
                  static_cast<unsigned long>(address - base));
  }
  return true;
}

void OnCrash(int sig, siginfo_t* info, void* context) {
  char line[1024];
  uintptr_t pc = 0, sp = 0;
#if defined(__x86_64__)
  const auto* uc = static_cast<const ucontext_t*>(context);
  pc = static_cast<uintptr_t>(uc->uc_mcontext.gregs[REG_RIP]);
  sp = static_cast<uintptr_t>(uc->uc_mcontext.gregs[REG_RSP]);
#elif defined(__aarch64__)
  const auto* uc = static_cast<const ucontext_t*>(context);
  pc = static_cast<uintptr_t>(uc->uc_mcontext.pc);
  sp = static_cast<uintptr_t>(uc->uc_mcontext.sp);
#else
  (void)context;
#endif
  std::snprintf(line, sizeof line, "lockstep-bench: crash report: signal %d (%s), fault address %p, pc %#lx\n", sig,
                strsignal(sig), info->si_addr, static_cast<unsigned long>(pc));
  Print(line);
  char where[900];
  if (Describe(pc, where, sizeof where)) {
    std::snprintf(line, sizeof line, "lockstep-bench: crash report: pc in %s\n", where);
    Print(line);
  }
  // With the PC at 0 (a call through a null pointer) the first word is the caller's return
  // address; further down, the callers' frames.
  if (sp != 0) {
    const auto* stack = reinterpret_cast<const uintptr_t*>(sp);
    for (int i = 0; i < 32; ++i) {
      if (Describe(stack[i], where, sizeof where)) {
        std::snprintf(line, sizeof line, "lockstep-bench: crash report: sp[%d] %s\n", i, where);
        Print(line);
      }
    }
  }
  // SA_RESETHAND put the default action back: dying of the same signal keeps the exit status.
  ::raise(sig);
}

}  // namespace

void InstallCrashReport() {
  struct sigaction sa {};
  sa.sa_sigaction = OnCrash;
  sa.sa_flags = SA_SIGINFO | SA_RESETHAND;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE}) ::sigaction(sig, &sa, nullptr);
}

}  // namespace lockstep::bench
