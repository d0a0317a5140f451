//===- EpRegistry.h - EPs by name and by context source key -----*- C++ -*-===//
//
// The runtime maps each EPContext node's `source` to the EP that declared that
// key. A key held by two EPs, an EP name used twice, or an empty key is an
// error at registration, not a silent override.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_RUNTIME_EP_EPREGISTRY_H
#define ORTC_RUNTIME_EP_EPREGISTRY_H

#include "runtime/ep/RuntimeEp.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace ortc {

class EpRegistry {
public:
  /// Adds `ep` with the keys it reports from contextSourceKeys().
  Status add(std::shared_ptr<RuntimeEp> ep);

  RuntimeEp *findByName(const std::string &name) const;
  /// The EP holding `source`, or an error naming the source and listing every
  /// registered EP with its keys.
  Result<RuntimeEp *> findBySource(const std::string &source) const;

  /// "cpu_ep [ortc_cpu], cuda_ep [ortc_cuda]" (EPs in registration order).
  std::string describe() const;
  const std::vector<std::shared_ptr<RuntimeEp>> &eps() const { return eps_; }

private:
  std::vector<std::shared_ptr<RuntimeEp>> eps_;
  std::map<std::string, RuntimeEp *> bySource_;
};

} // namespace ortc

#endif // ORTC_RUNTIME_EP_EPREGISTRY_H
