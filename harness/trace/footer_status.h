// What a trace footer's status says of how the rank ended: read alike by the launcher (which
// tells a rank's own error from the echo of a peer's death) and the checkers (which must not read
// a rank that stopped on an error as one that ended its run).
#pragma once

#include <string>

namespace lockstep {

// A footer status that reports an error of the harness on the rank (configuration, environment,
// internal, trace I/O, a failed collective), as opposed to "ok" and the clean early stops
// ("stopped after step K (--stop-after-step)", "fail-fast: ..."). A rank whose footer says so
// stopped on that error, not at the end of its own run.
bool IsErrorFooterStatus(const std::string& status);

// A footer status (or a rank's error) that says a collective or the rendezvous failed
// ("communication: ..."): the harness's own error when alone, the echo of a peer's death when a
// peer died (the launcher tells them apart).
bool IsCommunicationFailure(const std::string& status);

}  // namespace lockstep
