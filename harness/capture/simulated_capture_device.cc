#include "harness/capture/simulated_capture_device.h"

#include <algorithm>

#include "harness/trace/digest.h"
#include "harness/trace/sum_of_squares.h"

namespace lockstep {

SimulatedCaptureDevice::SimulatedCaptureDevice(SimulatedCaptureOptions options) : options_(options) {
  training_.thread = std::thread([this] { Run(training_); });
  for (int i = 0; i < std::max(1, options_.side_streams); ++i) {
    Stream& s = side_.emplace_back();
    s.thread = std::thread([this, &s] { Run(s); });
  }
}

SimulatedCaptureDevice::~SimulatedCaptureDevice() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_ = true;
  }
  cv_.notify_all();
  training_.thread.join();
  for (Stream& s : side_) s.thread.join();
}

void SimulatedCaptureDevice::Run(Stream& stream) {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stopped_ || !stream.ops.empty(); });
    if (stopped_) break;
    Op op = std::move(stream.ops.front());
    stream.ops.pop_front();
    stream.state = SimStreamState::kRunning;
    const bool went_on = op(lock);
    stream.state = SimStreamState::kIdle;
    cv_.notify_all();
    if (!went_on) break;
  }
  stream.state = SimStreamState::kStopped;
  cv_.notify_all();
}

void SimulatedCaptureDevice::Enqueue(Stream& stream, Op op) {
  stream.ops.push_back(std::move(op));
  cv_.notify_all();
}

bool SimulatedCaptureDevice::WaitAs(std::unique_lock<std::mutex>& lock, Stream& stream, SimStreamState state,
                                    const std::function<bool()>& ready) {
  stream.state = state;
  stream.ready = &ready;
  cv_.notify_all();
  cv_.wait(lock, [&] { return stopped_ || ready(); });
  stream.ready = nullptr;
  stream.state = SimStreamState::kRunning;
  return !stopped_;
}

// As cudaEventRecord: the event completes when the stream reaches this point.
void SimulatedCaptureDevice::RecordOn(Stream& stream, Event& event) {
  const uint64_t record = ++event.recorded;
  Enqueue(stream, [this, &event, record](std::unique_lock<std::mutex>&) {
    event.completed = std::max(event.completed, record);
    cv_.notify_all();
    return true;
  });
}

// As cudaStreamWaitEvent: the stream waits for the event's latest record at the time of this call.
void SimulatedCaptureDevice::WaitOn(Stream& stream, Event& event) {
  const uint64_t record = event.recorded;
  Enqueue(stream, [this, &stream, &event, record](std::unique_lock<std::mutex>& lock) {
    return WaitAs(lock, stream, SimStreamState::kWaitingEvent, [&] { return event.completed >= record; });
  });
}

bool SimulatedCaptureDevice::Overlaps(const std::multiset<Range>& ranges, Range r) {
  if (r.first == r.second) return false;
  for (const Range& x : ranges) {
    if (x.first < r.second && r.first < x.second) return true;
  }
  return false;
}

SimulatedCaptureDevice::Slot& SimulatedCaptureDevice::SlotAt(int slot) {
  while (slots_.size() <= static_cast<size_t>(slot)) slots_.emplace_back();
  return slots_[static_cast<size_t>(slot)];
}

Status SimulatedCaptureDevice::Queue(int slot, const std::vector<CaptureBuffer>& buffers) {
  std::lock_guard<std::mutex> guard(mu_);
  if (stopped_) return UnavailableError("simulated device: stopped");
  Slot& s = SlotAt(slot);
  if (s.landed.completed < s.landed.recorded) {
    return InternalError("simulated device: slot " + std::to_string(slot) + " queued again before it landed");
  }
  slots_used_.insert(slot);
  const uint64_t sequence = next_sequence_++;
  s.sequence = sequence;
  Stream& side = side_[sequence % side_.size()];
  RecordOn(training_, s.begun);
  WaitOn(side, s.begun);
  // The "kernels": every chunk's digest and square sum, by the CPU's definitions. The bytes are
  // marked as being read for the whole of it, gate included, so a write meanwhile is caught.
  Enqueue(side, [this, &side, &s, sequence, buffers](std::unique_lock<std::mutex>& lock) {
    std::vector<Range> ranges;
    for (const CaptureBuffer& b : buffers) {
      const auto begin = reinterpret_cast<uintptr_t>(b.data);
      ranges.emplace_back(begin, begin + b.nbytes);
      if (Overlaps(writing_, ranges.back())) {
        violations_.push_back("capture " + std::to_string(sequence) +
                              " read bytes the training stream was still writing");
      }
    }
    for (const Range& r : ranges) reading_.insert(r);
    ++reads_held_;
    const bool went_on =
        !options_.gate_reads || WaitAs(lock, side, SimStreamState::kWaitingGate,
                                       [&] { return all_reads_ || reads_allowed_.count(sequence) > 0; });
    --reads_held_;
    for (const Range& r : ranges) reading_.erase(reading_.find(r));
    if (!went_on) return false;
    s.device_digests.clear();
    s.device_sums.clear();
    for (const CaptureBuffer& b : buffers) {
      const auto* p = static_cast<const unsigned char*>(b.data);
      size_t at = 0;
      do {
        const size_t len = std::min(kDigestChunkBytes, b.nbytes - at);
        s.device_digests.push_back(DigestChunk(p + at, len));
        s.device_sums.push_back(SumOfSquaresOfBytes(b.squares, p + at, len));
        at += len;
      } while (at < b.nbytes);
    }
    return true;
  });
  RecordOn(side, s.reads_done);
  // The copy to host memory, after which the host may read the results.
  Enqueue(side, [this, &side, &s, sequence](std::unique_lock<std::mutex>& lock) {
    if (options_.gate_landing &&
        !WaitAs(lock, side, SimStreamState::kWaitingGate,
                [&] { return all_landings_ || landings_allowed_.count(sequence) > 0; })) {
      return false;
    }
    s.host_digests = s.device_digests;
    s.host_sums = s.device_sums;
    landed_.insert(sequence);
    return true;
  });
  RecordOn(side, s.landed);
  return Status::Ok();
}

Result<bool> SimulatedCaptureDevice::Landed(int slot) {
  std::lock_guard<std::mutex> guard(mu_);
  const Slot& s = SlotAt(slot);
  return s.landed.recorded > 0 && s.landed.completed >= s.landed.recorded;
}

Status SimulatedCaptureDevice::WaitLanded(int slot) {
  std::unique_lock<std::mutex> lock(mu_);
  const Slot& s = SlotAt(slot);
  ++host_waiting_;
  cv_.notify_all();
  cv_.wait(lock, [&] { return stopped_ || s.landed.completed >= s.landed.recorded; });
  --host_waiting_;
  if (s.landed.completed < s.landed.recorded) return UnavailableError("simulated device: lost with the capture in flight");
  return Status::Ok();
}

Status SimulatedCaptureDevice::TrainingWaitsForReads(int slot) {
  std::lock_guard<std::mutex> guard(mu_);
  if (stopped_) return UnavailableError("simulated device: stopped");
  WaitOn(training_, SlotAt(slot).reads_done);
  return Status::Ok();
}

Status SimulatedCaptureDevice::ReadResults(int slot, std::vector<Digest128>& chunk_digests,
                                           std::vector<double>& chunk_square_sums) {
  std::lock_guard<std::mutex> guard(mu_);
  const Slot& s = SlotAt(slot);
  if (s.landed.recorded == 0 || s.landed.completed < s.landed.recorded) {
    // What a real device would give here is whatever the host memory held: a pipeline bug.
    return InternalError("simulated device: slot " + std::to_string(slot) + " read before it landed");
  }
  chunk_digests = s.host_digests;
  chunk_square_sums = s.host_sums;
  return Status::Ok();
}

void SimulatedCaptureDevice::QueueTrainingWrite(void* data, size_t nbytes, std::function<void()> write) {
  std::lock_guard<std::mutex> guard(mu_);
  const auto begin = reinterpret_cast<uintptr_t>(data);
  const Range range(begin, begin + nbytes);
  Enqueue(training_, [this, range, write = std::move(write)](std::unique_lock<std::mutex>& lock) {
    if (Overlaps(reading_, range)) violations_.push_back("the training stream overwrote bytes a capture was reading");
    writing_.insert(range);
    const bool went_on = !options_.gate_training ||
                         WaitAs(lock, training_, SimStreamState::kWaitingGate, [&] { return training_permits_ > 0; });
    writing_.erase(writing_.find(range));
    if (!went_on) return false;
    if (options_.gate_training) --training_permits_;
    write();
    return true;
  });
}

void SimulatedCaptureDevice::AllowRead(uint64_t sequence) {
  std::lock_guard<std::mutex> guard(mu_);
  reads_allowed_.insert(sequence);
  cv_.notify_all();
}

void SimulatedCaptureDevice::AllowLanding(uint64_t sequence) {
  std::lock_guard<std::mutex> guard(mu_);
  landings_allowed_.insert(sequence);
  cv_.notify_all();
}

void SimulatedCaptureDevice::AllowAllReads() {
  std::lock_guard<std::mutex> guard(mu_);
  all_reads_ = true;
  cv_.notify_all();
}

void SimulatedCaptureDevice::AllowAllLandings() {
  std::lock_guard<std::mutex> guard(mu_);
  all_landings_ = true;
  cv_.notify_all();
}

void SimulatedCaptureDevice::AllowTrainingWrites(int n) {
  std::lock_guard<std::mutex> guard(mu_);
  training_permits_ += n;
  cv_.notify_all();
}

bool SimulatedCaptureDevice::Stuck(const Stream& stream) const {
  switch (stream.state) {
    case SimStreamState::kIdle:
      return stream.ops.empty();
    case SimStreamState::kRunning:
      return false;
    case SimStreamState::kStopped:
      return true;
    default:
      return stream.ready != nullptr && !(*stream.ready)();
  }
}

SimStreamState SimulatedCaptureDevice::AwaitSettled(Stream& stream) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] {
    if (stopped_) return true;
    if (!Stuck(training_)) return false;
    for (const Stream& s : side_) {
      if (!Stuck(s)) return false;
    }
    return true;
  });
  return stream.state;
}

SimStreamState SimulatedCaptureDevice::AwaitTrainingSettled() { return AwaitSettled(training_); }

SimStreamState SimulatedCaptureDevice::AwaitSideSettled(int i) { return AwaitSettled(side_[static_cast<size_t>(i)]); }

void SimulatedCaptureDevice::AwaitReadsHeld(int n) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return reads_held_ >= n; });
}

void SimulatedCaptureDevice::AwaitLanded(const std::vector<uint64_t>& sequences) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] {
    return std::all_of(sequences.begin(), sequences.end(), [&](uint64_t q) { return landed_.count(q) > 0; });
  });
}

void SimulatedCaptureDevice::AwaitHostWaiting() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return host_waiting_ > 0; });
}

void SimulatedCaptureDevice::Crash() {
  std::lock_guard<std::mutex> guard(mu_);
  stopped_ = true;
  cv_.notify_all();
}

std::vector<std::string> SimulatedCaptureDevice::violations() const {
  std::lock_guard<std::mutex> guard(mu_);
  return violations_;
}

int SimulatedCaptureDevice::slots_used() const {
  std::lock_guard<std::mutex> guard(mu_);
  return static_cast<int>(slots_used_.size());
}

}  // namespace lockstep
