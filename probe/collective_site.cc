#include "probe/collective_site.h"

#include <utility>

namespace lockstep::probe {
namespace {

thread_local std::string site;

}  // namespace

void SetCollectiveSite(std::string where) { site = std::move(where); }

const std::string& CollectiveSite() { return site; }

}  // namespace lockstep::probe
