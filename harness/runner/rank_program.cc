#include "harness/runner/rank_program.h"

namespace lockstep {

const char* ToString(RankRun run) {
  switch (run) {
    case RankRun::kMain: return "main";
    case RankRun::kReference: return "reference";
    case RankRun::kReferenceSplit: return "reference-split";
    case RankRun::kRepeat: return "repeat";
    case RankRun::kRepro: return "repro";
  }
  return "main";
}

}  // namespace lockstep
