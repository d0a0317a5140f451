//===- CompileProgress.h - where a long compile is --------------*- C++ -*-===//
//
// The compile driver reports its stages and partitions here, and an EP may
// report work inside a partition (ops planned, kernels generated). The ortc
// tool draws a progress line from it; everything else ignores it. Calls come
// from the compiling thread.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_COMPILER_EP_COMPILEPROGRESS_H
#define ORTC_COMPILER_EP_COMPILEPROGRESS_H

#include <string>

namespace ortc {

class CompileProgress {
public:
  virtual ~CompileProgress() = default;
  /// A stage begins: "import", "generic-passes", "partition", "ep-passes",
  /// "codegen", "write".
  virtual void stage(const std::string &name) {}
  /// Code generation of partition `index` (0-based) of `count` starts.
  virtual void partition(int index, int count, const std::string &name, const std::string &ep) {}
  /// Inside the current partition: `done` of `total` units of `what`
  /// ("ops", "kernels").
  virtual void work(const std::string &what, int done, int total) {}
};

} // namespace ortc

#endif // ORTC_COMPILER_EP_COMPILEPROGRESS_H
