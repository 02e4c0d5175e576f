// The GEMM engine: stages operands through a Job and computes each batch
// entry with OpenBLAS (sgemm for fp32, fp16 and bf16 converted to fp32;
// dgemm, cgemm, zgemm for the others), then applies beta, bias and the
// activation in the compute precision and stores in D's type.
#include "gemm.h"

#include <cblas.h>

#include <climits>
#include <cmath>
#include <complex>
#include <cstring>
#include <memory>
#include <type_traits>
#include <vector>

#include "convert.h"
#include "job.h"
#include "rgpu/common/log.h"

namespace rgpu::cpublas {

namespace {

constexpr size_t kNone = ~size_t(0);

// Everything compute needs, by value: the spec's host scalars are read at the
// call (pointer mode host), never later.
struct Plan {
  GemmSpec spec;
  int64_t a_rows = 0, a_cols = 0, b_rows = 0, b_cols = 0;
  size_t ia = kNone, ib = kNone, ic = kNone, id = kNone, ialpha = kNone, ibeta = kNone, ibias = kNone;
  unsigned char alpha[16] = {}, beta[16] = {};  // host-mode values
};

template <class T>
constexpr cudaDataType native_type() {
  if constexpr (std::is_same_v<T, float>) return CUDA_R_32F;
  if constexpr (std::is_same_v<T, double>) return CUDA_R_64F;
  if constexpr (std::is_same_v<T, std::complex<float>>) return CUDA_C_32F;
  return CUDA_C_64F;
}

template <class T>
constexpr bool is_real() {
  return std::is_same_v<T, float> || std::is_same_v<T, double>;
}

// `n` elements of `type` as T: a view of the staged bytes when the type is
// T itself, else converted into `tmp` (fp16 and bf16 to float).
template <class T>
const T* view(const void* src, cudaDataType type, size_t n, std::vector<T>& tmp) {
  if (type == native_type<T>()) return static_cast<const T*>(src);
  tmp.resize(n);
  if constexpr (std::is_same_v<T, float>) {
    to_float(src, type, n, tmp.data());
  }
  return tmp.data();
}

template <class T>
void load(const void* src, cudaDataType type, size_t n, T* dst) {
  if constexpr (std::is_same_v<T, float>) {
    to_float(src, type, n, dst);
  } else {
    std::memcpy(dst, src, n * sizeof(T));
  }
}

template <class T>
void store(const T* src, size_t n, cudaDataType type, void* dst) {
  if constexpr (std::is_same_v<T, float>) {
    from_float(src, n, type, dst);
  } else {
    std::memcpy(dst, src, n * sizeof(T));
  }
}

template <class T>
T scalar(const void* bytes, cudaDataType type) {
  if constexpr (is_real<T>()) {
    double v = 0;
    scalar_to_double(bytes, type, &v);
    return T(v);
  } else {
    T v;
    std::memcpy(&v, bytes, sizeof v);
    return v;
  }
}

CBLAS_TRANSPOSE trans(cublasOperation_t op, bool complex) {
  switch (op) {
    case CUBLAS_OP_T:
      return CblasTrans;
    case CUBLAS_OP_C:
      return complex ? CblasConjTrans : CblasTrans;
    default:
      return CblasNoTrans;
  }
}

template <class T>
void blas_gemm(cublasOperation_t op_a, cublasOperation_t op_b, int m, int n, int k, T alpha, const T* a, int lda,
               const T* b, int ldb, T beta, T* c, int ldc) {
  const bool cx = !is_real<T>();
  auto ta = trans(op_a, cx), tb = trans(op_b, cx);
  if constexpr (std::is_same_v<T, float>) {
    cblas_sgemm(CblasColMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  } else if constexpr (std::is_same_v<T, double>) {
    cblas_dgemm(CblasColMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  } else if constexpr (std::is_same_v<T, std::complex<float>>) {
    cblas_cgemm(CblasColMajor, ta, tb, m, n, k, &alpha, a, lda, b, ldb, &beta, c, ldc);
  } else {
    cblas_zgemm(CblasColMajor, ta, tb, m, n, k, &alpha, a, lda, b, ldb, &beta, c, ldc);
  }
}

template <class T>
T activate(T x, Activation act) {
  switch (act) {
    case Activation::kRelu:
      return x > T(0) ? x : T(0);
    case Activation::kGelu: {
      // cuBLASLt's GELU is the tanh approximation.
      const T c = T(0.7978845608028654);  // sqrt(2 / pi)
      return T(0.5) * x * (T(1) + std::tanh(c * (x + T(0.044715) * x * x * x)));
    }
    default:
      return x;
  }
}

template <class T>
void compute(Job& job, const Plan& p) {
  const GemmSpec& s = p.spec;
  const void* alpha_bytes = p.ialpha == kNone ? p.alpha : job.host(p.ialpha);
  const void* beta_bytes = p.ibeta == kNone ? p.beta : job.host(p.ibeta);
  const T alpha = scalar<T>(alpha_bytes, s.scale_type);
  const T beta = scalar<T>(beta_bytes, s.scale_type);
  const bool use_c = beta != T(0) && p.ic != kNone;
  const bool multiply = alpha != T(0) && s.k > 0 && p.ia != kNone && p.ib != kNone;

  std::vector<T> tmp_a, tmp_b;
  const T* a = nullptr;
  const T* b = nullptr;
  int64_t sa = 0, sb = 0;
  if (multiply) {
    const Operand& oa = job.operand(p.ia);
    const Operand& ob = job.operand(p.ib);
    a = view<T>(job.host(p.ia), s.a.type, size_t(oa.rows * oa.cols * oa.distinct()), tmp_a);
    b = view<T>(job.host(p.ib), s.b.type, size_t(ob.rows * ob.cols * ob.distinct()), tmp_b);
    sa = oa.host_stride();
    sb = ob.host_stride();
  }
  const size_t mn = size_t(s.m * s.n);
  const Operand& od = job.operand(p.id);
  const size_t d_elem = od.elem;
  std::vector<T> acc(mn), bias;
  if (p.ibias != kNone) bias.resize(size_t(s.m));

  for (int64_t i = 0; i < s.batch; ++i) {
    if (use_c) {
      const Operand& oc = job.operand(p.ic);
      load<T>(static_cast<const char*>(job.host(p.ic)) + size_t(i * oc.host_stride()) * oc.elem, s.c.type, mn,
              acc.data());
    } else {
      std::fill(acc.begin(), acc.end(), T(0));  // beta == 0: C is never read, NaN there does not matter
    }
    if (multiply) {
      blas_gemm<T>(s.op_a, s.op_b, int(s.m), int(s.n), int(s.k), alpha, a + i * sa, int(std::max<int64_t>(1, p.a_rows)),
                   b + i * sb, int(std::max<int64_t>(1, p.b_rows)), use_c ? beta : T(0), acc.data(), int(s.m));
    } else if (use_c && beta != T(1)) {
      for (T& x : acc) x *= beta;
    }
    if constexpr (is_real<T>()) {
      if (p.ibias != kNone) {
        const Operand& ob = job.operand(p.ibias);
        load<T>(static_cast<const char*>(job.host(p.ibias)) + size_t(i * ob.host_stride()) * ob.elem, s.bias_type,
                size_t(s.m), bias.data());
        for (int64_t col = 0; col < s.n; ++col) {
          for (int64_t row = 0; row < s.m; ++row) acc[size_t(col * s.m + row)] += bias[size_t(row)];
        }
      }
      if (s.activation != Activation::kNone) {
        for (T& x : acc) x = activate(x, s.activation);
      }
    }
    store<T>(acc.data(), mn, s.d.type, static_cast<char*>(job.host(p.id)) + size_t(i * od.host_stride()) * d_elem);
  }
}

bool is_zero(const void* bytes, cudaDataType type) {
  switch (type) {
    case CUDA_C_32F: {
      float v[2];
      std::memcpy(v, bytes, sizeof v);
      return v[0] == 0 && v[1] == 0;
    }
    case CUDA_C_64F: {
      double v[2];
      std::memcpy(v, bytes, sizeof v);
      return v[0] == 0 && v[1] == 0;
    }
    default: {
      double v = 1;
      return scalar_to_double(bytes, type, &v) && v == 0;
    }
  }
}

bool fits_int(int64_t v) { return v >= 0 && v <= INT_MAX; }

}  // namespace

bool gemm_types(cublasComputeType_t compute, cudaDataType ab, cudaDataType cd, Domain* domain,
                cudaDataType* scale_type) {
  switch (compute) {
    case CUBLAS_COMPUTE_32F:
    case CUBLAS_COMPUTE_32F_PEDANTIC:
    case CUBLAS_COMPUTE_32F_FAST_16F:
    case CUBLAS_COMPUTE_32F_FAST_16BF:
    case CUBLAS_COMPUTE_32F_FAST_TF32:
    case CUBLAS_COMPUTE_32F_EMULATED_16BFX9:
      if (ab == CUDA_C_32F && cd == CUDA_C_32F) {
        *domain = Domain::kComplex32;
        *scale_type = CUDA_C_32F;
        return true;
      }
      if ((ab == CUDA_R_32F || ab == CUDA_R_16F || ab == CUDA_R_16BF) && (cd == ab || cd == CUDA_R_32F)) {
        *domain = Domain::kReal32;
        *scale_type = CUDA_R_32F;
        return true;
      }
      return false;
    case CUBLAS_COMPUTE_64F:
    case CUBLAS_COMPUTE_64F_PEDANTIC:
    case CUBLAS_COMPUTE_64F_EMULATED_FIXEDPOINT:
      if (ab != cd || (ab != CUDA_R_64F && ab != CUDA_C_64F)) return false;
      *domain = ab == CUDA_R_64F ? Domain::kReal64 : Domain::kComplex64;
      *scale_type = ab;
      return true;
    case CUBLAS_COMPUTE_16F:
    case CUBLAS_COMPUTE_16F_PEDANTIC:
      // Accumulated in fp32 here: at least the precision cuBLAS promises.
      if (ab != CUDA_R_16F || cd != CUDA_R_16F) return false;
      *domain = Domain::kReal32;
      *scale_type = CUDA_R_16F;
      return true;
    default:
      return false;
  }
}

cublasStatus_t enqueue_gemm(const GemmSpec& s, CUstream stream) {
  if (!s.alpha || !s.beta) return CUBLAS_STATUS_INVALID_VALUE;
  const size_t scale_size = element_size(s.scale_type);
  if (!scale_size || !element_size(s.a.type) || !element_size(s.b.type) || !element_size(s.c.type) ||
      !element_size(s.d.type)) {
    return CUBLAS_STATUS_NOT_SUPPORTED;
  }
  if (s.m == 0 || s.n == 0 || s.batch == 0) return CUBLAS_STATUS_SUCCESS;
  // OpenBLAS indexes with int; the host buffers are compact, so their leading
  // dimensions are m and k.
  if (!fits_int(s.m) || !fits_int(s.n) || !fits_int(s.k)) {
    RGPU_WARN("cpu cublas: gemm too large for the cpu blas m=%lld n=%lld k=%lld", static_cast<long long>(s.m),
              static_cast<long long>(s.n), static_cast<long long>(s.k));
    return CUBLAS_STATUS_NOT_SUPPORTED;
  }
  if (s.a.stride < 0 || s.b.stride < 0 || s.c.stride < 0 || s.d.stride < 0 || s.bias_stride < 0) {
    return CUBLAS_STATUS_INVALID_VALUE;
  }

  auto plan = std::make_shared<Plan>();
  Plan& p = *plan;
  p.spec = s;
  p.a_rows = s.op_a == CUBLAS_OP_N ? s.m : s.k;
  p.a_cols = s.op_a == CUBLAS_OP_N ? s.k : s.m;
  p.b_rows = s.op_b == CUBLAS_OP_N ? s.k : s.n;
  p.b_cols = s.op_b == CUBLAS_OP_N ? s.n : s.k;

  auto job = std::make_unique<Job>();
  auto dev = [](const void* ptr) { return reinterpret_cast<CUdeviceptr>(ptr); };
  bool alpha_zero = false, beta_zero = false;
  if (s.device_scalars) {
    p.ialpha = job->add({dev(s.alpha), scale_size, 1, 1, 1, 0, 1, true, false});
    p.ibeta = job->add({dev(s.beta), scale_size, 1, 1, 1, 0, 1, true, false});
  } else {
    std::memcpy(p.alpha, s.alpha, scale_size);
    std::memcpy(p.beta, s.beta, scale_size);
    alpha_zero = is_zero(p.alpha, s.scale_type);
    beta_zero = is_zero(p.beta, s.scale_type);
  }
  // A and B are not read when they cannot contribute (k == 0, alpha == 0), as
  // in BLAS; C is not read when beta == 0.
  if (s.k > 0 && !alpha_zero) {
    p.ia = job->add({dev(s.a.ptr), element_size(s.a.type), p.a_rows, p.a_cols, s.a.ld, s.a.stride, s.batch, true, false});
    p.ib = job->add({dev(s.b.ptr), element_size(s.b.type), p.b_rows, p.b_cols, s.b.ld, s.b.stride, s.batch, true, false});
  }
  const bool c_is_d = s.c.ptr == s.d.ptr && s.c.type == s.d.type && s.c.ld == s.d.ld && s.c.stride == s.d.stride;
  const bool read_c = !beta_zero;
  if (read_c && !c_is_d && !s.c.ptr) return CUBLAS_STATUS_INVALID_VALUE;
  p.id = job->add({dev(s.d.ptr), element_size(s.d.type), s.m, s.n, s.d.ld, s.d.stride, s.batch, read_c && c_is_d, true});
  if (read_c) {
    p.ic = c_is_d ? p.id
                  : job->add({dev(s.c.ptr), element_size(s.c.type), s.m, s.n, s.c.ld, s.c.stride, s.batch, true, false});
  }
  if (s.bias) {
    if (!element_size(s.bias_type)) return CUBLAS_STATUS_NOT_SUPPORTED;
    p.ibias = job->add({dev(s.bias), element_size(s.bias_type), s.m, 1, s.m, s.bias_stride, s.batch, true, false});
  }
  job->compute = [plan](Job& j) {
    switch (plan->spec.domain) {
      case Domain::kReal32:
        compute<float>(j, *plan);
        break;
      case Domain::kReal64:
        compute<double>(j, *plan);
        break;
      case Domain::kComplex32:
        compute<std::complex<float>>(j, *plan);
        break;
      case Domain::kComplex64:
        compute<std::complex<double>>(j, *plan);
        break;
    }
  };
  return submit(std::move(job), stream);
}

}  // namespace rgpu::cpublas
