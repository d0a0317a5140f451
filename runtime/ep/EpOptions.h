//===- EpOptions.h - per-EP options as key/value pairs -----------*- C++ -*-===//
//
// Each EP, compile half and runtime half alike, owns its options: it lists
// the keys it accepts (with a value description and help text) and checks
// their values itself. Generic code only routes `EP:KEY=VALUE` pairs to the
// EP named and refuses keys the EP does not list, with one line that names
// the EP, the key and what the EP accepts.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_RUNTIME_EP_EPOPTIONS_H
#define ORTC_RUNTIME_EP_EPOPTIONS_H

#include "runtime/ep/Status.h"

#include <map>
#include <string>
#include <vector>

namespace ortc {

/// One key an EP accepts.
struct EpOptionSpec {
  std::string key;          // "target"
  std::string value;        // what the value looks like: "NAME", "N", "on|off"
  std::string help;         // one or more sentences for --help
  std::string defaultValue; // as the user would write it; empty: none
};

/// An EP's options: key -> value.
using EpOptionMap = std::map<std::string, std::string>;

/// Options for several EPs, by the EP name the user wrote (an alias or the
/// full name; the registries resolve it).
using EpOptionsByEp = std::map<std::string, EpOptionMap>;

/// "target=NAME, threads=N" (or "no options").
std::string describeEpOptions(const std::vector<EpOptionSpec> &specs);

/// Refuses a key of `options` that `specs` does not list: InvalidArgument
/// "EP: unknown option 'KEY' (EP accepts: ...)".
Status checkEpOptionKeys(const std::string &ep, const std::vector<EpOptionSpec> &specs,
                         const EpOptionMap &options);

/// The error for a value an EP refuses: "EP: option KEY=VALUE: WHY (accepts: ...)".
Status badEpOptionValue(const std::string &ep, const std::string &key, const std::string &value,
                        const std::string &why, const std::string &accepts);

/// Parses "EP:KEY=VALUE" (the form of --ep-option) into `into`. A key given
/// twice for one EP is refused, as is a missing EP, key or '='.
Status parseEpOptionArgument(const std::string &text, EpOptionsByEp &into);

/// The help text for one EP's options, one entry per key, each line after
/// `indent`: "  EP:KEY=VALUE   help (default: D)".
std::string formatEpOptionsHelp(const std::string &ep, const std::vector<EpOptionSpec> &specs,
                                const std::string &indent = "  ");

} // namespace ortc

#endif // ORTC_RUNTIME_EP_EPOPTIONS_H
