#include "harness/trace/read_yardstick.h"

#include <cstring>

namespace lockstep {

uint64_t SumBytesAsWords(const void* data, size_t nbytes) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t sum = 0;
  const size_t words = nbytes / sizeof(uint64_t);
  for (size_t i = 0; i < words; ++i) {
    uint64_t w;
    std::memcpy(&w, p + i * sizeof(uint64_t), sizeof w);
    sum += w;
  }
  uint64_t tail = 0;
  std::memcpy(&tail, p + words * sizeof(uint64_t), nbytes % sizeof(uint64_t));
  return sum + tail;
}

}  // namespace lockstep
