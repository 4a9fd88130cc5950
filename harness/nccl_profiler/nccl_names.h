// NCCL's names for a collective and a datatype (the profiler's descriptor strings, from NCCL's
// ncclFuncToString / ncclDatatypeToString) in lockstep's spelling, so a collective NCCL saw reads
// like one lockstep's own communicators or the probe recorded: "all_reduce", "float32".
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace lockstep {

// "AllReduce" -> "all_reduce", "AlltoAll" -> "all_to_all"; a name NCCL adds later is written
// lower-snake ("FooBar" -> "foo_bar"), so it shows up rather than vanishing.
std::string OpNameOfNcclFunc(std::string_view func);

// "ncclFloat32" -> "float32", "ncclBfloat16" -> "bfloat16", "ncclFloat8e4m3" -> "float8_e4m3fn"
// (torch's names); an unknown one keeps NCCL's name without its "nccl" prefix, lower-cased.
std::string DtypeNameOfNcclDatatype(std::string_view datatype);

// The elements this rank contributes (CollectiveRecord::count), from NCCL's count argument:
// ReduceScatter's count is what each rank receives, so the input is count x nranks; AlltoAll's is
// per peer, likewise; the others' count is this rank's input already.
int64_t ContributedCount(std::string_view func, size_t count, int nranks);

// Whether the collective has a root (Broadcast, Reduce, Gather, Scatter): NCCL fills the root of
// every collective (0 for the rest), lockstep keeps it only where it means something.
bool NcclFuncHasRoot(std::string_view func);

}  // namespace lockstep
