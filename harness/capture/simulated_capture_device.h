// A CaptureDevice made of host threads, so that the capture pipeline's ordering is tested on a
// machine without a GPU: each stream is a thread running its queue in order, an event is recorded
// on one stream and waited for by another as CUDA's are (a wait is for the latest record at the
// time of the wait), and a slot's "device" results become visible to the host only when its landing
// copy has run. The "kernels" compute the chunk digests and square sums on the CPU by the same
// definitions (digest.h, sum_of_squares.h), so results can be compared bit for bit with the
// synchronous path.
//
// What makes it a test bed rather than a copy:
// - Delays are gates the test opens, never sleeps: a capture's reads, a capture's landing copy and
//   the training stream's writes each wait for a permit, so a test puts the streams exactly where
//   it wants them whatever the machine's load.
// - Violations are detected: a training-stream write to bytes a capture is reading, or a capture
//   reading bytes the training stream is writing, is recorded (violations()): a test that removes
//   a wait sees it.
// - Crash() stops every stream where it is, forever, as a device that dies or a rank killed with
//   captures in flight.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "harness/capture/capture_device.h"

namespace lockstep {

struct SimulatedCaptureOptions {
  int side_streams = 1;       // > 1: captures round-robin over them, so a later one can land first
  bool gate_reads = false;    // a capture's reads wait for AllowRead(its sequence number)
  bool gate_landing = false;  // a capture's copy to the host waits for AllowLanding(...)
  bool gate_training = false; // each training write waits for a permit (AllowTrainingWrites)
};

// Where a stream is, for a test to wait on (AwaitSettled).
enum class SimStreamState { kIdle, kRunning, kWaitingEvent, kWaitingGate, kStopped };

class SimulatedCaptureDevice : public CaptureDevice {
 public:
  explicit SimulatedCaptureDevice(SimulatedCaptureOptions options = {});
  ~SimulatedCaptureDevice() override;
  SimulatedCaptureDevice(const SimulatedCaptureDevice&) = delete;
  SimulatedCaptureDevice& operator=(const SimulatedCaptureDevice&) = delete;

  Status Queue(int slot, const std::vector<CaptureBuffer>& buffers) override;
  Result<bool> Landed(int slot) override;
  Status WaitLanded(int slot) override;
  Status TrainingWaitsForReads(int slot) override;
  Status ReadResults(int slot, std::vector<Digest128>& chunk_digests, std::vector<double>& chunk_square_sums) override;

  // The training stream's work: `write` runs on the training stream's thread, in order with the
  // events recorded there, over [data, data + nbytes), which it may change.
  void QueueTrainingWrite(void* data, size_t nbytes, std::function<void()> write);

  // Gates (options): capture `sequence` (0 for the first Queue, 1 for the next, ...).
  void AllowRead(uint64_t sequence);
  void AllowLanding(uint64_t sequence);
  void AllowAllReads();
  void AllowAllLandings();
  void AllowTrainingWrites(int n);

  // Blocks until no stream can move without the test (each is idle with an empty queue, or waits
  // for a gate or for an event no stream will reach before a gate opens), then says where the
  // training stream (or side stream `i`) is.
  SimStreamState AwaitTrainingSettled();
  SimStreamState AwaitSideSettled(int i);
  // Blocks until `n` captures are inside their reads, held at the read gate.
  void AwaitReadsHeld(int n);
  // Blocks until captures `sequences` have landed (in any order).
  void AwaitLanded(const std::vector<uint64_t>& sequences);
  // Blocks until a host thread is inside WaitLanded.
  void AwaitHostWaiting();

  // Stops every stream forever, wherever it is: what was not landed never lands; WaitLanded fails
  // instead of hanging.
  void Crash();

  std::vector<std::string> violations() const;
  int slots_used() const;  // distinct slots ever queued

 private:
  struct Event {
    uint64_t recorded = 0;   // records queued
    uint64_t completed = 0;  // records the stream has reached
  };
  using Op = std::function<bool(std::unique_lock<std::mutex>&)>;  // false: stopped, abandon the queue
  struct Stream {
    std::deque<Op> ops;
    SimStreamState state = SimStreamState::kIdle;
    const std::function<bool()>* ready = nullptr;  // while it waits: whether it may go on
    std::thread thread;
  };
  struct Slot {
    Event begun, reads_done, landed;
    uint64_t sequence = 0;
    std::vector<Digest128> device_digests, host_digests;
    std::vector<double> device_sums, host_sums;
  };
  using Range = std::pair<uintptr_t, uintptr_t>;

  void Run(Stream& stream);
  void Enqueue(Stream& stream, Op op);
  void RecordOn(Stream& stream, Event& event);
  void WaitOn(Stream& stream, Event& event);
  // Waits with the stream in `state` until `ready`; false when the device stops first.
  bool WaitAs(std::unique_lock<std::mutex>& lock, Stream& stream, SimStreamState state,
              const std::function<bool()>& ready);
  // Whether `stream` can do nothing more until the test acts: idle with nothing queued, stopped, or
  // waiting for something not yet there (an event another stream has not reached, a gate).
  bool Stuck(const Stream& stream) const;
  SimStreamState AwaitSettled(Stream& stream);
  static bool Overlaps(const std::multiset<Range>& ranges, Range r);
  Slot& SlotAt(int slot);

  const SimulatedCaptureOptions options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopped_ = false;  // Crash() or destruction
  Stream training_;
  std::deque<Stream> side_;  // deque: streams never move (their threads hold references)
  std::deque<Slot> slots_;
  uint64_t next_sequence_ = 0;
  std::set<uint64_t> reads_allowed_, landings_allowed_, landed_;
  bool all_reads_ = false, all_landings_ = false;
  int training_permits_ = 0;
  int reads_held_ = 0;
  int host_waiting_ = 0;
  std::multiset<Range> reading_, writing_;
  std::vector<std::string> violations_;
  std::set<int> slots_used_;
};

}  // namespace lockstep
