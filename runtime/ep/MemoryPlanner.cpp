//===- MemoryPlanner.cpp - liveness-based arena offsets -------------------===//

#include "runtime/ep/MemoryPlanner.h"

#include <algorithm>
#include <numeric>

namespace ortc {

static uint64_t alignUp(uint64_t value, uint64_t alignment) {
  return (value + alignment - 1) & ~(alignment - 1);
}

namespace {

/// The slots whose step ranges meet a query range, found without scanning
/// every slot: a centred interval tree over the ranges (each node keeps the
/// ranges that contain its centre, sorted by first step and by last step;
/// those wholly before or after it go left or right), so that a query costs
/// the tree's depth plus the ranges it reports. The nodes' ranges are runs
/// of two index arrays, so a build allocates a handful of buffers whatever
/// the slot count (a plan of 20 slots is planned per input shape at run
/// time). A range given backwards (last < first, which a hostile blob may
/// hold) is kept as its two ends in order: the index then reports a
/// superset, which the caller filters.
class LiveRangeIndex {
public:
  explicit LiveRangeIndex(const std::vector<ArenaSlot> &slots)
      : slots(slots), byFirst(slots.size()), byLast(slots.size()) {
    std::iota(byFirst.begin(), byFirst.end(), size_t(0));
    ends.reserve(2 * slots.size());
    nodes.reserve(slots.size());
    root = build(0, slots.size());
  }

  /// Calls visit(i) for every slot i whose range meets [first, last].
  template <class Visit> void overlapping(int first, int last, Visit visit) const {
    // Each side of a node holds at most half its slots: the depth stays
    // under 64, and so does the stack of nodes still to visit.
    int stack[kMaxDepth];
    int depth = 0;
    if (root >= 0)
      stack[depth++] = root;
    while (depth > 0) {
      const Node &node = nodes[size_t(stack[--depth])];
      if (last < node.centre) {
        for (size_t k = node.begin; k < node.end && lo(byFirst[k]) <= last; ++k)
          visit(byFirst[k]);
      } else if (first > node.centre) {
        for (size_t k = node.begin; k < node.end && hi(byLast[k]) >= first; ++k)
          visit(byLast[k]);
      } else {
        for (size_t k = node.begin; k < node.end; ++k)
          visit(byFirst[k]);
      }
      if (node.left >= 0 && first < node.centre)
        stack[depth++] = node.left;
      if (node.right >= 0 && last > node.centre)
        stack[depth++] = node.right;
    }
  }

private:
  static constexpr int kMaxDepth = 128;
  struct Node {
    int centre = 0;
    size_t begin = 0, end = 0; // its ranges: byFirst[begin, end), byLast the same
    int left = -1, right = -1;
  };

  int lo(size_t i) const { return std::min(slots[i].firstStep, slots[i].lastStep); }
  int hi(size_t i) const { return std::max(slots[i].firstStep, slots[i].lastStep); }

  // The slots byFirst[begin, end) as a subtree. The centre is the median of
  // their ranges' ends, so each side holds at most half of them.
  int build(size_t begin, size_t end) {
    if (begin == end)
      return -1;
    ends.clear();
    for (size_t k = begin; k < end; ++k) {
      ends.push_back(lo(byFirst[k]));
      ends.push_back(hi(byFirst[k]));
    }
    std::nth_element(ends.begin(), ends.begin() + ends.size() / 2, ends.end());
    int centre = ends[ends.size() / 2];
    auto first = byFirst.begin();
    size_t at = size_t(
        std::partition(first + begin, first + end, [&](size_t i) { return hi(i) < centre; }) -
        first);
    size_t after = size_t(
        std::partition(first + at, first + end, [&](size_t i) { return lo(i) <= centre; }) - first);
    std::sort(first + at, first + after, [&](size_t a, size_t b) { return lo(a) < lo(b); });
    std::copy(first + at, first + after, byLast.begin() + at);
    std::sort(byLast.begin() + at, byLast.begin() + after,
              [&](size_t a, size_t b) { return hi(a) > hi(b); });
    int index = int(nodes.size());
    nodes.push_back({centre, at, after});
    int left = build(begin, at);
    int right = build(after, end);
    nodes[size_t(index)].left = left;
    nodes[size_t(index)].right = right;
    return index;
  }

  const std::vector<ArenaSlot> &slots;
  std::vector<size_t> byFirst, byLast;
  std::vector<int> ends; // build's scratch
  std::vector<Node> nodes;
  int root = -1;
};

} // namespace

ArenaPlan planArena(std::vector<ArenaSlot> &slots, uint64_t alignment) {
  ArenaPlan plan;
  std::vector<size_t> order(slots.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return slots[a].size > slots[b].size; });
  // Each slot is checked against the placed ones live with it, not against
  // every placed slot: linear in the slots for a graph whose live set stays
  // small (24,000 buffers of repeated blocks: a tenth of the compile before).
  LiveRangeIndex index(slots);
  std::vector<char> placed(slots.size(), 0);
  std::vector<std::pair<uint64_t, uint64_t>> busy;
  uint64_t peak = 0;
  for (size_t id : order) {
    ArenaSlot &slot = slots[id];
    uint64_t size = alignUp(std::max<uint64_t>(slot.size, 1), alignment);
    // The live slots already placed, by offset; try each gap in turn.
    busy.clear();
    index.overlapping(
        std::min(slot.firstStep, slot.lastStep), std::max(slot.firstStep, slot.lastStep),
        [&](size_t other) {
          const ArenaSlot &o = slots[other];
          if (placed[other] && o.firstStep <= slot.lastStep && slot.firstStep <= o.lastStep)
            busy.push_back(
                {o.offset, o.offset + alignUp(std::max<uint64_t>(o.size, 1), alignment)});
        });
    std::sort(busy.begin(), busy.end());
    uint64_t offset = 0;
    for (auto [begin, end] : busy) {
      if (offset + size <= begin)
        break;
      offset = std::max(offset, end);
    }
    slot.offset = offset;
    peak = std::max(peak, offset + size);
    placed[id] = 1;
    plan.naiveBytes += size;
  }
  plan.bytes = peak;
  return plan;
}

} // namespace ortc
