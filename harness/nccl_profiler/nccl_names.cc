#include "harness/nccl_profiler/nccl_names.h"

#include <cctype>

namespace lockstep {
namespace {

struct NamePair {
  std::string_view nccl;
  const char* lockstep;
};

// NCCL 2.28's ncclFuncToString; Send, Recv and SendRecv are p2p events, never collectives.
constexpr NamePair kFuncs[] = {
    {"AllReduce", "all_reduce"}, {"AllGather", "all_gather"}, {"ReduceScatter", "reduce_scatter"},
    {"Broadcast", "broadcast"},  {"Reduce", "reduce"},        {"AlltoAll", "all_to_all"},
    {"Gather", "gather"},        {"Scatter", "scatter"},
};

// NCCL 2.28's ncclDatatypeToString (ncclChar is ncclInt8; ncclUint8 has no name there, "Unknown",
// and is kept here should a later NCCL give it one).
constexpr NamePair kDatatypes[] = {
    {"ncclFloat32", "float32"},          {"ncclBfloat16", "bfloat16"},       {"ncclFloat16", "float16"},
    {"ncclFloat64", "float64"},          {"ncclInt64", "int64"},             {"ncclInt32", "int32"},
    {"ncclInt8", "int8"},                {"ncclUint8", "uint8"},             {"ncclUint32", "uint32"},
    {"ncclUint64", "uint64"},            {"ncclFloat8e4m3", "float8_e4m3fn"}, {"ncclFloat8e5m2", "float8_e5m2"},
};

const char* Find(const NamePair* begin, const NamePair* end, std::string_view name) {
  for (const NamePair* p = begin; p != end; ++p) {
    if (p->nccl == name) return p->lockstep;
  }
  return nullptr;
}

}  // namespace

std::string OpNameOfNcclFunc(std::string_view func) {
  if (const char* known = Find(std::begin(kFuncs), std::end(kFuncs), func)) return known;
  std::string snake;
  for (size_t i = 0; i < func.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(func[i]);
    if (std::isupper(c) && i > 0) snake += '_';
    snake += static_cast<char>(std::tolower(c));
  }
  return snake;
}

std::string DtypeNameOfNcclDatatype(std::string_view datatype) {
  if (const char* known = Find(std::begin(kDatatypes), std::end(kDatatypes), datatype)) return known;
  std::string_view rest = datatype;
  if (rest.substr(0, 4) == "nccl") rest.remove_prefix(4);
  std::string name;
  for (char c : rest) name += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name;
}

int64_t ContributedCount(std::string_view func, size_t count, int nranks) {
  const int64_t n = static_cast<int64_t>(count);
  if ((func == "ReduceScatter" || func == "AlltoAll") && nranks > 0) return n * nranks;
  return n;
}

bool NcclFuncHasRoot(std::string_view func) {
  return func == "Broadcast" || func == "Reduce" || func == "Gather" || func == "Scatter";
}

}  // namespace lockstep
