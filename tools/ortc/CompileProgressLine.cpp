//===- CompileProgressLine.cpp ---------------------------------------------===//

#include "tools/ortc/CompileProgressLine.h"

#include <cstdio>

namespace ortc::cli {

namespace {
// A compile shorter than this shows no progress on a terminal.
constexpr std::chrono::milliseconds kDelay(1000);
constexpr std::chrono::milliseconds kRedraw(100);
} // namespace

CompileProgressLine::CompileProgressLine(Mode mode)
    : mode(mode), start(std::chrono::steady_clock::now()) {
  if (mode == Mode::Terminal)
    ticker = std::thread([this] { tick(); });
}

CompileProgressLine::~CompileProgressLine() { finish(); }

void CompileProgressLine::finish() {
  {
    std::lock_guard<std::mutex> lock(mutex);
    stopping = true;
  }
  wake.notify_all();
  if (ticker.joinable())
    ticker.join();
  std::lock_guard<std::mutex> lock(mutex);
  if (drawn) {
    std::fputs("\r\x1b[K", stderr);
    std::fflush(stderr);
    drawn = false;
  }
}

void CompileProgressLine::stage(const std::string &name) {
  std::lock_guard<std::mutex> lock(mutex);
  stageName = name;
  partitionText.clear();
  workWhat.clear();
  drawLocked();
}

void CompileProgressLine::partition(int index, int count, const std::string &name,
                                    const std::string &ep) {
  std::lock_guard<std::mutex> lock(mutex);
  partitionText = "partition " + std::to_string(index + 1) + "/" + std::to_string(count) + " " +
                  name + " (" + ep + ")";
  workWhat.clear();
  drawLocked();
}

void CompileProgressLine::work(const std::string &what, int done, int total) {
  std::lock_guard<std::mutex> lock(mutex);
  bool changed = what != workWhat || done == total;
  workWhat = what;
  workDone = done;
  workTotal = total;
  // One draw per kind of work and one when it completes, not one per unit;
  // on a terminal the ticker shows the counts in between.
  if (changed)
    drawLocked();
}

std::string CompileProgressLine::describeLocked() const {
  std::string text = stageName;
  if (!partitionText.empty())
    text += " " + partitionText;
  if (!workWhat.empty())
    text += ": " + workWhat + " " + std::to_string(workDone) + "/" + std::to_string(workTotal);
  return text;
}

void CompileProgressLine::drawLocked() {
  if (stopping)
    return;
  std::string text = describeLocked();
  if (mode == Mode::Lines) {
    if (text != lastLine)
      std::fprintf(stderr, "ortc: progress: %s\n", text.c_str());
    lastLine = text;
    return;
  }
  auto elapsed = std::chrono::steady_clock::now() - start;
  if (elapsed < kDelay)
    return;
  double seconds = std::chrono::duration<double>(elapsed).count();
  std::fprintf(stderr, "\r\x1b[Kortc: %s [%.1f s]", text.c_str(), seconds);
  std::fflush(stderr);
  drawn = true;
}

void CompileProgressLine::tick() {
  std::unique_lock<std::mutex> lock(mutex);
  while (!stopping) {
    wake.wait_for(lock, kRedraw);
    if (!stopping && !stageName.empty())
      drawLocked();
  }
}

} // namespace ortc::cli
