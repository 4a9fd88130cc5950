#include "harness/trainer/attention/flash_attention.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace lockstep {
namespace {

using torch::indexing::Slice;

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

void CheckInputs(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, int64_t tile) {
  TORCH_CHECK(q.dim() == 4 && k.dim() == 4 && v.dim() == 4, "FlashAttention: q, k, v must be [B, H, T, D]");
  TORCH_CHECK(k.sizes() == v.sizes(), "FlashAttention: k and v must have the same shape");
  TORCH_CHECK(q.size(0) == k.size(0) && q.size(1) == k.size(1) && q.size(3) == k.size(3),
              "FlashAttention: q and k differ in batch, heads or head dim");
  TORCH_CHECK(tile >= 1, "FlashAttention: tile must be >= 1, got ", tile);
}

// Under causal masking, key tile [j0, j1) is invisible to every query of tile [i0, i1) when its
// first key comes after the tile's last query, and fully visible when its last key comes no later
// than the tile's first query; only the tiles on the diagonal need an explicit mask.
bool FullyMasked(int64_t i1, int64_t j0) { return j0 > i1 - 1; }
bool NeedsMask(int64_t i0, int64_t j1) { return j1 - 1 > i0; }

// The type the statistics (row max, denominator, log-sum-exp), the scores and the accumulators are
// kept in: float for bfloat16 and half inputs, as FlashAttention keeps them in fp32 registers
// (its matrix units multiply 16-bit operands exactly and accumulate in fp32), the input's own
// type otherwise. Accumulating dV, dK, dQ and the output tile by tile in bfloat16 instead rounds
// once per tile, so the error grows with the sequence length: on the H100 (2026-11-26, T 257, 5
// tiles) the bf16 dV came out 1.6e-2 from float64 where naive bf16 attention is 5e-3 off.
torch::ScalarType AccumulationType(const torch::Tensor& t) {
  const torch::ScalarType type = t.scalar_type();
  return type == torch::kBFloat16 || type == torch::kHalf ? torch::kFloat : type;
}

// The scaled scores of one (query tile, key tile) pair, -inf where the causal mask hides a key.
torch::Tensor TileScores(const torch::Tensor& qi, const torch::Tensor& kj, double scale, bool causal,
                         int64_t i0, int64_t j0) {
  torch::Tensor s = torch::matmul(qi, kj.transpose(-2, -1)) * scale;
  const int64_t rows = qi.size(2);
  const int64_t cols = kj.size(2);
  if (causal && NeedsMask(i0, j0 + cols)) {
    auto opts = torch::TensorOptions().dtype(torch::kLong).device(qi.device());
    torch::Tensor mask = torch::arange(j0, j0 + cols, opts).unsqueeze(0) >
                         torch::arange(i0, i0 + rows, opts).unsqueeze(1);
    s = s.masked_fill(mask, kNegInf);
  }
  return s;
}

class FlashAttentionFunction : public torch::autograd::Function<FlashAttentionFunction> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& q,
                               const torch::Tensor& k, const torch::Tensor& v, bool causal,
                               int64_t tile) {
    FlashForwardResult r = FlashAttentionForward(q, k, v, causal, tile);
    ctx->save_for_backward({q, k, v, r.out, r.lse});
    ctx->saved_data["causal"] = causal;
    ctx->saved_data["tile"] = tile;
    return r.out;
  }

  // FlashAttention-2 backward: with P recomputed per tile from the saved log-sum-exp,
  //   D = rowsum(dO * O), dV = P^T dO, dP = dO V^T, dS = P * (dP - D),
  //   dQ = dS K * scale, dK = dS^T Q * scale,
  // accumulated tile by tile; the outer loop runs over key tiles so dK and dV of a tile are
  // finished before moving on, as in the paper.
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_outputs) {
    torch::NoGradGuard no_grad;
    const auto saved = ctx->get_saved_variables();
    // In the accumulation type (a no-op for float32 and float64 inputs), cast back at the end.
    const torch::ScalarType input_type = saved[0].scalar_type();
    const torch::ScalarType acc_type = AccumulationType(saved[0]);
    const torch::Tensor q = saved[0].to(acc_type);
    const torch::Tensor k = saved[1].to(acc_type);
    const torch::Tensor v = saved[2].to(acc_type);
    const torch::Tensor out = saved[3].to(acc_type);
    const torch::Tensor& lse = saved[4];
    const bool causal = ctx->saved_data["causal"].toBool();
    const int64_t tile = ctx->saved_data["tile"].toInt();
    torch::Tensor dout = grad_outputs[0].contiguous().to(acc_type);

    const int64_t tq = q.size(2);
    const int64_t tk = k.size(2);
    const double scale = 1.0 / std::sqrt(static_cast<double>(q.size(3)));
    torch::Tensor delta = (dout * out).sum(-1);  // [B, H, Tq]
    torch::Tensor dq = torch::zeros_like(q);
    torch::Tensor dk = torch::zeros_like(k);
    torch::Tensor dv = torch::zeros_like(v);

    for (int64_t j0 = 0; j0 < tk; j0 += tile) {
      const int64_t j1 = std::min(j0 + tile, tk);
      torch::Tensor kj = k.index({Slice(), Slice(), Slice(j0, j1)});
      torch::Tensor vj = v.index({Slice(), Slice(), Slice(j0, j1)});
      torch::Tensor dkj = torch::zeros_like(kj);
      torch::Tensor dvj = torch::zeros_like(vj);
      // Query tiles that end before j0 see none of these keys under the causal mask.
      const int64_t first_i = causal ? (j0 / tile) * tile : 0;
      for (int64_t i0 = first_i; i0 < tq; i0 += tile) {
        const int64_t i1 = std::min(i0 + tile, tq);
        if (causal && FullyMasked(i1, j0)) continue;
        torch::Tensor qi = q.index({Slice(), Slice(), Slice(i0, i1)});
        torch::Tensor doi = dout.index({Slice(), Slice(), Slice(i0, i1)});
        torch::Tensor s = TileScores(qi, kj, scale, causal, i0, j0);
        torch::Tensor p = torch::exp(s - lse.index({Slice(), Slice(), Slice(i0, i1)}).unsqueeze(-1));
        dvj.add_(torch::matmul(p.transpose(-2, -1), doi));
        torch::Tensor dp = torch::matmul(doi, vj.transpose(-2, -1));
        torch::Tensor ds = p * (dp - delta.index({Slice(), Slice(), Slice(i0, i1)}).unsqueeze(-1));
        dq.index({Slice(), Slice(), Slice(i0, i1)}).add_(torch::matmul(ds, kj), scale);
        dkj.add_(torch::matmul(ds.transpose(-2, -1), qi), scale);
      }
      dk.index({Slice(), Slice(), Slice(j0, j1)}).copy_(dkj);
      dv.index({Slice(), Slice(), Slice(j0, j1)}).copy_(dvj);
    }
    return {dq.to(input_type), dk.to(input_type), dv.to(input_type), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

FlashForwardResult FlashAttentionForward(const torch::Tensor& q_in, const torch::Tensor& k_in,
                                         const torch::Tensor& v_in, bool causal, int64_t tile) {
  CheckInputs(q_in, k_in, v_in, tile);
  torch::NoGradGuard no_grad;
  // In the accumulation type (a no-op for float32 and float64 inputs); the output is cast back to
  // the input's type, the log-sum-exp stays in the accumulation type for the backward pass.
  const torch::ScalarType acc_type = AccumulationType(q_in);
  torch::Tensor q = q_in.contiguous().to(acc_type);
  torch::Tensor k = k_in.contiguous().to(acc_type);
  torch::Tensor v = v_in.contiguous().to(acc_type);
  const int64_t tq = q.size(2);
  const int64_t tk = k.size(2);
  const double scale = 1.0 / std::sqrt(static_cast<double>(q.size(3)));

  torch::Tensor out = torch::empty({q.size(0), q.size(1), tq, v.size(3)}, q.options());
  torch::Tensor lse = torch::empty({q.size(0), q.size(1), tq}, q.options());
  for (int64_t i0 = 0; i0 < tq; i0 += tile) {
    const int64_t i1 = std::min(i0 + tile, tq);
    torch::Tensor qi = q.index({Slice(), Slice(), Slice(i0, i1)});
    // Running row max m, running denominator l and the unnormalized accumulator, rescaled by
    // exp(m_old - m_new) whenever a later key tile raises the max.
    torch::Tensor m = torch::full({q.size(0), q.size(1), i1 - i0}, kNegInf, q.options());
    torch::Tensor l = torch::zeros({q.size(0), q.size(1), i1 - i0}, q.options());
    torch::Tensor acc = torch::zeros({q.size(0), q.size(1), i1 - i0, v.size(3)}, q.options());
    for (int64_t j0 = 0; j0 < tk; j0 += tile) {
      // Key tiles ascend, so once one is fully masked every later one is too.
      if (causal && FullyMasked(i1, j0)) break;
      const int64_t j1 = std::min(j0 + tile, tk);
      torch::Tensor kj = k.index({Slice(), Slice(), Slice(j0, j1)});
      torch::Tensor vj = v.index({Slice(), Slice(), Slice(j0, j1)});
      torch::Tensor s = TileScores(qi, kj, scale, causal, i0, j0);
      // A row whose keys in this tile are all masked keeps its max; every row saw key 0 in the
      // first tile, so m_new is finite and exp(-inf - m_new) = 0 as wanted.
      torch::Tensor m_new = torch::maximum(m, std::get<0>(s.max(-1)));
      torch::Tensor p = torch::exp(s - m_new.unsqueeze(-1));
      torch::Tensor alpha = torch::exp(m - m_new);
      l = alpha * l + p.sum(-1);
      acc = alpha.unsqueeze(-1) * acc + torch::matmul(p, vj);
      m = m_new;
    }
    out.index({Slice(), Slice(), Slice(i0, i1)}).copy_(acc / l.unsqueeze(-1));
    lse.index({Slice(), Slice(), Slice(i0, i1)}).copy_(m + torch::log(l));
  }
  return {out.to(q_in.scalar_type()), lse};
}

torch::Tensor FlashAttention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                             bool causal, double dropout_p, bool training, int64_t tile) {
  CheckInputs(q, k, v, tile);
  torch::Tensor out = FlashAttentionFunction::apply(q, k, v, causal, tile);
  if (training && dropout_p > 0.0) out = torch::dropout(out, dropout_p, /*train=*/true);
  return out;
}

}  // namespace lockstep
