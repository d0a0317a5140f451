//===- CompileEpRegistry.cpp -----------------------------------------------===//

#include "compiler/EP/CompileEpRegistry.h"

namespace ortc {

bool CompileEpRegistry::add(CompileEpPlugin plugin, std::string &error) {
  if (plugin.name.empty() || !plugin.create) {
    error = "cannot register a compile EP without a name and a factory";
    return false;
  }
  std::vector<std::string> names = plugin.aliases;
  names.push_back(plugin.name);
  for (const std::string &name : names)
    if (name.empty() || find(name)) {
      error = "compile EP '" + plugin.name + "': the name '" + name +
              "' is empty or already taken (registered: " + describe() + ")";
      return false;
    }
  plugins_.push_back(std::move(plugin));
  return true;
}

const CompileEpPlugin *CompileEpRegistry::find(const std::string &name) const {
  for (const CompileEpPlugin &plugin : plugins_) {
    if (plugin.name == name)
      return &plugin;
    for (const std::string &alias : plugin.aliases)
      if (alias == name)
        return &plugin;
  }
  return nullptr;
}

std::vector<std::string> CompileEpRegistry::defaultNames() const {
  std::vector<std::string> out;
  for (const CompileEpPlugin &plugin : plugins_)
    if (plugin.usedByDefault)
      out.push_back(plugin.name);
  return out;
}

std::vector<std::string> CompileEpRegistry::names() const {
  std::vector<std::string> names;
  for (const CompileEpPlugin &plugin : plugins_)
    names.push_back(plugin.name);
  return names;
}

std::string CompileEpRegistry::describe() const {
  if (plugins_.empty())
    return "none";
  std::string text;
  for (const CompileEpPlugin &plugin : plugins_) {
    text += (text.empty() ? "" : ", ") + plugin.name;
    for (size_t i = 0; i < plugin.aliases.size(); ++i)
      text += (i ? ", " : " (alias ") + plugin.aliases[i];
    if (!plugin.aliases.empty())
      text += ")";
  }
  return text;
}

std::unique_ptr<CompileEp> CompileEpRegistry::create(const std::string &name,
                                                     const EpOptionMap &options,
                                                     std::string &error) const {
  const CompileEpPlugin *plugin = find(name);
  if (!plugin) {
    error = "no EP named '" + name + "' in this build (available: " + describe() + ")";
    return nullptr;
  }
  Status keys = checkEpOptionKeys(plugin->name, plugin->options, options);
  if (!keys.isOk()) {
    error = keys.message();
    return nullptr;
  }
  std::unique_ptr<CompileEp> ep = plugin->create(options, error);
  if (ep && ep->name() != plugin->name) {
    error = "the factory of EP '" + plugin->name + "' made an EP named '" + ep->name() + "'";
    return nullptr;
  }
  return ep;
}

void CompileEpRegistry::registerPasses(mlir::DialectRegistry &dialects) const {
  for (const CompileEpPlugin &plugin : plugins_)
    if (plugin.registerPasses)
      plugin.registerPasses(dialects);
}

} // namespace ortc
