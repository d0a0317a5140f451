//===- Profile.h - where a run's time goes ----------------------*- C++ -*-===//
//
// What `ortc bench --profile` reads: the time of each partition a session
// runs and, where its EP times them, of each step inside it (a generated
// kernel, a library call, a control-flow step with its bodies). Filled while
// attached to a session (Session::attachProfile); runs must not overlap then.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_RUNTIME_EP_PROFILE_H
#define ORTC_RUNTIME_EP_PROFILE_H

#include <cstdint>
#include <string>
#include <vector>

namespace ortc {

struct StepProfile {
  std::string kind;   // as the EP names its step kinds ("Kernel", "Library", "Loop", ...)
  std::string callee; // the generated function or library kernel it calls
  std::string ops;    // the ONNX op types it runs, comma-separated
  std::string nodes;  // the ONNX node names, comma-separated
  std::string shape;  // its first output's shape at the last timed call
  uint64_t nanoseconds = 0, calls = 0;
};

struct PartitionProfile {
  std::string name, ep;
  uint64_t nanoseconds = 0, runs = 0; // the whole partition, as the session times it
  std::vector<StepProfile> steps;     // empty when its EP times no steps
};

struct RunProfile {
  std::vector<PartitionProfile> partitions; // in run order
  uint64_t nanoseconds = 0, runs = 0;       // whole runs
};

} // namespace ortc

#endif // ORTC_RUNTIME_EP_PROFILE_H
