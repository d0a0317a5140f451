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

Status EpRegistry::add(std::shared_ptr<RuntimeEp> ep) {
  if (!ep)
    return Status::error(StatusCode::InvalidArgument, "cannot register a null EP");
  const std::string &name = ep->name();
  if (name.empty())
    return Status::error(StatusCode::InvalidArgument, "cannot register an EP with no name");
  if (findByName(name))
    return Status::error(StatusCode::AlreadyExists,
                         "an EP named '" + name + "' is already registered");
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
  eps_.push_back(std::move(ep));
  return Status::ok();
}

RuntimeEp *EpRegistry::findByName(const std::string &name) const {
  for (const auto &ep : eps_)
    if (ep->name() == name)
      return ep.get();
  return nullptr;
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
