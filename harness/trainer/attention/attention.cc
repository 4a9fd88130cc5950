#include "harness/trainer/attention/attention.h"

#include <c10/util/Exception.h>

namespace lockstep {

torch::Tensor Attend(AttentionKind kind, const torch::Tensor& q, const torch::Tensor& k,
                     const torch::Tensor& v, bool causal, double dropout_p, bool training) {
  switch (kind) {
    case AttentionKind::kNaive:
      return NaiveAttention(q, k, v, causal, dropout_p, training);
    case AttentionKind::kFlash:
      return FlashAttention(q, k, v, causal, dropout_p, training);
    case AttentionKind::kSdpa:
      return SdpaAttention(q, k, v, causal, dropout_p, training);
  }
  TORCH_CHECK(false, "Attend: unknown attention kind ", static_cast<int>(kind));
}

}  // namespace lockstep
