//===- Status.h - errors as values across the EP contract -------*- C++ -*-===//
//
// The runtime half of the EP contract never throws: every call returns a
// Status, or a Result<T> that holds either a value or an error Status.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_RUNTIME_EP_STATUS_H
#define ORTC_RUNTIME_EP_STATUS_H

#include <cassert>
#include <optional>
#include <string>
#include <utility>

namespace ortc {

enum class StatusCode {
  Ok,
  InvalidArgument,    // bad input from the caller (shape, dtype, ownership)
  NotFound,           // no EP, file or key of that name
  AlreadyExists,      // a name or context source key registered twice
  Unsupported,        // the EP does not offer this (capture, load_context, ...)
  FailedPrecondition, // called out of order (not initialized, capture open)
  Internal,           // a bug or a device error
};

class Status {
public:
  static Status ok() { return Status(); }
  static Status error(StatusCode code, std::string message) {
    assert(code != StatusCode::Ok);
    Status s;
    s.code_ = code;
    s.message_ = std::move(message);
    return s;
  }
  bool isOk() const { return code_ == StatusCode::Ok; }
  StatusCode code() const { return code_; }
  const std::string &message() const { return message_; }

private:
  StatusCode code_ = StatusCode::Ok;
  std::string message_;
};

/// A value or the error that prevented it.
template <typename T> class Result {
public:
  Result(T value) : value_(std::move(value)) {}
  Result(Status status) : status_(std::move(status)) { assert(!status_.isOk()); }
  bool isOk() const { return value_.has_value(); }
  const Status &status() const { return status_; }
  T &value() {
    assert(isOk());
    return *value_;
  }
  T takeValue() {
    assert(isOk());
    return std::move(*value_);
  }

private:
  std::optional<T> value_;
  Status status_;
};

} // namespace ortc

#endif // ORTC_RUNTIME_EP_STATUS_H
