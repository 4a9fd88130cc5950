// The NCCL profiler plugin ABI, versions 4 and 5, declared here because no NCCL profiler header is
// installed (nccl.h does not carry it). Followed field for field from NVIDIA/nccl at tag v2.28.9-1:
// src/include/plugin/nccl_profiler.h (event types and states), src/include/plugin/profiler/
// profiler_v4.h and profiler_v5.h (the same files as ext-profiler/example/nccl/). Which NCCL loads
// which version (src/plugin/profiler.cc tries the newest first):
//   - NCCL 2.27.x knows v1..v4 and asks for ncclProfiler_v4 first;
//   - NCCL 2.28.x knows v1..v5 and asks for ncclProfiler_v5 first;
//   - NCCL 2.29/2.30 add v6 (copy-engine collectives) and still load v5.
// A layout mistake here is silent memory corruption inside NCCL, so the layouts are pinned by
// static_asserts at the end, with offsets read off NCCL's own headers (LP64).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

namespace lockstep::nccl_abi {

// nccl.h's ncclResult_t (an int-sized enum); a plugin returns ncclSuccess, and only init may fail.
enum ncclResult_t : int { ncclSuccess = 0, ncclInternalError = 3 };

// NCCL's logger (plugin.h's ncclDebugLogger_t); taken and never called: lockstep reports through
// its own log, and a plugin's own problems go to stderr.
using ncclDebugLogger_t = void (*)(int level, unsigned long flags, const char* file, int line, const char* fmt, ...);

// Event types: the descriptor's `type`, and the bits of the activation mask the plugin sets.
enum : int {
  ncclProfileGroup = 1 << 0,
  ncclProfileColl = 1 << 1,
  ncclProfileP2p = 1 << 2,
  ncclProfileProxyOp = 1 << 3,
  ncclProfileProxyStep = 1 << 4,
  ncclProfileProxyCtrl = 1 << 5,
  ncclProfileKernelCh = 1 << 6,
  ncclProfileNetPlugin = 1 << 7,
  ncclProfileGroupApi = 1 << 8,  // v5
  ncclProfileCollApi = 1 << 9,  // v5
  ncclProfileP2pApi = 1 << 10,  // v5
  ncclProfileKernelLaunch = 1 << 11,  // v5
};

// recordEventState's state (ncclProfilerEventState_t, an int-sized enum); lockstep reads none of
// them, the values are here for the signature only.
enum ncclProfilerEventState_t : int { ncclProfilerKernelChStop = 22 };

// ---- v4 (NCCL 2.27) ----

struct ncclProfilerEventDescr_v4_t {
  uint8_t type;
  void* parentObj;  // coll: the group event's handle; kernelCh: the coll's (or p2p's) handle
  int rank;
  union {
    struct {
      uint64_t seqNumber;
      const char* func;
      void const* sendBuff;
      void* recvBuff;
      size_t count;
      int root;
      const char* datatype;
      uint8_t nChannels;
      uint8_t nWarps;
      const char* algo;
      const char* proto;
    } coll;
    struct {
      const char* func;
      void* buff;
      const char* datatype;
      size_t count;
      int peer;
      uint8_t nChannels;
    } p2p;
    struct {
      pid_t pid;
      uint8_t channelId;
      int peer;
      int nSteps;
      int chunkSize;
      int isSend;
    } proxyOp;
    struct {
      int step;
    } proxyStep;
    struct {
      uint8_t channelId;
      uint64_t pTimer;
    } kernelCh;
    struct {
      int64_t id;
      void* data;
    } netPlugin;
  };
};

union ncclProfilerEventStateArgs_v4_t {
  struct {
    size_t transSize;
  } proxyStep;
  struct {
    int appendedProxyOps;
  } proxyCtrl;
  struct {
    void* data;
  } netPlugin;
  struct {
    uint64_t pTimer;
  } kernelCh;
};

struct ncclProfiler_v4_t {
  const char* name;
  ncclResult_t (*init)(void** context, int* eActivationMask, const char* commName, uint64_t commHash, int nNodes,
                       int nranks, int rank, ncclDebugLogger_t logfn);
  ncclResult_t (*startEvent)(void* context, void** eHandle, ncclProfilerEventDescr_v4_t* eDescr);
  ncclResult_t (*stopEvent)(void* eHandle);
  ncclResult_t (*recordEventState)(void* eHandle, ncclProfilerEventState_t eState,
                                   ncclProfilerEventStateArgs_v4_t* eStateArgs);
  ncclResult_t (*finalize)(void* context);
};

// ---- v5 (NCCL 2.28) ----

struct ncclProfilerEventDescr_v5_t {
  uint64_t type;
  void* parentObj;  // coll: the CollApi event's handle; kernelCh: the coll's (or p2p's) handle
  int rank;
  union {
    struct {
      bool graphCaptured;
      int groupDepth;
    } groupApi;
    struct {
      const char* func;
      size_t count;
      const char* datatype;
      int root;
      void* stream;
      bool graphCaptured;
    } collApi;
    struct {
      const char* func;
      size_t count;
      const char* datatype;
      void* stream;
      bool graphCaptured;
    } p2pApi;
    struct {
      void* stream;
    } kernelLaunch;
    struct {
      uint64_t seqNumber;
      const char* func;
      void const* sendBuff;
      void* recvBuff;
      size_t count;
      int root;
      const char* datatype;
      uint8_t nChannels;
      uint8_t nWarps;
      const char* algo;
      const char* proto;
      void* parentGroup;  // the v4 parent (the group event's handle)
    } coll;
    struct {
      const char* func;
      void* buff;
      const char* datatype;
      size_t count;
      int peer;
      uint8_t nChannels;
      void* parentGroup;
    } p2p;
    struct {
      pid_t pid;
      uint8_t channelId;
      int peer;
      int nSteps;
      int chunkSize;
      int isSend;
    } proxyOp;
    struct {
      int step;
    } proxyStep;
    struct {
      uint8_t channelId;
      uint64_t pTimer;
    } kernelCh;
    struct {
      int64_t id;
      void* data;
    } netPlugin;
  };
};

using ncclProfilerEventStateArgs_v5_t = ncclProfilerEventStateArgs_v4_t;  // identical in NCCL

struct ncclProfiler_v5_t {
  const char* name;
  ncclResult_t (*init)(void** context, uint64_t commId, int* eActivationMask, const char* commName, int nNodes,
                       int nranks, int rank, ncclDebugLogger_t logfn);
  ncclResult_t (*startEvent)(void* context, void** eHandle, ncclProfilerEventDescr_v5_t* eDescr);
  ncclResult_t (*stopEvent)(void* eHandle);
  ncclResult_t (*recordEventState)(void* eHandle, ncclProfilerEventState_t eState,
                                   ncclProfilerEventStateArgs_v5_t* eStateArgs);
  ncclResult_t (*finalize)(void* context);
};

// Offsets and sizes as NCCL's own headers give them on LP64 (x86-64, aarch64): checked by compiling
// NCCL v2.28.9-1's profiler_v4.h / profiler_v5.h and printing offsetof for the same fields.
static_assert(sizeof(ncclResult_t) == 4 && sizeof(ncclProfilerEventState_t) == 4, "int-sized enums");
static_assert(offsetof(ncclProfilerEventDescr_v4_t, parentObj) == 8);
static_assert(offsetof(ncclProfilerEventDescr_v4_t, rank) == 16);
static_assert(offsetof(ncclProfilerEventDescr_v4_t, coll.seqNumber) == 24);
static_assert(offsetof(ncclProfilerEventDescr_v4_t, coll.count) == 56);
static_assert(offsetof(ncclProfilerEventDescr_v4_t, coll.root) == 64);
static_assert(offsetof(ncclProfilerEventDescr_v4_t, coll.datatype) == 72);
static_assert(offsetof(ncclProfilerEventDescr_v4_t, coll.nChannels) == 80);
static_assert(offsetof(ncclProfilerEventDescr_v4_t, kernelCh.channelId) == 24);
static_assert(sizeof(ncclProfilerEventDescr_v4_t) == 104);
static_assert(offsetof(ncclProfilerEventDescr_v5_t, parentObj) == 8);
static_assert(offsetof(ncclProfilerEventDescr_v5_t, coll.func) == 32);
static_assert(offsetof(ncclProfilerEventDescr_v5_t, coll.count) == 56);
static_assert(offsetof(ncclProfilerEventDescr_v5_t, coll.root) == 64);
static_assert(offsetof(ncclProfilerEventDescr_v5_t, coll.datatype) == 72);
static_assert(offsetof(ncclProfilerEventDescr_v5_t, coll.nChannels) == 80);
static_assert(offsetof(ncclProfilerEventDescr_v5_t, coll.parentGroup) == 104);
static_assert(sizeof(ncclProfilerEventDescr_v5_t) == 112);
static_assert(offsetof(ncclProfiler_v5_t, finalize) == 40 && offsetof(ncclProfiler_v4_t, finalize) == 40);

}  // namespace lockstep::nccl_abi
