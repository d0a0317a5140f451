//===- EpRegistry.cpp ------------------------------------------------------===//

#include "runtime/ep/EpRegistry.h"

namespace ortc {

const char *deviceTypeName(DeviceType type) {
  switch (type) {
  case DeviceType::Cpu:
    return "cpu";
  case DeviceType::Cuda:
    return "cuda";
  }
  return "unknown";
}

Status RuntimeEp::checkOwnership(const DeviceBuffer &buffer) const {
  if (!buffer.isOwned())
    return Status::error(StatusCode::InvalidArgument,
                         name() + ": cannot deallocate a borrowed view; it owns nothing");
  if (buffer.owner() != this)
    return Status::error(StatusCode::InvalidArgument,
                         name() + ": cannot deallocate a buffer owned by " +
                             buffer.owner()->name() + "; release it through its owner");
  return Status::ok();
}

Result<EpRegistry> EpRegistry::fromFactories(const std::vector<RuntimeEpFactory> &factories) {
  EpRegistry registry;
  for (const RuntimeEpFactory &factory : factories) {
    std::shared_ptr<RuntimeEp> ep = factory.create ? factory.create() : nullptr;
    if (!ep)
      return Status::error(StatusCode::Internal,
                           "the factory of EP '" + factory.name + "' made no EP");
    if (ep->name() != factory.name)
      return Status::error(StatusCode::Internal, "the factory of EP '" + factory.name +
                                                     "' made an EP named '" + ep->name() + "'");
    Status added = registry.add(std::move(ep), factory.aliases);
    if (!added.isOk())
      return added;
  }
  return registry;
}

Status EpRegistry::add(std::shared_ptr<RuntimeEp> ep, std::vector<std::string> aliases) {
  if (!ep)
    return Status::error(StatusCode::InvalidArgument, "cannot register a null EP");
  const std::string &name = ep->name();
  if (name.empty())
    return Status::error(StatusCode::InvalidArgument, "cannot register an EP with no name");
  if (findByName(name))
    return Status::error(StatusCode::AlreadyExists,
                         "an EP named '" + name + "' is already registered");
  for (const std::string &alias : aliases)
    if (alias.empty() || findByName(alias))
      return Status::error(StatusCode::AlreadyExists,
                           "alias '" + alias + "' of " + name + " is empty or already taken");
  std::vector<std::string> keys = ep->contextSourceKeys();
  for (size_t i = 0; i < keys.size(); ++i) {
    const std::string &key = keys[i];
    if (key.empty())
      return Status::error(StatusCode::InvalidArgument,
                           name + " declares an empty context source key");
    auto held = bySource_.find(key);
    if (held != bySource_.end())
      return Status::error(StatusCode::AlreadyExists, "context source key '" + key + "' of " +
                                                          name + " is already held by " +
                                                          held->second->name());
    for (size_t j = 0; j < i; ++j)
      if (keys[j] == key)
        return Status::error(StatusCode::AlreadyExists,
                             name + " declares context source key '" + key + "' twice");
  }
  for (const std::string &key : keys)
    bySource_[key] = ep.get();
  for (const std::string &alias : aliases)
    byAlias_[alias] = ep.get();
  eps_.push_back(std::move(ep));
  return Status::ok();
}

RuntimeEp *EpRegistry::findByName(const std::string &name) const {
  for (const auto &ep : eps_)
    if (ep->name() == name)
      return ep.get();
  auto alias = byAlias_.find(name);
  return alias == byAlias_.end() ? nullptr : alias->second;
}

Status EpRegistry::checkOptions(const EpOptionsByEp &options) const {
  std::map<std::pair<RuntimeEp *, std::string>, std::string> givenAs;
  for (const auto &[name, map] : options) {
    RuntimeEp *ep = findByName(name);
    if (!ep)
      return Status::error(StatusCode::InvalidArgument, "options for EP '" + name +
                                                            "', which this runtime does not have " +
                                                            "(registered: " + describe() + ")");
    Status keys = checkEpOptionKeys(ep->name(), ep->options(), map);
    if (!keys.isOk())
      return keys;
    // The same key under an alias and under the name: which would win?
    for (const auto &entry : map) {
      auto [it, fresh] = givenAs.emplace(std::make_pair(ep, entry.first), name);
      if (!fresh)
        return Status::error(StatusCode::InvalidArgument,
                             ep->name() + ": option " + entry.first + " is given as " + it->second +
                                 ":" + entry.first + " and as " + name + ":" + entry.first);
    }
  }
  return Status::ok();
}

EpOptionMap EpRegistry::optionsFor(const RuntimeEp &ep, const EpOptionsByEp &options) const {
  EpOptionMap merged;
  for (const auto &[name, map] : options)
    if (findByName(name) == &ep)
      merged.insert(map.begin(), map.end());
  return merged;
}

Result<RuntimeEp *> EpRegistry::findBySource(const std::string &source) const {
  auto found = bySource_.find(source);
  if (found != bySource_.end())
    return found->second;
  return Status::error(StatusCode::NotFound, "no registered EP holds context source '" + source +
                                                 "' (registered: " + describe() + ")");
}

std::string EpRegistry::describe() const {
  if (eps_.empty())
    return "none";
  std::string text;
  for (const auto &ep : eps_) {
    if (!text.empty())
      text += ", ";
    text += ep->name() + " [";
    std::vector<std::string> keys = ep->contextSourceKeys();
    for (size_t i = 0; i < keys.size(); ++i)
      text += (i ? ", " : "") + keys[i];
    text += "]";
  }
  return text;
}

} // namespace ortc
