//===- KernelTestUtil.h - calling CPU library kernels from tests -*- C++ -*-===//
//
// Tensors with guard bytes (a kernel writing past an output fails the test),
// attribute builders, `run` through the kernel registry, and the EXPECT_OK /
// EXPECT_INVALID checks, shared by the kernel test files.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_TEST_UNIT_CPU_KERNELTESTUTIL_H
#define ORTC_TEST_UNIT_CPU_KERNELTESTUTIL_H

#include "providers/cpu/kernels/KernelApi.h"
#include "providers/cpu/kernels/ThreadPool.h"

#include "test/unit/cpu/TestRng.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
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
  std::vector<float> floats() const { return values<float>(); }
  TensorView view() const {
    TensorView v;
    v.data = const_cast<uint8_t *>(bytes.data());
    v.type = type;
    v.shape = shape;
    return v;
  }
};

inline Tensor F(std::vector<int64_t> shape, const std::vector<float> &v) {
  Tensor t(ElementType::Float, std::move(shape));
  EXPECT_EQ(int64_t(v.size()), numel(t.shape));
  std::copy(v.begin(), v.end(), t.f());
  return t;
}

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
template <> inline ElementType typeOf<int32_t>() { return ElementType::Int32; }
template <> inline ElementType typeOf<int64_t>() { return ElementType::Int64; }
template <> inline ElementType typeOf<uint8_t>() { return ElementType::UInt8; }
template <> inline ElementType typeOf<uint64_t>() { return ElementType::UInt64; }

/// A tensor of T's element type holding `v`.
template <typename T> Tensor make(std::vector<int64_t> shape, const std::vector<T> &v) {
  Tensor t(typeOf<T>(), std::move(shape));
  EXPECT_EQ(int64_t(v.size()), numel(t.shape));
  std::copy(v.begin(), v.end(), t.data<T>());
  return t;
}
inline Tensor D(std::vector<int64_t> s, const std::vector<double> &v) { return make<double>(s, v); }
inline Tensor I32(std::vector<int64_t> s, const std::vector<int32_t> &v) {
  return make<int32_t>(s, v);
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

/// Runs kernel `name`; a null input is an omitted optional input.
inline Status run(const std::string &name, const Attrs &attrs, std::vector<const Tensor *> ins,
           std::vector<Tensor *> outs) {
  std::vector<TensorView> iv, ov;
  for (const Tensor *t : ins)
    iv.push_back(t ? t->view() : TensorView{});
  for (Tensor *t : outs)
    ov.push_back(t ? t->view() : TensorView{});
  LibraryKernelFn fn = findLibraryKernel(name);
  if (!fn)
    return Status::error(StatusCode::NotFound, "no kernel " + name);
  KernelCall call{attrs.a,   iv.data(),       iv.size(), ov.data(),
                  ov.size(), sharedScratch(), kernelPool()};
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

#define EXPECT_INVALID(expr, needle)                                                               \
  do {                                                                                             \
    Status s_ = (expr);                                                                            \
    EXPECT_EQ(s_.code(), StatusCode::InvalidArgument) << s_.message();                             \
    EXPECT_NE(s_.message().find(needle), std::string::npos) << s_.message();                       \
  } while (0)

inline ::testing::AssertionResult near(const std::vector<float> &got, const std::vector<float> &want,
                                float tol = 1e-4f) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << "size " << got.size() << " != " << want.size();
  for (size_t i = 0; i < got.size(); ++i) {
    float g = got[i], w = want[i];
    if (std::isnan(w) && std::isnan(g))
      continue;
    if (std::isinf(w) && g == w)
      continue;
    if (!(std::fabs(g - w) <= tol * (1.f + std::fabs(w))))
      return ::testing::AssertionFailure() << "at " << i << ": got " << g << ", want " << w;
  }
  return ::testing::AssertionSuccess();
}

/// `got` against a double-precision reference: |g - w| <= tol (1 + |w|).
inline ::testing::AssertionResult nearRef(const std::vector<float> &got,
                                          const std::vector<double> &want, double tol = 1e-5) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << "size " << got.size() << " != " << want.size();
  for (size_t i = 0; i < got.size(); ++i) {
    double g = got[i], w = want[i];
    if (std::isnan(w) && std::isnan(g))
      continue;
    if (std::isinf(w) && g == w)
      continue;
    if (!(std::fabs(g - w) <= tol * (1 + std::fabs(w))))
      return ::testing::AssertionFailure() << "at " << i << ": got " << g << ", want " << w;
  }
  return ::testing::AssertionSuccess();
}

} // namespace ortc::cpu::kernel_test

#endif // ORTC_TEST_UNIT_CPU_KERNELTESTUTIL_H
