//===- CpuBlob.h - the CPU EP's EPContext blob ------------------*- C++ -*-===//
//
// The CPU EP's blob is the generic envelope (runtime/support/BlobContainer.h)
// with three sections, each 64-byte aligned relative to the blob's start:
//   "META"  the execution plan, a FlatBuffer (CpuPlan.fbs, identifier "OCPU")
//   "CODE"  an ELF shared object with the generated kernels
//   "WGHT"  the packed weights (may be empty)
// openCpuBlob() verifies everything the executor relies on before it hands out
// a pointer, so the executor can index buffers and read weights unchecked.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_PROVIDERS_CPU_BLOB_CPUBLOB_H
#define ORTC_PROVIDERS_CPU_BLOB_CPUBLOB_H

#include "providers/cpu/blob/CpuPlan_generated.h"
#include "runtime/ep/DimExpr.h"
#include "runtime/ep/Status.h"
#include "runtime/support/BlobContainer.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ortc::cpu {

/// The meaning of the plan's tables; bump it when a reader of the old version
/// would misread a new plan (see blob/README.md).
constexpr uint32_t kCpuPlanFormatVersion = 7;
constexpr const char *kCpuEpName = "cpu_ep";

constexpr const char *kCpuMetaSection = "META";
constexpr const char *kCpuCodeSection = "CODE";
constexpr const char *kCpuWeightsSection = "WGHT";
/// Tables that Gathers read row by row (Buffer.row_table), flagged read
/// sparsely in the envelope; absent or empty when there are none.
constexpr const char *kCpuRowsSection = "ROWS";
/// Alignment of every section, and of every weight inside WGHT.
constexpr uint32_t kCpuBlobAlignment = 64;

/// Serializes `plan` and lays out the blob. Refuses a plan that openCpuBlob
/// would refuse for its contents (everything but the host checks), so that a
/// compiler bug fails at compile time rather than at load time.
Result<std::vector<char>> writeCpuBlob(const fb::PlanT &plan, const char *code, size_t codeSize,
                                       const char *weights, size_t weightsSize,
                                       const char *rows = nullptr, size_t rowsSize = 0);
/// The same with WGHT laid down in place after kBlobHeadRoom bytes of
/// `weightsInPlace`, which becomes the blob: the weights are not copied.
Result<std::vector<char>> writeCpuBlob(const fb::PlanT &plan, const char *code, size_t codeSize,
                                       std::vector<char> weightsInPlace, const char *rows = nullptr,
                                       size_t rowsSize = 0);

/// A verified blob; every pointer points into the caller's bytes.
struct CpuBlobView {
  const fb::Plan *plan = nullptr;
  const char *code = nullptr;
  size_t codeSize = 0;
  const char *weights = nullptr; // 64-byte aligned relative to the blob's start
  size_t weightsSize = 0;
  const char *rows = nullptr; // ROWS, where Buffer.row_table weights lie
  size_t rowsSize = 0;
};

/// Verifies `size` bytes at `data` (8-byte aligned: FlatBuffers reads scalars
/// in place) and opens them. `what` names the blob in errors. The host checks
/// compare the plan's hardware_architecture ("x86_64+avx2+fma") with
/// `hostArchitecture` ("x86_64") and require every cpu_features entry to be
/// in `hostCpuFeatures`. Returns Unsupported for a blob this build or host
/// cannot run (versions, architecture, features) and InvalidArgument for one
/// that is corrupt or inconsistent; each error is one line.
/// `parallel` spreads the checksum over the caller's threads; with a file
/// mapping, ROWS' pages are given back as the checksum passes (openBlob()).
Result<CpuBlobView> openCpuBlob(const char *data, size_t size, const std::string &what,
                                const std::string &hostArchitecture,
                                const std::vector<std::string> &hostCpuFeatures,
                                const ParallelChunks &parallel = {},
                                BlobBacking backing = BlobBacking::Memory);

/// openCpuBlob() for bytes at any address (an inline blob inside a protobuf
/// string): copies them once into `storage` (copyAndOpenBlob(): page aligned,
/// huge pages where offered, the checksum taken over the copy as it is
/// written) and verifies the copy; the view points into `storage`, which the
/// caller keeps as long as it uses the view. On failure `storage` is empty.
Result<CpuBlobView> openCpuBlobCopy(const char *data, size_t size, const std::string &what,
                                    const std::string &hostArchitecture,
                                    const std::vector<std::string> &hostCpuFeatures,
                                    OwnedBlobBytes &storage, const ParallelChunks &parallel = {});

/// The plan's dim expressions as DimExpr.h nodes (empty when it has none).
std::vector<DimNode> cpuPlanDimNodes(const fb::Plan &plan);

/// Whether an arena buffer has a symbolic dim: then the runtime lays out the
/// arena per set of symbol values, and the plan's arena offsets are unused.
bool cpuPlanHasSymbolicArena(const fb::Plan &plan);

} // namespace ortc::cpu

#endif // ORTC_PROVIDERS_CPU_BLOB_CPUBLOB_H
