#include "harness/trace/tensor_digest.h"

#include <c10/util/Exception.h>

#include <cctype>
#include <vector>

#include "harness/trace/digest.h"

namespace lockstep {

std::string DtypeName(c10::ScalarType type) {
  switch (type) {
    case c10::ScalarType::Float: return "float32";
    case c10::ScalarType::Double: return "float64";
    case c10::ScalarType::Half: return "float16";
    case c10::ScalarType::BFloat16: return "bfloat16";
    case c10::ScalarType::Long: return "int64";
    case c10::ScalarType::Int: return "int32";
    case c10::ScalarType::Short: return "int16";
    case c10::ScalarType::Char: return "int8";
    case c10::ScalarType::Byte: return "uint8";
    case c10::ScalarType::Bool: return "bool";
    case c10::ScalarType::ComplexFloat: return "complex64";
    case c10::ScalarType::ComplexDouble: return "complex128";
    default: break;
  }
  std::string name = c10::toString(type);
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name;
}

Digest128 DigestTensor(const torch::Tensor& tensor, int threads) {
  if (!tensor.defined()) return DigestBytes(nullptr, 0, "undefined", nullptr, 0, threads);
  // Lazy conjugate/negative views are materialized so the digest is of the values they show.
  torch::Tensor t = tensor.detach().resolve_conj().resolve_neg();
  if (!t.device().is_cpu()) t = t.to(torch::kCPU);
  t = t.contiguous();
  const auto sizes = t.sizes();
  const size_t nbytes = static_cast<size_t>(t.numel()) * t.element_size();
  return DigestBytes(t.data_ptr(), nbytes, DtypeName(t.scalar_type()), sizes.data(), sizes.size(), threads);
}

double TensorL2Norm(const torch::Tensor& tensor) {
  if (!tensor.defined() || tensor.numel() == 0) return 0.0;
  torch::Tensor t = tensor.detach();
  // linalg_vector_norm rejects integer and bool inputs; their norm is still well defined.
  if (!t.is_floating_point() && !t.is_complex()) t = t.to(torch::kDouble);
  return torch::linalg_vector_norm(t, 2, c10::nullopt, false,
                                   t.is_complex() ? c10::optional<c10::ScalarType>() : c10::ScalarType::Double)
      .item<double>();
}

Result<TensorRecord> MakeTensorRecord(const std::string& name, TensorKind kind, const torch::Tensor& tensor,
                                      bool replicated, int threads) {
  try {
    TensorRecord r;
    r.name = name;
    r.kind = kind;
    r.digest = DigestTensor(tensor, threads);
    r.numel = tensor.defined() ? tensor.numel() : 0;
    r.dtype = tensor.defined() ? DtypeName(tensor.scalar_type()) : "undefined";
    r.norm = TensorL2Norm(tensor);
    r.replicated = replicated;
    return r;
  } catch (const c10::Error& e) {
    return InternalError("digest of " + name + ": " + e.what_without_backtrace());
  }
}

}  // namespace lockstep
