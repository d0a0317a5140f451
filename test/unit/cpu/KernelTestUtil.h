//===- KernelTestUtil.h - calling CPU library kernels from tests -*- C++ -*-===//
//
// Tensors with guard bytes (a kernel writing past an output fails the test),
// float16 / bfloat16 storage through NumericTypes.h's conversions, attribute
// builders, `run` through the kernel registry, the EXPECT_OK / EXPECT_INVALID
// checks, `near` (the one rule for comparing float outputs) and reference
// cases (a call with the outputs a reference implementation gives), shared by
// the kernel test files.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_TEST_UNIT_CPU_KERNELTESTUTIL_H
#define ORTC_TEST_UNIT_CPU_KERNELTESTUTIL_H

#include "providers/cpu/kernels/KernelApi.h"
#include "providers/cpu/kernels/NumericTypes.h"
#include "providers/cpu/kernels/ThreadPool.h"

#include "test/unit/cpu/TestRng.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

namespace ortc::cpu::kernel_test {

using test_support::Rng;

inline int64_t numel(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

struct Tensor {
  ElementType type = ElementType::Float;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;

  Tensor() = default;
  // Guard bytes after the payload catch writes past the end.
  static constexpr size_t kGuard = 64;
  static constexpr uint8_t kGuardByte = 0xCD;

  Tensor(ElementType t, std::vector<int64_t> s) : type(t), shape(std::move(s)) {
    bytes.assign(payload(), 0);
    bytes.resize(payload() + kGuard, kGuardByte);
  }
  size_t payload() const { return size_t(numel(shape)) * elementSize(type); }
  bool guardIntact() const {
    for (size_t i = payload(); i < bytes.size(); ++i)
      if (bytes[i] != kGuardByte)
        return false;
    return true;
  }
  template <typename T> T *data() { return reinterpret_cast<T *>(bytes.data()); }
  template <typename T> const T *data() const { return reinterpret_cast<const T *>(bytes.data()); }
  float *f() { return data<float>(); }
  const float *f() const { return data<float>(); }
  template <typename T> std::vector<T> values() const {
    const T *p = data<T>();
    return std::vector<T>(p, p + numel(shape));
  }
  /// The elements as float32, converted from float16 or bfloat16 storage.
  std::vector<float> floats() const {
    if (type == ElementType::Float)
      return values<float>();
    std::vector<float> out;
    if (type != ElementType::Float16 && type != ElementType::BFloat16) {
      ADD_FAILURE() << "floats() of a " << elementTypeName(type) << " tensor";
      return out;
    }
    for (uint16_t h : values<uint16_t>())
      out.push_back(type == ElementType::Float16 ? kernels::halfToFloat(h)
                                                 : kernels::bf16ToFloat(h));
    return out;
  }
  /// Stores `v` (one value per element), rounded to nearest even for float16
  /// and bfloat16.
  void setFloats(const std::vector<float> &v) {
    EXPECT_EQ(int64_t(v.size()), numel(shape));
    if (int64_t(v.size()) != numel(shape))
      return;
    for (size_t i = 0; i < v.size(); ++i) {
      if (type == ElementType::Float) {
        f()[i] = v[i];
      } else if (type == ElementType::Float16 || type == ElementType::BFloat16) {
        data<uint16_t>()[i] =
            type == ElementType::Float16 ? kernels::floatToHalf(v[i]) : kernels::floatToBf16(v[i]);
      } else {
        ADD_FAILURE() << "setFloats on a " << elementTypeName(type) << " tensor";
        return;
      }
    }
  }
  /// An Undefined tensor (`omitted()`) views as no tensor: an omitted input.
  TensorView view() const {
    TensorView v;
    if (type == ElementType::Undefined)
      return v;
    v.data = const_cast<uint8_t *>(bytes.data());
    v.type = type;
    v.shape = shape;
    return v;
  }
};

/// A float32 tensor holding `v`, or a float16 / bfloat16 one holding `v` rounded.
inline Tensor F(std::vector<int64_t> shape, const std::vector<float> &v,
                ElementType type = ElementType::Float) {
  Tensor t(type, std::move(shape));
  t.setFloats(v);
  return t;
}

/// A tensor of zeros.
inline Tensor zeros(std::vector<int64_t> shape, ElementType type = ElementType::Float) {
  return Tensor(type, std::move(shape));
}

/// An omitted optional input, for the tensor lists of reference cases (the
/// pointer lists of `run` pass null).
inline Tensor omitted() { return Tensor(ElementType::Undefined, {}); }

inline Tensor randomF(std::vector<int64_t> shape, uint64_t seed, float scale = 1.f) {
  Tensor t(ElementType::Float, std::move(shape));
  Rng rng(seed);
  for (int64_t i = 0; i < numel(t.shape); ++i)
    t.f()[i] = rng.next() * scale;
  return t;
}

inline Tensor I64(std::vector<int64_t> shape, const std::vector<int64_t> &v) {
  Tensor t(ElementType::Int64, std::move(shape));
  EXPECT_EQ(int64_t(v.size()), numel(t.shape));
  std::copy(v.begin(), v.end(), t.data<int64_t>());
  return t;
}

inline Tensor I64(const std::vector<int64_t> &v) { return I64({int64_t(v.size())}, v); }

template <typename T> ElementType typeOf();
template <> inline ElementType typeOf<float>() { return ElementType::Float; }
template <> inline ElementType typeOf<double>() { return ElementType::Double; }
template <> inline ElementType typeOf<int8_t>() { return ElementType::Int8; }
template <> inline ElementType typeOf<int16_t>() { return ElementType::Int16; }
template <> inline ElementType typeOf<int32_t>() { return ElementType::Int32; }
template <> inline ElementType typeOf<int64_t>() { return ElementType::Int64; }
template <> inline ElementType typeOf<uint8_t>() { return ElementType::UInt8; }
template <> inline ElementType typeOf<uint16_t>() { return ElementType::UInt16; }
template <> inline ElementType typeOf<uint32_t>() { return ElementType::UInt32; }
template <> inline ElementType typeOf<uint64_t>() { return ElementType::UInt64; }

/// A tensor of element type `type` whose elements are the bits of `v`
/// (e.g. make<uint16_t>(ElementType::Float16, ...) for float16 bit patterns).
template <typename T>
Tensor make(ElementType type, std::vector<int64_t> shape, const std::vector<T> &v) {
  Tensor t(type, std::move(shape));
  EXPECT_EQ(elementSize(type), sizeof(T));
  EXPECT_EQ(int64_t(v.size()), numel(t.shape));
  if (elementSize(type) == sizeof(T) && int64_t(v.size()) == numel(t.shape))
    std::copy(v.begin(), v.end(), t.data<T>());
  return t;
}
/// A tensor of T's element type holding `v`.
template <typename T> Tensor make(std::vector<int64_t> shape, const std::vector<T> &v) {
  return make<T>(typeOf<T>(), std::move(shape), v);
}
inline Tensor D(std::vector<int64_t> s, const std::vector<double> &v) { return make<double>(s, v); }
inline Tensor I32(std::vector<int64_t> s, const std::vector<int32_t> &v) {
  return make<int32_t>(s, v);
}
inline Tensor I16(std::vector<int64_t> s, const std::vector<int16_t> &v) {
  return make<int16_t>(s, v);
}
inline Tensor I8(std::vector<int64_t> s, const std::vector<int8_t> &v) {
  return make<int8_t>(s, v);
}
inline Tensor U8(std::vector<int64_t> s, const std::vector<uint8_t> &v) {
  return make<uint8_t>(s, v);
}
/// A bool tensor: nonzero entries of `v` are true.
inline Tensor Bool(std::vector<int64_t> s, const std::vector<int> &v) {
  std::vector<uint8_t> bytes;
  for (int x : v)
    bytes.push_back(x != 0);
  return make<uint8_t>(ElementType::Bool, std::move(s), bytes);
}
inline Tensor scalarI64(int64_t v) { return make<int64_t>({}, {v}); }

inline Tensor I32(const std::vector<int32_t> &v) {
  Tensor t(ElementType::Int32, {int64_t(v.size())});
  std::copy(v.begin(), v.end(), t.data<int32_t>());
  return t;
}

/// An iota tensor of any element type (values wrap for narrow types).
inline Tensor iota(ElementType type, std::vector<int64_t> shape) {
  Tensor t(type, std::move(shape));
  size_t e = elementSize(type);
  for (int64_t i = 0; i < numel(t.shape); ++i) {
    uint64_t v = uint64_t(i * 7 + 3);
    std::memcpy(t.bytes.data() + i * e, &v, e); // little endian: low bytes
  }
  return t;
}

struct Attrs {
  StepAttributes a;
  Attrs &i(const std::string &n, int64_t v) {
    a.ints[n] = {v};
    return *this;
  }
  Attrs &is(const std::string &n, std::vector<int64_t> v) {
    a.ints[n] = std::move(v);
    return *this;
  }
  Attrs &f(const std::string &n, float v) {
    a.floats[n] = {v};
    return *this;
  }
  Attrs &s(const std::string &n, std::string v) {
    a.strings[n] = std::move(v);
    return *this;
  }
};

inline Scratch &sharedScratch() {
  static Scratch scratch;
  return scratch;
}

/// The pool kernels run on; null (the default) runs them on the caller.
inline ThreadPool *&kernelPool() {
  static ThreadPool *pool = nullptr;
  return pool;
}

/// Runs kernel `name` on `pool` (kernelPool() when null); a null input is an
/// omitted optional input, a null output one not asked for.
inline Status run(const std::string &name, const Attrs &attrs, std::vector<const Tensor *> ins,
                  std::vector<Tensor *> outs, ThreadPool *pool = nullptr) {
  std::vector<TensorView> iv, ov;
  for (const Tensor *t : ins)
    iv.push_back(t ? t->view() : TensorView{});
  for (Tensor *t : outs)
    ov.push_back(t ? t->view() : TensorView{});
  LibraryKernelFn fn = findLibraryKernel(name);
  if (!fn)
    return Status::error(StatusCode::NotFound, "no kernel " + name);
  ThreadPool *on = pool ? pool : kernelPool();
  KernelCall call{attrs.a, iv.data(), iv.size(), ov.data(), ov.size(), sharedScratch(), on};
  Status status = fn(call);
  for (size_t i = 0; i < outs.size(); ++i)
    if (outs[i]) {
      EXPECT_TRUE(outs[i]->guardIntact()) << name << " wrote past the end of output " << i;
    }
  return status;
}

#define EXPECT_OK(expr)                                                                            \
  do {                                                                                             \
    Status s_ = (expr);                                                                            \
    EXPECT_TRUE(s_.isOk()) << s_.message();                                                        \
  } while (0)

#define ASSERT_OK(expr)                                                                            \
  do {                                                                                             \
    Status s_ = (expr);                                                                            \
    ASSERT_TRUE(s_.isOk()) << s_.message();                                                        \
  } while (0)

#define EXPECT_INVALID(expr, needle)                                                               \
  do {                                                                                             \
    Status s_ = (expr);                                                                            \
    EXPECT_EQ(s_.code(), StatusCode::InvalidArgument) << s_.message();                             \
    EXPECT_NE(s_.message().find(needle), std::string::npos) << s_.message();                       \
  } while (0)

/// How close `near` wants a value: |got - want| <= atol + rtol |want|, the
/// rule of numpy's allclose. One number sets both: Tol(1e-5) allows
/// 1e-5 (1 + |want|); Tol(1e-6, 0) is a purely absolute bound; 0 is exact.
struct Tol {
  double atol, rtol;
  Tol(double both) : atol(both), rtol(both) {}
  Tol(double atol, double rtol) : atol(atol), rtol(rtol) {}
};

/// The default tolerance of `near`; a test that needs a looser one says so.
constexpr double kDefaultTol = 1e-5;

/// The one way the kernel tests compare float outputs: every element of `got`
/// against a float or double reference, within `tol`; a NaN matches a NaN, an
/// infinity only itself.
template <typename W, typename = std::enable_if_t<std::is_floating_point_v<W>>>
::testing::AssertionResult near(const std::vector<float> &got, const std::vector<W> &want,
                                Tol tol = kDefaultTol) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << "size " << got.size() << " != " << want.size();
  for (size_t i = 0; i < got.size(); ++i) {
    double g = got[i], w = want[i];
    if (std::isnan(w) && std::isnan(g))
      continue;
    if (std::isinf(w) && g == w)
      continue;
    if (!(std::fabs(g - w) <= tol.atol + tol.rtol * std::fabs(w)))
      return ::testing::AssertionFailure()
             << "at " << i << ": got " << g << ", want " << w << " (|diff| " << std::fabs(g - w)
             << " > " << tol.atol << " + " << tol.rtol << " |want|)";
  }
  return ::testing::AssertionSuccess();
}
/// For a braced list of wanted values: near(Y.floats(), {1, 2.5}).
inline ::testing::AssertionResult near(const std::vector<float> &got,
                                       const std::vector<double> &want, Tol tol = kDefaultTol) {
  return near<double>(got, want, tol);
}

//===----------------------------------------------------------------------===//
// Reference cases
//===----------------------------------------------------------------------===//

/// One kernel call with the outputs a reference implementation gives for it
/// (generated files such as SpatialReferenceCases.inc list them); an
/// `omitted()` input is an omitted optional input.
struct RefCase {
  const char *name, *op;
  std::vector<Tensor> inputs;
  Attrs attrs;
  std::vector<Tensor> outputs;
};

/// Runs `c` into outputs filled with the guard pattern (an element the kernel
/// leaves unwritten shows) and compares them with its outputs: float32,
/// float16 and bfloat16 ones with `near` and `tol`, others bit for bit.
inline ::testing::AssertionResult matchesReference(const RefCase &c, Tol tol = kDefaultTol) {
  std::vector<Tensor> got;
  for (const Tensor &want : c.outputs) {
    got.emplace_back(want.type, want.shape);
    std::fill(got.back().bytes.begin(), got.back().bytes.end(), Tensor::kGuardByte);
  }
  std::vector<const Tensor *> ins;
  for (const Tensor &t : c.inputs)
    ins.push_back(t.type == ElementType::Undefined ? nullptr : &t);
  std::vector<Tensor *> outs;
  for (Tensor &t : got)
    outs.push_back(&t);
  Status s = run(c.op, c.attrs, ins, outs);
  if (!s.isOk())
    return ::testing::AssertionFailure() << c.name << ": " << s.message();
  for (size_t k = 0; k < got.size(); ++k) {
    const Tensor &want = c.outputs[k];
    ElementType type = want.type;
    if (type == ElementType::Float || type == ElementType::Float16 ||
        type == ElementType::BFloat16) {
      ::testing::AssertionResult r = near(got[k].floats(), want.floats(), tol);
      if (!r)
        return ::testing::AssertionFailure() << c.name << " output " << k << " " << r.message();
    } else if (!std::equal(want.bytes.begin(), want.bytes.begin() + want.payload(),
                           got[k].bytes.begin())) {
      return ::testing::AssertionFailure() << c.name << " output " << k << " differs";
    }
  }
  return ::testing::AssertionSuccess();
}

} // namespace ortc::cpu::kernel_test

#endif // ORTC_TEST_UNIT_CPU_KERNELTESTUTIL_H
