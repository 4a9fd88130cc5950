// A user's program with one of the objects lockstep injects into processes loaded the way it is
// loaded in real use, made to do its work, while the program formats numbers through streams,
// throws and catches across the object's boundary and uses std::filesystem (issue 35): the things
// that break when an object's own copy of libstdc++ meets the process's. The program links
// libstdc++ shared, like Python and torch; the object is built however the toolchain builds it
// (ci/toolchain-check.sh builds it with a toolchain that finds only libstdc++.a).
//
//   injected_object_workload process_log            linked, as the probe and lockstep-rank link it
//   injected_object_workload nccl_profiler PLUGIN   dlopened and driven as NCCL 2.28 drives it
//   injected_object_workload cupti LIBRARY          dlopened, InitializeInjection, as the CUDA driver
//   injected_object_workload pmpi                   under mpirun with LD_PRELOAD=liblockstep_pmpi.so
//
// First, as the process sees it, the object must offer no libstdc++ symbol (its dynamic symbol
// table, read from its file): a copy of its own is safe only while it stays private.
//
// Prints "ok: ..." and exits 0 when every step gave what it must; prints the step that did not
// and exits 1. A crash is the finding the test exists for.
#include <dlfcn.h>
#include <elf.h>
#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <memory>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <unistd.h>

#include "harness/discovery/discovery_log.h"
#include "harness/discovery/native_collective_log.h"
#include "harness/nccl_profiler/nccl_profiler_abi.h"

namespace lockstep {
namespace {

int failures = 0;

void Expect(bool ok, const std::string& what) {
  if (!ok) {
    std::fprintf(stderr, "injected_object_workload: FAILED: %s\n", what.c_str());
    ++failures;
  }
}

// What the program itself does, before and after the object is at work: the integer formatting
// that crashed on the GPU machine (std::num_put through a stream), a throw and catch, and
// std::filesystem (PyPI's torch exports copies of its own: cmake/LockstepDependencies.cmake).
void ProgramWork(const std::string& when) {
  std::ostringstream out;
  out << 42 << ' ' << -7 << ' ' << std::numeric_limits<uint64_t>::max() << ' ' << uint16_t{3} << ' ' << 0.5;
  Expect(out.str() == "42 -7 18446744073709551615 3 0.5", when + ": the program's stream formats '" + out.str() + "'");
  Expect(std::to_string(12345) == "12345", when + ": std::to_string");

  bool caught = false;
  try {
    throw std::runtime_error("the program's own");
  } catch (const std::exception& e) {
    caught = std::string(e.what()) == "the program's own";
  }
  Expect(caught, when + ": the program catches its own exception");

  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("lockstep-workload-" + std::to_string(getpid()) + "-" + when);
  fs::create_directories(dir / "sub");
  for (int i = 0; i < 3; ++i) std::ofstream(dir / "sub" / ("f" + std::to_string(i))) << i;
  int files = 0;
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(dir)) files += e.is_regular_file() ? 1 : 0;
  Expect(files == 3, when + ": std::filesystem sees " + std::to_string(files) + " files of 3");
  Expect(fs::remove_all(dir) == 5, when + ": std::filesystem::remove_all");
}

// The libstdc++ symbols `object` offers the process: defined, global, weak or GNU_UNIQUE, default
// visibility, in its dynamic symbol table (read from its file). A copy of libstdc++ linked into
// the object must offer none: one it offers binds the process's other copies to it, or its own
// code to theirs (issue 35: the probe's formatting of an integer crashed so).
std::vector<std::string> LibstdcxxExports(const std::string& object) {
  std::ifstream in(object, std::ios::binary);
  const std::string elf((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> found;
  if (elf.size() < sizeof(Elf64_Ehdr) || elf.compare(0, 4, ELFMAG) != 0 || elf[EI_CLASS] != ELFCLASS64) {
    Expect(false, object + " is no 64-bit ELF file");
    return found;
  }
  const auto* eh = reinterpret_cast<const Elf64_Ehdr*>(elf.data());
  const auto* sections = reinterpret_cast<const Elf64_Shdr*>(elf.data() + eh->e_shoff);
  static const char* const kPrefixes[] = {"_ZNSt", "_ZNKSt", "_ZSt", "_ZN9__gnu_cxx", "_ZNK9__gnu_cxx", "_ZTISt",
                                          "_ZTSSt", "_ZTVSt", "_ZTINSt", "_ZTSNSt", "_ZTVNSt", "_ZGVNSt", "_ZZNSt",
                                          "_ZZNKSt", "_ZN10__cxxabiv1", "_ZTIN10__cxxabiv1", "__cxa_",
                                          "__gxx_personality", "_Unwind_", "_Znwm", "_Znam", "_ZdlPv", "_ZdaPv"};
  for (int i = 0; i < eh->e_shnum; ++i) {
    if (sections[i].sh_type != SHT_DYNSYM) continue;
    const char* names = elf.data() + sections[sections[i].sh_link].sh_offset;
    const auto* syms = reinterpret_cast<const Elf64_Sym*>(elf.data() + sections[i].sh_offset);
    for (size_t k = 0; k < sections[i].sh_size / sizeof(Elf64_Sym); ++k) {
      const Elf64_Sym& sym = syms[k];
      const int bind = ELF64_ST_BIND(sym.st_info);
      if (sym.st_shndx == SHN_UNDEF || ELF64_ST_VISIBILITY(sym.st_other) != STV_DEFAULT ||
          (bind != STB_GLOBAL && bind != STB_WEAK && bind != STB_GNU_UNIQUE)) {
        continue;
      }
      const std::string name = names + sym.st_name;
      for (const char* prefix : kPrefixes) {
        if (name.rfind(prefix, 0) == 0) {
          found.push_back(name);
          break;
        }
      }
    }
  }
  return found;
}

void ExpectPrivateRuntime(const std::string& object) {
  const std::vector<std::string> leaked = LibstdcxxExports(object);
  std::string some;
  for (size_t i = 0; i < leaked.size() && i < 3; ++i) some += " " + leaked[i];
  Expect(leaked.empty(), object + " offers the process " + std::to_string(leaked.size()) +
                             " symbols of libstdc++ (a copy of its own, not kept private):" + some);
}

// The file a loaded symbol comes from.
std::string ObjectOf(const void* symbol) {
  Dl_info info{};
  return dladdr(symbol, &info) != 0 && info.dli_fname != nullptr ? info.dli_fname : "";
}

struct Observed : NativeCollectiveObserver {
  std::mutex mu;
  std::vector<std::string> events;
  uint64_t throw_at_end_of = UINT64_MAX;
  void Begin(const CollectiveRecord& c) override {
    std::ostringstream s;  // the program formats what the object handed it
    s << "begin " << c.group << ' ' << c.seq << ' ' << c.op << ' ' << c.dtype << ' ' << c.count;
    std::lock_guard<std::mutex> lock(mu);
    events.push_back(s.str());
  }
  void End(const std::string& group, uint64_t seq) override {
    if (seq == throw_at_end_of) throw std::runtime_error("the observer refuses this end");
    std::ostringstream s;
    s << "end " << group << ' ' << seq;
    std::lock_guard<std::mutex> lock(mu);
    events.push_back(s.str());
  }
};

std::vector<std::string> discovered;
void ObserveDiscoveries() {
  SetDiscoveryObserver([](const DiscoveryRecord& r) {
    if (r.name == "workload.throw") throw std::invalid_argument("thrown by the program's observer");
    std::ostringstream s;
    s << r.name << ' ' << r.comm << " #" << r.call;
    discovered.push_back(s.str());
  });
}

// The process log, linked: calls with strings in and out, a vector made there and freed here, an
// observer of ours that it calls, and one that throws through its frames back to us.
void ProcessLog() {
  ExpectPrivateRuntime(ObjectOf(reinterpret_cast<const void*>(&RecordDiscovery)));
  ObserveDiscoveries();
  RecordDiscovery("workload.first", "here", "comm:1");
  bool caught = false;
  try {
    RecordDiscovery("workload.throw");
  } catch (const std::invalid_argument& e) {
    caught = std::string(e.what()) == "thrown by the program's observer";
  }
  Expect(caught, "an exception of the program's observer reaches the program through the process log");
  RecordDiscovery("workload.after", "", "comm:2");
  Expect(discovered.size() == 2 && discovered[0] == "workload.first comm:1 #1" && discovered[1] == "workload.after comm:2 #3",
         "the observer saw the calls (" + std::to_string(discovered.size()) + ")");
  const std::vector<DiscoveryRecord> calls = DiscoveryCalls();
  Expect(calls.size() == 3 && DiscoveryCount() == 3, "the log holds 3 calls");

  auto observer = std::make_shared<Observed>();
  SetNativeCollectiveObserver(observer);
  CollectiveRecord c;
  c.group = "workload";
  c.seq = 7;
  c.op = "all_reduce";
  c.dtype = "float32";
  c.count = 1 << 20;
  RecordNativeCollectiveBegin(c);
  RecordNativeCollectiveEnd("workload", 7);
  SetNativeCollectiveObserver(nullptr);
  Expect(observer->events.size() == 2 && observer->events[0] == "begin workload 7 all_reduce float32 1048576" &&
             observer->events[1] == "end workload 7",
         "the native collective observer saw begin and end");
  std::printf("ok: process_log: %zu discovery calls, %zu collective events\n", calls.size(), observer->events.size());
}

// The NCCL profiler plugin, dlopened by path as NCCL does, driven through its v5 table: a
// communicator's init (a discovery call whose name it formats), two collectives with their channel
// events; the program's observer throws at the first one's end, which the plugin must catch.
void NcclProfiler(const char* path) {
  using namespace nccl_abi;  // NOLINT
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    Expect(false, std::string("dlopen: ") + dlerror());
    return;
  }
  auto* v5 = static_cast<ncclProfiler_v5_t*>(dlsym(lib, "ncclProfiler_v5"));
  if (v5 == nullptr) {
    Expect(false, "no ncclProfiler_v5 in the plugin");
    return;
  }
  ExpectPrivateRuntime(path);
  ExpectPrivateRuntime(ObjectOf(reinterpret_cast<const void*>(&RecordDiscovery)));
  ObserveDiscoveries();
  auto observer = std::make_shared<Observed>();
  observer->throw_at_end_of = 0;
  SetNativeCollectiveObserver(observer);

  void* ctx = nullptr;
  int mask = 0;
  Expect(v5->init(&ctx, 0xab, &mask, "workload", 1, 2, 0, nullptr) == ncclSuccess && ctx != nullptr, "init");
  for (int i = 0; i < 2; ++i) {
    ncclProfilerEventDescr_v5_t d{};
    d.type = ncclProfileColl;
    d.coll.func = "AllReduce";
    d.coll.datatype = "ncclFloat32";
    d.coll.count = 1024;
    d.coll.nChannels = 1;
    d.coll.algo = "RING";
    d.coll.proto = "SIMPLE";
    void* coll = nullptr;
    Expect(v5->startEvent(ctx, &coll, &d) == ncclSuccess && coll != nullptr, "start a collective");
    v5->stopEvent(coll);
    ncclProfilerEventDescr_v5_t ch{};
    ch.type = ncclProfileKernelCh;
    ch.parentObj = coll;
    void* channel = nullptr;
    Expect(v5->startEvent(ctx, &channel, &ch) == ncclSuccess && channel != nullptr, "start a channel");
    v5->stopEvent(channel);  // the last stop: the plugin records the end (the first one throws)
  }
  v5->finalize(ctx);
  SetNativeCollectiveObserver(nullptr);
  Expect(discovered.size() == 1 && discovered[0] == "nccl.comm_init nccl:00000000000000ab/2 (workload) #1",
         "the plugin's comm_init: " + (discovered.empty() ? std::string("none") : discovered[0]));
  const std::vector<std::string> want = {"begin nccl:00000000000000ab 0 all_reduce float32 1024",
                                         "begin nccl:00000000000000ab 1 all_reduce float32 1024",
                                         "end nccl:00000000000000ab 1"};
  Expect(observer->events == want, "the collectives seen: " + std::to_string(observer->events.size()) + " events");
  std::printf("ok: nccl_profiler: %zu collective events, the throwing end caught by the plugin\n", observer->events.size());
}

// The CUPTI subscriber, as the CUDA driver loads it. Without a driver it says why in one line and
// records nothing; with one it subscribes. Either way InitializeInjection returns 1.
void Cupti(const char* path) {
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    Expect(false, std::string("dlopen: ") + dlerror());
    return;
  }
  auto initialize = reinterpret_cast<int (*)()>(dlsym(lib, "InitializeInjection"));
  if (initialize == nullptr) {
    Expect(false, "no InitializeInjection");
    return;
  }
  ExpectPrivateRuntime(path);
  Expect(initialize() == 1 && initialize() == 1, "InitializeInjection returns 1");
  std::printf("ok: cupti: InitializeInjection returned 1 twice\n");
}

// The PMPI wrappers, preloaded: the program's own MPI calls go through them.
void Pmpi(int* argc, char*** argv) {
  // The MPI_Init this program calls is the preloaded wrapper's.
  const std::string wrappers = ObjectOf(reinterpret_cast<const void*>(&MPI_Init));
  Expect(wrappers.find("liblockstep_pmpi") != std::string::npos, "MPI_Init comes from " + wrappers + ", not liblockstep_pmpi.so");
  ExpectPrivateRuntime(wrappers);
  ObserveDiscoveries();
  Expect(MPI_Init(argc, argv) == MPI_SUCCESS, "MPI_Init");
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm split = MPI_COMM_NULL, dup = MPI_COMM_NULL;
  Expect(MPI_Comm_split(MPI_COMM_WORLD, 0, rank, &split) == MPI_SUCCESS, "MPI_Comm_split");
  Expect(MPI_Comm_dup(split, &dup) == MPI_SUCCESS, "MPI_Comm_dup");
  ProgramWork("mpi-rank" + std::to_string(rank));
  Expect(discovered.size() == 3, "the wrappers recorded " + std::to_string(discovered.size()) +
                                     " calls of 3 (is liblockstep_pmpi.so preloaded?)");
  if (discovered.size() == 3) {
    const std::string tail = "/" + std::to_string(size);
    Expect(discovered[0] == "mpi.init mpi:world #1", discovered[0]);
    Expect(discovered[1].rfind("mpi.comm_split mpi:", 0) == 0 && discovered[1].find(tail + " #2") != std::string::npos,
           discovered[1]);
    Expect(discovered[2].rfind("mpi.comm_dup mpi:", 0) == 0, discovered[2]);
  }
  MPI_Comm_free(&dup);
  MPI_Comm_free(&split);
  MPI_Finalize();
  std::printf("ok: pmpi rank %d: %zu calls recorded\n", rank, discovered.size());
}

}  // namespace
}  // namespace lockstep

int main(int argc, char** argv) {
  using namespace lockstep;  // NOLINT
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "process_log" && argc == 2) {
    ProgramWork("before");
    ProcessLog();
  } else if (mode == "nccl_profiler" && argc == 3) {
    ProgramWork("before");
    NcclProfiler(argv[2]);
  } else if (mode == "cupti" && argc == 3) {
    ProgramWork("before");
    Cupti(argv[2]);
  } else if (mode == "pmpi" && argc == 2) {
    Pmpi(&argc, &argv);
    return failures == 0 ? 0 : 1;
  } else {
    std::fprintf(stderr, "usage: injected_object_workload process_log | nccl_profiler PLUGIN | cupti LIBRARY | pmpi\n");
    return 2;
  }
  ProgramWork("after");
  return failures == 0 ? 0 : 1;
}
