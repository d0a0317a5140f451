//===- CompileReport.h - what `ortc compile --report` prints ----*- C++ -*-===//
//
// One compile described twice: as the text report (placements, declines,
// what each EP compiled, stage timings) and as one JSON document with the
// same facts, whose fields docs/compile-report.md lists.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_COMPILER_DRIVER_COMPILEREPORT_H
#define ORTC_COMPILER_DRIVER_COMPILEREPORT_H

#include "compiler/Driver/Driver.h"

#include <string>

namespace ortc {

/// The version of the JSON report's layout; bumped when a field changes.
constexpr int kCompileReportVersion = 1;

/// The JSON document (one object, no trailing newline).
std::string formatCompileReportJson(const DriverOptions &options, const DriverResult &result,
                                    const std::string &ortcVersion);

/// The text report: the partition table, what each EP compiled, and the
/// stage timings.
std::string formatCompileReportText(const DriverResult &result);

} // namespace ortc

#endif // ORTC_COMPILER_DRIVER_COMPILEREPORT_H
