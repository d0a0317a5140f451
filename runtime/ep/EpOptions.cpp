//===- EpOptions.cpp -------------------------------------------------------===//

#include "runtime/ep/EpOptions.h"

#include <algorithm>

namespace ortc {

std::string describeEpOptions(const std::vector<EpOptionSpec> &specs) {
  if (specs.empty())
    return "no options";
  std::string text;
  for (const EpOptionSpec &spec : specs)
    text += (text.empty() ? "" : ", ") + spec.key + "=" + spec.value;
  return text;
}

Status checkEpOptionKeys(const std::string &ep, const std::vector<EpOptionSpec> &specs,
                         const EpOptionMap &options) {
  for (const auto &[key, value] : options) {
    bool known = std::any_of(specs.begin(), specs.end(),
                             [&](const EpOptionSpec &spec) { return spec.key == key; });
    if (!known)
      return Status::error(StatusCode::InvalidArgument, ep + ": unknown option '" + key + "' (" +
                                                            ep + " accepts " +
                                                            describeEpOptions(specs) + ")");
  }
  return Status::ok();
}

Status badEpOptionValue(const std::string &ep, const std::string &key, const std::string &value,
                        const std::string &why, const std::string &accepts) {
  return Status::error(StatusCode::InvalidArgument, ep + ": option " + key + "='" + value +
                                                        "': " + why + " (accepts " + accepts + ")");
}

Status parseEpOptionArgument(const std::string &text, EpOptionsByEp &into) {
  size_t colon = text.find(':');
  size_t equals = text.find('=', colon == std::string::npos ? 0 : colon);
  if (colon == std::string::npos || colon == 0 || equals == std::string::npos ||
      equals == colon + 1)
    return Status::error(StatusCode::InvalidArgument,
                         "--ep-option wants EP:KEY=VALUE (e.g. cpu:target=x86-64-v3), got '" +
                             text + "'");
  std::string ep = text.substr(0, colon);
  std::string key = text.substr(colon + 1, equals - colon - 1);
  EpOptionMap &options = into[ep];
  if (options.count(key))
    return Status::error(StatusCode::InvalidArgument,
                         "--ep-option " + ep + ":" + key + " is given twice");
  options[key] = text.substr(equals + 1);
  return Status::ok();
}

std::string formatEpOptionsHelp(const std::string &ep, const std::vector<EpOptionSpec> &specs,
                                const std::string &indent) {
  // Help text wrapped at 78 columns, in a column after the widest name.
  constexpr size_t kWidth = 78, kColumn = 24;
  std::string out;
  for (const EpOptionSpec &spec : specs) {
    std::string name = indent + ep + ":" + spec.key + "=" + spec.value;
    std::string help = spec.help;
    if (!spec.defaultValue.empty())
      help += " Default: " + spec.defaultValue + ".";
    std::string line = name;
    if (line.size() + 2 > kColumn) {
      out += line + "\n";
      line.clear();
    }
    line.resize(kColumn, ' ');
    size_t start = 0;
    while (start < help.size()) {
      size_t room = kWidth - kColumn;
      size_t end = start + room;
      if (end >= help.size()) {
        end = help.size();
      } else {
        size_t space = help.rfind(' ', end);
        end = space == std::string::npos || space <= start ? end : space;
      }
      line += help.substr(start, end - start);
      out += line + "\n";
      line.assign(kColumn, ' ');
      start = end;
      while (start < help.size() && help[start] == ' ')
        ++start;
    }
  }
  return out;
}

} // namespace ortc
