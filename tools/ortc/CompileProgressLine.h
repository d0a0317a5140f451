//===- CompileProgressLine.h - `ortc compile`'s progress line ---*- C++ -*-===//
//
// On a terminal: one line on stderr that rewrites itself, shown once a
// compile has run for about a second, with the stage and, during code
// generation, the partition and the EP's work done of total. With
// --progress on a non-terminal: a plain line per change, from the start.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_TOOLS_ORTC_COMPILEPROGRESSLINE_H
#define ORTC_TOOLS_ORTC_COMPILEPROGRESSLINE_H

#include "compiler/EP/CompileProgress.h"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace ortc::cli {

class CompileProgressLine final : public CompileProgress {
public:
  enum class Mode {
    Terminal, // rewrite one line, after a delay
    Lines,    // a line per change, at once
  };
  explicit CompileProgressLine(Mode mode);
  ~CompileProgressLine() override; // finish()

  void stage(const std::string &name) override;
  void partition(int index, int count, const std::string &name, const std::string &ep) override;
  void work(const std::string &what, int done, int total) override;

  /// Stops drawing and clears the line (Terminal).
  void finish();

private:
  std::string describeLocked() const;
  void drawLocked();
  void tick();

  const Mode mode;
  const std::chrono::steady_clock::time_point start;
  std::mutex mutex;
  std::condition_variable wake;
  bool stopping = false;
  bool drawn = false; // the terminal line holds text
  std::string stageName, partitionText, workWhat;
  int workDone = 0, workTotal = 0;
  std::string lastLine;
  std::thread ticker; // Terminal: redraws while a stage runs
};

} // namespace ortc::cli

#endif // ORTC_TOOLS_ORTC_COMPILEPROGRESSLINE_H
