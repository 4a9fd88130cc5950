// A native crash of lockstep-bench says where it happened. The GPU run's BM_CudaStepOverhead died
// of SIGSEGV through a null function pointer (the PC at 0), where neither a core file nor an
// unwinder names the caller; the return address the call left on top of the stack does. On a
// lent machine, minutes apart and without gdb, that line is the whole diagnosis.
#pragma once

namespace lockstep::bench {

// On SIGSEGV, SIGBUS, SIGILL or SIGFPE: prints to stderr the signal, the faulting address, the
// PC, and each of the 32 words on top of the stack that points into a loaded object (object,
// offset, nearest symbol), then dies of the same signal.
void InstallCrashReport();

}  // namespace lockstep::bench
