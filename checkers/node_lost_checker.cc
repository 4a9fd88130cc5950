#include "checkers/node_lost_checker.h"

#include "checkers/internal/check_util.h"

namespace lockstep {

std::vector<Finding> NodeLostChecker::Check(const CheckContext& context) const {
  if (context.launch.ending != LaunchEnding::kNodeLost) return {};
  std::vector<Finding> out;
  for (const LostHost& h : context.launch.lost_hosts) {
    Finding f;
    f.checker = std::string(name());
    f.ranks = h.ranks;
    if (h.last_step) f.step = *h.last_step + 1;
    f.message = "node lost: " + h.host + " (" + (h.ranks.empty() ? std::string("no rank") : internal::RankPhrase(h.ranks)) +
                "), last heard at step " + (h.last_step ? std::to_string(*h.last_step) : std::string("none")) +
                ": its agent said nothing for " + std::to_string(static_cast<int64_t>(h.silent_s)) +
                " s (the link down, the node down or its agent killed); its ranks' traces end there, and the "
                "steps every rank reached were still checked";
    f.details["host"] = h.host;
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace lockstep
