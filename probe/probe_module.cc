// _lockstep_probe: the compiled part of the Python probe. It exposes the project's trace writer,
// tensor digest and collective recording to lockstep/probe.py; it has no logic of its own about
// when to record (that is the Python side's, which sees the program's optimizers and models).
// Errors become RuntimeError with the Status's text; probe.py prints them as `lockstep probe: ...`.
#include <torch/csrc/utils/pybind.h>
#include <torch/version.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "harness/capture/async_capture_setting.h"
#include "harness/core/build_info.h"
#include "harness/core/cuda_driver_version.h"
#include "harness/core/lifeline.h"
#include "harness/discovery/discovery_log.h"
#include "harness/discovery/native_collective_log.h"
#include "harness/trace/digest.h"
#include "harness/trace/read_yardstick.h"
#include "harness/trace/trace_writer.h"
#include "harness/trace/world_settings.h"
#include "probe/capture_list.h"
#include "probe/collective_site.h"
#include "probe/deferred_steps.h"
#include "probe/gradient_list.h"
#include "probe/held_works.h"
#include "probe/probe_session.h"
#include "probe/recording_process_group.h"

namespace py = pybind11;

namespace lockstep::probe {
namespace {

void ThrowIfError(const Status& s) {
  if (!s.ok()) throw std::runtime_error(s.ToString());
}

// A list's entries as the probe names them: `groups[i]` is tensor i's replica group id
// (ProbeSession::DefineReplicaGroup), 0 for the whole world, -1 for a tensor no other rank must
// equal; empty: all 0.
std::shared_ptr<CaptureList> MakeCaptureList(const ProbeSession& session, const std::string& kind_name,
                                             const std::vector<std::string>& names, bool replicated,
                                             const std::vector<int>& groups) {
  const std::optional<TensorKind> kind = FromString<TensorKind>(kind_name);
  if (!kind) throw std::invalid_argument("unknown tensor kind '" + kind_name + "'");
  if (!groups.empty() && groups.size() != names.size()) {
    throw std::invalid_argument("capture: groups and names differ in length");
  }
  std::vector<ListedTensor> entries(names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    ListedTensor& e = entries[i];
    e.name = names[i];
    e.shared = replicated;
    if (!groups.empty() && groups[i] < 0) {
      e.shared = false;  // held by this rank alone (a shard), or Partial: not compared
    } else if (!groups.empty() && groups[i] != 0) {
      Result<std::shared_ptr<const ReplicaGroup>> g = session.ReplicaGroupById(groups[i]);
      ThrowIfError(g.status());
      e.group = std::move(g).value();
    }
  }
  return std::make_shared<CaptureList>(*kind, std::move(entries), session.deferred());
}

// Whether the program's work on tensors like `t` is queued where DeferredSteps orders a capture:
// host tensors, or CUDA tensors whose device's current stream is its default one (the legacy
// default stream, handle 0). Asked of torch.cuda with the GIL held, only for a deferrable list.
bool MayDefer(const at::Tensor* t) {
  if (t == nullptr || !t->defined() || !t->is_cuda()) return true;
  const py::object stream = py::module_::import("torch.cuda").attr("current_stream")(t->get_device());
  return stream.attr("cuda_stream").cast<uint64_t>() == 0;
}

// The records of `tensors` under `list`'s names, as lockstep-rank captures a step
// (harness/capture/tensor_capture.h): the bookkeeping tensor by tensor, then every byte hashed
// and summed in one pass.
// `deferrable`: the digests may land later (DeferredSteps), where the session defers captures.
Captured CaptureWith(CaptureList& list, const std::vector<at::Tensor>& tensors, bool deferrable) {
  bool may_defer = deferrable && list.deferrable();
  if (may_defer && !MayDefer(tensors.empty() ? nullptr : &tensors.front())) {
    may_defer = false;
    list.NoteDigestedAtOnce();
  }
  py::gil_scoped_release no_gil;  // hashing takes a while; the program's other threads may run
  Result<Captured> captured = list.Capture(tensors, may_defer);
  ThrowIfError(captured.status());
  return std::move(captured).value();
}

// The gradients of `params` that have one now (`present[i]`), read by the list itself at every
// capture (probe/gradient_list.h), under the names and groups of a capture list.
std::shared_ptr<GradientList> MakeGradientList(const ProbeSession& session, const std::vector<std::string>& names,
                                               std::vector<at::Tensor> params, std::vector<bool> present,
                                               bool replicated, const std::vector<int>& groups) {
  Result<std::unique_ptr<GradientList>> list = GradientList::Make(
      MakeCaptureList(session, "grad", names, replicated, groups), std::move(params), std::move(present));
  ThrowIfError(list.status());
  return std::shared_ptr<GradientList>(std::move(list).value());
}

// The gradients' records now, or None when the parameters holding one are not the list's.
std::optional<Captured> CaptureGradients(GradientList& list) {
  bool may_defer = list.deferrable();
  if (may_defer && !MayDefer(list.first_param())) {
    may_defer = false;
    list.NoteDigestedAtOnce();
  }
  py::gil_scoped_release no_gil;
  Result<std::optional<Captured>> captured = list.Capture(may_defer);
  ThrowIfError(captured.status());
  return std::move(captured).value();
}

// The reused lists' identity check (probe/lockstep/_capture_lists.py), walked in C rather than
// by a Python loop over every tensor: whether the values held by `owners`, in order, are exactly
// the objects of `seen` (identity, never ==: a tensor's == compares values). Each owner, or its
// attribute `attr` (`item`: its item `attr`, a param group's "params"), is a dict (its values), a
// list or tuple (its items) or None (nothing); anything else is no match.
bool SameValues(const py::list& owners, const std::string& attr, bool item, const py::list& seen) {
  const Py_ssize_t n = PyList_GET_SIZE(seen.ptr());
  const py::str key(attr);
  Py_ssize_t at = 0;
  for (const py::handle owner : owners) {
    py::object held;
    if (attr.empty()) {
      held = py::reinterpret_borrow<py::object>(owner);
    } else {
      // A module's `_parameters` is in its instance dict: read there, not through nn.Module's
      // attribute hooks. A missing attribute or item is no match (the list is built anew), never
      // an error.
      PyObject* found = nullptr;
      if (!item) {
        PyObject* instance_dict = PyObject_GenericGetDict(owner.ptr(), nullptr);  // a new reference
        if (instance_dict == nullptr) {
          PyErr_Clear();
        } else {
          found = PyDict_Check(instance_dict) ? PyDict_GetItem(instance_dict, key.ptr()) : nullptr;
          // Borrowed from a dict the owner keeps: it outlives this call (the GIL is held).
          Py_DECREF(instance_dict);
        }
      }
      if (found != nullptr) {
        held = py::reinterpret_borrow<py::object>(found);
      } else {
        PyObject* got = item ? PyObject_GetItem(owner.ptr(), key.ptr()) : PyObject_GetAttr(owner.ptr(), key.ptr());
        if (got == nullptr) {
          PyErr_Clear();
          return false;
        }
        held = py::reinterpret_steal<py::object>(got);
      }
    }
    PyObject* o = held.ptr();
    if (o == Py_None) continue;
    if (PyDict_Check(o)) {
      Py_ssize_t pos = 0;
      PyObject* dict_key = nullptr;
      PyObject* value = nullptr;
      while (PyDict_Next(o, &pos, &dict_key, &value)) {
        if (at >= n || PyList_GET_ITEM(seen.ptr(), at) != value) return false;
        ++at;
      }
    } else if (PyList_Check(o) || PyTuple_Check(o)) {
      const Py_ssize_t size = PySequence_Fast_GET_SIZE(o);
      PyObject** items = PySequence_Fast_ITEMS(o);
      for (Py_ssize_t i = 0; i < size; ++i) {
        if (at >= n || PyList_GET_ITEM(seen.ptr(), at) != items[i]) return false;
        ++at;
      }
    } else {
      return false;
    }
  }
  return at == n;
}

// The parameters among `parts` whose digest differs from the one `watched` holds under the same
// name: what this rank wrote into its weights between the capture of `watched` (right after its
// optimizer step) and this record.
std::vector<std::string> EditedAfterUpdate(const std::vector<const Captured*>& parts, const Captured& watched) {
  std::map<std::string_view, const TensorRecord*> after_update;
  for (const TensorRecord& t : watched.records) after_update.emplace(t.name, &t);
  std::vector<std::string> edited;
  for (const Captured* p : parts) {
    for (const TensorRecord& t : p->records) {
      if (t.kind != TensorKind::kParam) continue;
      auto it = after_update.find(t.name);
      if (it != after_update.end() && !(it->second->digest == t.digest)) edited.push_back(t.name);
    }
  }
  return edited;
}

// A tensor-parallel module's replicated input over a step, as probe.py hands it over: (module,
// input, the group's world ranks, the group's label, the input captured at each forward).
using TpInput = std::tuple<std::string, std::string, std::vector<int>, std::string, std::vector<const Captured*>>;

// One digest per module input and step: the forwards' digests combined in forward order, with
// their count in the descriptor (the digest's own second level, harness/trace/digest.h), so that
// a rank that ran another number of forwards differs too.
std::vector<TpInputRecord> FoldTpInputs(const std::vector<TpInput>& inputs) {
  std::vector<TpInputRecord> out;
  out.reserve(inputs.size());
  for (const auto& [module, input, ranks, label, forwards] : inputs) {
    std::vector<Digest128> digests;
    for (const Captured* c : forwards) {
      for (const TensorRecord& t : c->records) digests.push_back(t.digest);
    }
    TpInputRecord r;
    r.module = module;
    r.input = input;
    r.forwards = static_cast<int64_t>(digests.size());
    r.digest = CombineChunkDigests(digests, "tp_input:" + std::to_string(digests.size()));
    r.group = ReplicaGroup{ranks, label};
    out.push_back(std::move(r));
  }
  return out;
}

// A step's record from its parts, whose digests and norms are set. `base` holds what was known
// when the program's step ended (step, loss, lr, wall_s, settings, tensor-parallel inputs).
StepRecord AssembleStep(StepRecord base, const std::vector<const Captured*>& parts, const Captured* watched) {
  StepRecord record = std::move(base);
  if (watched != nullptr) record.edited_after_update = EditedAfterUpdate(parts, *watched);
  size_t n = 0;
  for (const Captured* p : parts) n += p->records.size();
  record.tensors.reserve(n);
  double grad_sq = 0.0;
  bool any_grad = false;
  for (const Captured* p : parts) {
    for (const TensorRecord& t : p->records) {
      if (t.kind == TensorKind::kGrad) {
        grad_sq += t.norm * t.norm;
        any_grad = true;
      }
      record.tensors.push_back(t);
    }
  }
  // The global norm of the gradients the optimizer saw, from their recorded norms.
  record.grad_norm = any_grad ? std::sqrt(grad_sq) : std::numeric_limits<double>::quiet_NaN();
  return record;
}

// Writes the steps whose deferred digests have landed (all of them with `wait`).
void FlushDeferred(ProbeSession& session, bool wait) {
  DeferredSteps* deferred = session.deferred().get();
  if (deferred == nullptr) return;
  Status flushed;
  {
    py::gil_scoped_release no_gil;  // waiting for the device, the program's other threads may run
    flushed = deferred->Flush(wait, [&](const StepRecord& r) { return session.WriteStep(r); });
  }
  if (!flushed.ok() && wait) {
    // The trace names what it will never hold: the steps trained whose records were lost.
    std::string lost;
    for (int64_t step : deferred->StepsInFlight()) lost += (lost.empty() ? "" : ", ") + std::to_string(step);
    (void)session.WriteLog("asynchronous capture: steps not recorded: " + (lost.empty() ? "none" : lost) + " (" +
                           flushed.ToString() + ")");
  }
  ThrowIfError(flushed);
}

void WriteStep(ProbeSession& session, int64_t step, std::optional<double> loss, std::optional<double> lr,
               const std::vector<const Captured*>& parts,
               const std::vector<std::pair<std::string, double>>& optimizer, const Captured* watched,
               const std::vector<TpInput>& tp_inputs, std::optional<int64_t> forwards) {
  StepRecord base;
  base.optimizer = optimizer;
  base.forwards = forwards;
  base.tp_inputs = FoldTpInputs(tp_inputs);
  base.step = step;
  base.loss = loss.value_or(std::numeric_limits<double>::quiet_NaN());
  base.loss_reported = loss.has_value();
  base.lr = lr.value_or(0.0);
  base.wall_s = session.WallSeconds();
  const std::shared_ptr<DeferredSteps>& deferred = session.deferred();
  if (deferred == nullptr) {
    ThrowIfError(session.WriteStep(AssembleStep(std::move(base), parts, watched)));
    return;
  }
  // Copies: the parts are the program's probe's objects, the step may be written later.
  std::vector<Captured> copies;
  copies.reserve(parts.size());
  for (const Captured* p : parts) copies.push_back(*p);
  std::optional<Captured> watched_copy;
  if (watched != nullptr) watched_copy = *watched;
  deferred->Add(step, std::move(copies), std::move(watched_copy),
                [base = std::move(base)](const std::vector<Captured>& landed, const Captured* w) {
                  std::vector<const Captured*> pointers;
                  for (const Captured& c : landed) pointers.push_back(&c);
                  return AssembleStep(base, pointers, w);
                });
  FlushDeferred(session, /*wait=*/false);
}

std::shared_ptr<ProbeSession> OpenSession(const std::string& path, const py::dict& h) {
  TraceHeader header;
  header.rank = h["rank"].cast<int>();
  header.world_size = h["world_size"].cast<int>();
  header.local_rank = h["local_rank"].cast<int>();
  header.host = h["host"].cast<std::string>();
  header.pid = h["pid"].cast<int64_t>();
  header.device = h["device"].cast<std::string>();
  header.backend = h["backend"].cast<std::string>();
  header.scenario_id = h["scenario_id"].cast<std::string>();
  header.versions = BuildInfoMap();
  for (const auto& [k, v] : h["versions"].cast<py::dict>()) header.versions[k.cast<std::string>()] = v.cast<std::string>();
  header.versions["cuda_driver"] = CudaDriverVersion();
  // Read here, after the program's own os.environ changes (which Python passes to the C
  // environment), from the same list lockstep-rank records.
  header.environment = RecordedEnvironment();
  // The digests off the host's critical path (probe/deferred_steps.h): asked for, not the default
  // until a GPU run has shown it (docs/GPU.md), as lockstep-rank's. Read before the trace is
  // opened: a value refused leaves no trace behind.
  const char* async = std::getenv(kAsyncCaptureEnv);
  Result<std::shared_ptr<DeferredSteps>> deferred = DeferredSteps::FromSetting(async ? async : "");
  ThrowIfError(deferred.status());
  Result<std::shared_ptr<ProbeSession>> session = ProbeSession::Open(path, header);
  ThrowIfError(session.status());
  if (*deferred) {
    session.value()->set_deferred(std::move(deferred).value());
    ThrowIfError(session.value()->WriteLog(std::string("asynchronous capture: on (") + kAsyncCaptureEnv + "=" + async + ")"));
  }
  // Every discovery call of this process from now on, and those recorded before, into the trace.
  std::weak_ptr<ProbeSession> weak = session.value();
  SetDiscoveryObserver([weak](const DiscoveryRecord& r) {
    if (std::shared_ptr<ProbeSession> s = weak.lock()) s->WriteDiscovery(r);
  });
  // NCCL's own view of the collectives, when its profiler plugin is loaded (`lockstep exec` sets
  // NCCL_PROFILER_PLUGIN). The observer shares ownership of the session: NCCL's proxy thread may
  // report until the process ends.
  SetNativeCollectiveObserver(
      std::shared_ptr<NativeCollectiveObserver>(session.value(), &session.value()->native_collectives()));
  // Like lockstep-rank: gone within a second of the `lockstep exec` that started this process.
  WatchLifeline();
  return std::move(session).value();
}

}  // namespace
}  // namespace lockstep::probe

PYBIND11_MODULE(_lockstep_probe, m) {
  using namespace lockstep;
  using namespace lockstep::probe;
  m.doc() = "lockstep's trace writer, tensor digest and collective recording for the Python probe";
  m.attr("TORCH_VERSION_BUILT") = TORCH_VERSION;
  m.def("trace_file_name", &TraceFileName, py::arg("rank"));
  m.def("lockstep_version", [] { return GetBuildInfo().version; });

  py::class_<CaptureList, std::shared_ptr<CaptureList>>(m, "CaptureList")
      .def_property_readonly("size", &CaptureList::size)
      .def("capture", [](CaptureList& list, const std::vector<at::Tensor>& tensors) {
             return CaptureWith(list, tensors, /*deferrable=*/true);
           }, py::arg("tensors"));
  py::class_<GradientList, std::shared_ptr<GradientList>>(m, "GradientList").def("capture", &CaptureGradients);
  py::class_<Captured>(m, "Captured").def_property_readonly("size", [](const Captured& c) { return c.records.size(); });

  py::class_<ProbeSession, std::shared_ptr<ProbeSession>>(m, "Session")
      .def_property_readonly("path", &ProbeSession::path)
      .def_property("step", &ProbeSession::step, &ProbeSession::set_step)
      .def("wall_seconds", &ProbeSession::WallSeconds)
      .def("capture",
           [](ProbeSession& s, const std::string& kind, const std::vector<std::string>& names,
              const std::vector<at::Tensor>& tensors, bool replicated, const std::vector<int>& groups, bool deferrable) {
             if (names.size() != tensors.size()) throw std::invalid_argument("capture: names and tensors differ in length");
             return CaptureWith(*MakeCaptureList(s, kind, names, replicated, groups), tensors, deferrable);
           },
           py::arg("kind"), py::arg("names"), py::arg("tensors"), py::arg("replicated") = true,
           // `deferrable`: a part of a step record, whose digests may land later; not the
           // tensor-parallel inputs, folded into the record when it is written.
           py::arg("groups") = std::vector<int>{}, py::arg("deferrable") = false)
      // A list captured at every step under the same names and groups (_capture_lists.py).
      .def("capture_list", &MakeCaptureList, py::arg("kind"), py::arg("names"), py::arg("replicated") = true,
           py::arg("groups") = std::vector<int>{})
      // An optimizer's gradients, read from its parameters at every step (_capture_lists.py).
      .def("gradient_list", &MakeGradientList, py::arg("names"), py::arg("params"), py::arg("present"),
           py::arg("replicated") = true, py::arg("groups") = std::vector<int>{})
      .def("define_replica_group", &ProbeSession::DefineReplicaGroup, py::arg("id"), py::arg("ranks"), py::arg("label"))
      .def("write_step", &WriteStep, py::arg("step"), py::arg("loss"), py::arg("lr"), py::arg("parts"),
           py::arg("optimizer") = std::vector<std::pair<std::string, double>>{}, py::arg("watched") = nullptr,
           py::arg("replicated_inputs") = std::vector<TpInput>{}, py::arg("forwards") = std::nullopt)
      .def("heartbeat", [](ProbeSession& s) {
             FlushDeferred(s, /*wait=*/false);
             ThrowIfError(s.WriteHeartbeat());
           })
      // Every deferred step first: the footer is the trace's last record.
      .def("footer", [](ProbeSession& s, int64_t steps, const std::string& status) {
             FlushDeferred(s, /*wait=*/true);
             if (s.deferred()) ThrowIfError(s.WriteLog("asynchronous capture: " + s.deferred()->Summary()));
             ThrowIfError(s.WriteFooter(TraceFooter{steps, status}));
           })
      // Writes the deferred steps whose digests have landed (LOCKSTEP_ASYNC_CAPTURE); `wait`: all.
      .def("flush_captures", [](ProbeSession& s, bool wait) { FlushDeferred(s, wait); }, py::arg("wait"))
      .def("log", [](ProbeSession& s, const std::string& line) { ThrowIfError(s.WriteLog(line)); })
      .def("record_error", [](ProbeSession& s) { return s.record_status().ok() ? std::string() : s.record_status().ToString(); })
      .def("install_recording_backends",
           [](const std::shared_ptr<ProbeSession>& session, const c10::intrusive_ptr<c10d::ProcessGroup>& group,
              const std::string& name) { return InstallRecordingBackends(*group, session, name); },
           py::arg("group"), py::arg("name"));

  m.def("open_session", &OpenSession, py::arg("path"), py::arg("header"));
  // From the first optimizer step on, native recorders' calls (MPI's, NCCL's, CUDA's) belong to
  // the step the program is in, as the Python-level ones do (probe.record_discovery).
  m.def("set_discovery_context", [](const std::string& phase, int64_t step) { SetDiscoveryContext(phase, step); });
  // A discovery call seen in Python (torch.distributed), with its phase, step, Python stack and what
  // a group-making call asked for (`comm`, compared by group_agreement).
  m.def("record_discovery",
        [](const std::string& name, const std::string& phase, int64_t step, const std::string& where,
           const std::string& comm) { RecordDiscoveryAt(name, phase, step, where, comm); },
        py::arg("name"), py::arg("phase"), py::arg("step"), py::arg("where") = "", py::arg("comm") = "");
  // Where the program called the collective this thread is about to issue (_sites.py), written
  // into its begin record; "" after the call.
  m.def("set_collective_site", &SetCollectiveSite, py::arg("where"));
  // Whether a reused list of tensors still holds (_capture_lists.py), checked in C.
  m.def("same_values", &SameValues, py::arg("owners"), py::arg("attr"), py::arg("item"), py::arg("seen"));
  // The yardstick of bench/probe_overhead.py: (wall, this thread's CPU) seconds that one read of
  // these tensors' bytes takes (harness/trace/read_yardstick.h), to set the probe's own time in its
  // hooks against (probe.busy_seconds, also wall and thread CPU). Contiguous CPU tensors.
  m.def("read_seconds", [](const std::vector<at::Tensor>& tensors) {
    for (const at::Tensor& t : tensors) {
      if (t.defined() && (!t.device().is_cpu() || !t.is_contiguous() || t.is_sparse())) {
        throw std::invalid_argument("read_seconds: only contiguous CPU tensors, got one on " + t.device().str());
      }
    }
    py::gil_scoped_release no_gil;
    auto thread_cpu = [] {
      timespec ts{};
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
      return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
    };
    const auto t0 = std::chrono::steady_clock::now();
    const double c0 = thread_cpu();
    uint64_t sum = 0;
    for (const at::Tensor& t : tensors) {
      if (t.defined()) sum += SumBytesAsWords(t.const_data_ptr(), static_cast<size_t>(t.numel()) * t.element_size());
    }
    const double cpu = thread_cpu() - c0;
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    // The sum is used, so the loads stay.
    volatile uint64_t sink = sum;
    (void)sink;
    return std::make_pair(wall, cpu);
  });
  // At exit (probe.py's _let_go): the works the recording backend held go here, on the main
  // thread while Python still runs, once their backends' workers let go of them
  // (held_works.h). Returns whether every worker had let go within `timeout_s`.
  m.def("let_go_of_works", [](double timeout_s) {
    bool unshared = false;
    {
      py::gil_scoped_release no_gil;  // a worker letting go may need the GIL
      unshared = WaitUntilWorksAreUnshared(std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000)));
    }
    LetGoOfAllWorks();
    return unshared;
  }, py::arg("timeout_s"));
  m.def("is_recording_group", [](const c10::intrusive_ptr<WrappedGroup>& g) {
    return dynamic_cast<RecordingProcessGroup*>(g.get()) != nullptr;
  });
}
