#include "harness/launcher/spawn_watch.h"

namespace lockstep {

bool SpawnWatch::Poll(Clock::time_point now) {
  bool news = false;
  // Several may have begun since the last look (a spawning of a few milliseconds): the newest.
  for (int k = world_ ? world_->spawning.index + 1 : 1;; ++k) {
    std::optional<Spawning> next = SpawningBegun(trace_dir_, k);
    if (!next) break;
    world_ = std::make_unique<World>(std::move(*next), now, on_step_);
    news = true;
  }
  if (!world_) return false;
  World& w = *world_;
  if (w.watcher.Poll()) {
    w.last_progress = now;
    news = true;
  }
  bool started = true, ended = true;
  for (int r = 0; r < w.watcher.size(); ++r) {
    started = started && HasStarted(w.watcher.rank(r));
    ended = ended && w.watcher.rank(r).footer;
  }
  if (started && !w.started) w.started = now;
  if (ended && !w.ended) w.ended = now;
  return news;
}

void SpawnWatch::Discount(Clock::duration by) {
  if (!world_) return;
  world_->began += by;
  world_->last_progress += by;
  if (world_->started) *world_->started += by;
  if (world_->ended) *world_->ended += by;
}

}  // namespace lockstep
