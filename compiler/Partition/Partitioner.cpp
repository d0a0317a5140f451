//===- Partitioner.cpp - place nodes on EPs and outline partitions --------===//

#include "compiler/Partition/Partitioner.h"

#include "compiler/EP/PassContext.h"
#include "compiler/Transforms/SymbolicShapes.h"

#include "mlir/Analysis/TopologicalSortUtils.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"

#include <array>
#include <cstdio>

using namespace mlir;

namespace ortc {
namespace {

// Bytes of a value, counting dynamic dims as 1: transfers are estimates.
double estimatedBytes(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type || !type.getElementType().isIntOrFloat())
    return 0;
  double n = std::max<unsigned>(type.getElementType().getIntOrFloatBitWidth() / 8, 1);
  for (int64_t d : type.getShape())
    n *= ShapedType::isDynamic(d) ? 1 : d;
  return n;
}

// Moving a tensor between devices: ~5 us of latency plus ~20 GB/s.
double transferNs(Value value) { return 5000.0 + estimatedBytes(value) / 20.0; }

/// The top-level op of `body` that contains `op` (or `op` itself).
Operation *topLevelOp(Operation *op, Block &body) {
  while (op && op->getBlock() != &body)
    op = op->getParentOp();
  return op;
}

class Partitioner {
public:
  Partitioner(func::FuncOp main, ArrayRef<CompileEp *> eps, const PartitionOptions &options,
              PartitionReport &report)
      : main(main), body(main.getBody().front()), eps(eps), options(options), report(report) {}

  LogicalResult run();

private:
  /// Values `op` (and its regions) read from other top-level ops or arguments.
  SmallVector<Value> externalInputs(Operation *op) {
    llvm::SetVector<Value> inputs;
    op->walk<WalkOrder::PreOrder>([&](Operation *nested) {
      for (Value v : nested->getOperands()) {
        Operation *def = v.getDefiningOp();
        Operation *owner = def ? def : v.getParentBlock()->getParentOp();
        if (owner != op && !op->isAncestor(owner))
          inputs.insert(v);
      }
    });
    return inputs.takeVector();
  }

  /// The placed node producing `v`, or -1.
  int producerIndex(Value v) {
    Operation *def = v.getDefiningOp();
    if (!def)
      return -1;
    auto found = index.find(topLevelOp(def, body));
    return found == index.end() ? -1 : found->second;
  }

  void queryEps();
  void applyClaims();
  void placeByCost();
  LogicalResult reportUnclaimed();
  void formPartitions();
  void mergeAdjacentPartitions();
  LogicalResult outline();

  func::FuncOp main;
  Block &body;
  ArrayRef<CompileEp *> eps;
  const PartitionOptions &options;
  PartitionReport &report;

  SmallVector<Operation *> nodes;
  llvm::DenseMap<Operation *, int> index;
  std::vector<std::vector<KernelMatch>> matches; // [node][ep]
  std::vector<int> assigned;                     // node -> ep, or -1
  // Per node, taken once before outlining changes the IR: the values it
  // reads from outside itself, and the placed nodes producing them.
  std::vector<SmallVector<Value>> inputsOf;
  std::vector<llvm::SmallSetVector<int, 4>> producersOf;
  std::vector<int> partitionOf; // node -> partition id
  std::vector<int> partitionEp; // partition id -> ep, or -1 (unclaimed)
  // The graph's dims as expressions, taken before outlining; a call's
  // results stand for the values they replaced (originalOf).
  std::unique_ptr<SymbolicShapes> shapes;
  llvm::DenseMap<Value, Value> originalOf;
};

void Partitioner::queryEps() {
  for (Operation &op : body)
    if (isPlaceableOp(&op)) {
      index[&op] = nodes.size();
      nodes.push_back(&op);
    }
  inputsOf.resize(nodes.size());
  producersOf.resize(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    inputsOf[i] = externalInputs(nodes[i]);
    for (Value v : inputsOf[i])
      if (int p = producerIndex(v); p >= 0)
        producersOf[i].insert(p);
  }
  matches.resize(nodes.size());
  assigned.assign(nodes.size(), -1);
  report.placements.resize(nodes.size());
  // Regions too: an If's results follow from what its branches yield, and
  // an EP that takes an If checks the ops inside.
  shapes = std::make_unique<SymbolicShapes>(main, SymbolicShapes::Walk::WithRegions);
  for (size_t i = 0; i < nodes.size(); ++i) {
    NodeQuery query = NodeQuery::fromOp(nodes[i]);
    query.shapes = shapes.get();
    Placement &p = report.placements[i];
    p.node = query.node;
    p.op = query.opType;
    for (CompileEp *ep : eps) {
      matches[i].push_back(ep->supportsOp(query));
      if (!matches[i].back().isSupported())
        p.declines.push_back(matches[i].back().reason());
    }
  }
}

void Partitioner::applyClaims() {
  for (size_t e = 0; e < eps.size(); ++e)
    for (Operation *op : eps[e]->claimNodes(main)) {
      auto found = index.find(op);
      if (found == index.end() || assigned[found->second] >= 0)
        continue;
      assigned[found->second] = e;
      report.placements[found->second].how = "claimed";
    }
}

void Partitioner::placeByCost() {
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (assigned[i] >= 0)
      continue;
    int best = -1;
    double bestScore = 0;
    for (size_t e = 0; e < eps.size(); ++e) {
      if (!matches[i][e].isSupported())
        continue;
      double score = matches[i][e].cost().total();
      DeviceType device = eps[e]->identity().deviceType;
      for (Value v : inputsOf[i]) {
        // Constants are copied into each partition with its weights.
        if (Operation *def = v.getDefiningOp(); def && isFreeOnnxOp(def))
          continue;
        int producer = producerIndex(v);
        // Graph inputs and constants start on the host.
        DeviceType from = producer >= 0 && assigned[producer] >= 0
                              ? eps[assigned[producer]]->identity().deviceType
                              : DeviceType::Cpu;
        if (from != device)
          score += transferNs(v);
      }
      if (best < 0 || score < bestScore) {
        best = e;
        bestScore = score;
      }
    }
    assigned[i] = best;
    report.placements[i].how = best >= 0 ? "cost" : "unclaimed";
    report.placements[i].score = bestScore;
  }
  for (size_t i = 0; i < nodes.size(); ++i)
    if (assigned[i] >= 0)
      report.placements[i].ep = eps[assigned[i]]->name();
}

LogicalResult Partitioner::reportUnclaimed() {
  bool anyUnclaimed = false;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (assigned[i] >= 0 || options.allowUnclaimed)
      continue;
    anyUnclaimed = true;
    std::string text = "no EP claims this node";
    for (const DeclineReason &d : report.placements[i].declines)
      text += "; " + d.format();
    nodes[i]->emitError(text);
  }
  return failure(anyUnclaimed);
}

void Partitioner::formPartitions() {
  // ancestors[i]: the partitions node i depends on, directly or not.
  std::vector<llvm::BitVector> ancestors(nodes.size());
  partitionOf.assign(nodes.size(), -1);
  for (size_t i = 0; i < nodes.size(); ++i) {
    const llvm::SmallSetVector<int, 4> &producers = producersOf[i];
    llvm::BitVector deps(partitionEp.size() + 1);
    for (int p : producers) {
      deps.resize(std::max(deps.size(), ancestors[p].size()));
      deps |= ancestors[p];
      deps.set(partitionOf[p]);
    }
    // Join the newest partition of the same EP among the producers' whose
    // merge adds no cycle: no other producer may depend on it.
    int chosen = -1;
    if (assigned[i] >= 0) {
      for (auto it = producers.rbegin(); it != producers.rend() && chosen < 0; ++it) {
        int candidate = partitionOf[*it];
        if (partitionEp[candidate] != assigned[i])
          continue;
        bool cycle = llvm::any_of(producers, [&](int q) {
          return partitionOf[q] != candidate && ancestors[q].size() > (size_t)candidate &&
                 ancestors[q].test(candidate);
        });
        if (!cycle)
          chosen = candidate;
      }
    }
    if (chosen < 0) {
      chosen = partitionEp.size();
      partitionEp.push_back(assigned[i]);
    }
    partitionOf[i] = chosen;
    deps.resize(std::max<size_t>(deps.size(), partitionEp.size()));
    ancestors[i] = std::move(deps);
  }
}

void Partitioner::mergeAdjacentPartitions() {
  // Partitions of one EP joined by an edge merge when no other path links
  // them: the greedy pass above joins a node to one producer's partition only,
  // so a node fed by two partitions of its EP would otherwise keep them apart.
  // Then roots of one EP merge (below).
  bool merged = true;
  while (merged) {
    merged = false;
    size_t numParts = partitionEp.size();
    std::vector<llvm::SmallSetVector<int, 4>> succ(numParts);
    for (size_t i = 0; i < nodes.size(); ++i)
      for (int p : producersOf[i])
        if (partitionOf[p] != partitionOf[i])
          succ[partitionOf[p]].insert(partitionOf[i]);
    // Is `to` reachable from `from` other than by the direct edge?
    auto indirectPath = [&](int from, int to) {
      std::vector<char> seen(numParts, 0);
      SmallVector<int> stack;
      for (int next : succ[from])
        if (next != to)
          stack.push_back(next);
      while (!stack.empty()) {
        int part = stack.pop_back_val();
        if (part == to)
          return true;
        if (seen[part])
          continue;
        seen[part] = 1;
        for (int next : succ[part])
          stack.push_back(next);
      }
      return false;
    };
    for (size_t a = 0; a < numParts && !merged; ++a) {
      if (partitionEp[a] < 0)
        continue;
      for (int b : succ[a]) {
        if (partitionEp[b] != partitionEp[a] || indirectPath(a, b))
          continue;
        for (int &part : partitionOf)
          if (part == b)
            part = a;
        merged = true;
        break;
      }
    }
    if (merged)
      continue;
    // Roots of one EP (partitions that read only graph inputs and constants,
    // such as shape arithmetic on the inputs' dims) merge: no path can reach
    // a root, so the merge adds no cycle and links no other partitions.
    std::vector<char> isRoot(numParts, 1), nonEmpty(numParts, 0);
    for (size_t i = 0; i < nodes.size(); ++i)
      nonEmpty[size_t(partitionOf[i])] = 1;
    for (size_t part = 0; part < numParts; ++part)
      for (int next : succ[part])
        isRoot[size_t(next)] = 0;
    for (size_t a = 0; a < numParts && !merged; ++a) {
      if (partitionEp[a] < 0 || !isRoot[a] || !nonEmpty[a])
        continue;
      for (size_t b = a + 1; b < numParts; ++b) {
        if (partitionEp[b] != partitionEp[a] || !isRoot[b] || !nonEmpty[b])
          continue;
        for (int &part : partitionOf)
          if (part == int(b))
            part = int(a);
        merged = true;
        break;
      }
    }
  }
}

LogicalResult Partitioner::outline() {
  MLIRContext *context = main.getContext();
  OpBuilder builder(context);
  ModuleOp module = main->getParentOfType<ModuleOp>();
  std::vector<int> reportIndex(partitionEp.size(), -1);
  std::vector<int> perEpCount(eps.size(), 0);

  for (size_t part = 0; part < partitionEp.size(); ++part) {
    if (partitionEp[part] < 0)
      continue; // unclaimed nodes stay in @main_graph
    SmallVector<Operation *> ops;
    for (size_t i = 0; i < nodes.size(); ++i)
      if (partitionOf[i] == static_cast<int>(part))
        ops.push_back(nodes[i]);
    if (ops.empty())
      continue; // merged into another partition
    llvm::SmallPtrSet<Operation *, 16> opSet(ops.begin(), ops.end());

    llvm::SetVector<Value> inputs, outputs;
    llvm::SetVector<Operation *> freeOps; // constants to copy in
    for (Operation *op : ops)
      for (Value v : externalInputs(op)) {
        Operation *def = v.getDefiningOp();
        if (def && opSet.contains(topLevelOp(def, body)))
          continue;
        if (def && isFreeOnnxOp(def))
          freeOps.insert(def);
        else
          inputs.insert(v);
      }
    for (Operation *op : ops)
      for (Value r : op->getResults())
        for (OpOperand &use : r.getUses())
          if (!opSet.contains(topLevelOp(use.getOwner(), body)))
            outputs.insert(r);

    const std::string &epName = eps[partitionEp[part]]->name();
    std::string name = epName + "_p" + std::to_string(perEpCount[partitionEp[part]]++);
    builder.setInsertionPoint(main);
    auto fnType =
        builder.getFunctionType(TypeRange(inputs.getArrayRef()), TypeRange(outputs.getArrayRef()));
    auto fn = func::FuncOp::create(builder, ops.front()->getLoc(), name, fnType);
    fn.setPrivate();
    fn->setAttr("ortc.ep", builder.getStringAttr(epName));
    // Dims the caller knows as expressions become the partition's symbols:
    // inputs with equal expressions share them.
    SmallVector<Value> callerValues;
    for (Value value : inputs) {
      Value original = originalOf.lookup(value);
      callerValues.push_back(original ? original : value);
    }
    annotateDimSymbols(fn, callerValues, *shapes);
    Block *entry = fn.addEntryBlock();
    IRMapping mapping;
    for (auto [value, arg] : llvm::zip(inputs, entry->getArguments()))
      mapping.map(value, arg);
    builder.setInsertionPointToStart(entry);
    // Copy constants in program order so that the body reads like the graph.
    SmallVector<Operation *> orderedFree(freeOps.begin(), freeOps.end());
    llvm::sort(orderedFree, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
    for (Operation *op : orderedFree)
      builder.clone(*op, mapping);
    for (Operation *op : ops)
      builder.clone(*op, mapping);
    SmallVector<Value> returned;
    for (Value v : outputs)
      returned.push_back(mapping.lookup(v));
    func::ReturnOp::create(builder, fn.getLoc(), returned);

    builder.setInsertionPointAfter(ops.back());
    auto call = func::CallOp::create(builder, ops.back()->getLoc(), fn, inputs.getArrayRef());
    for (auto [output, result] : llvm::zip(outputs, call.getResults())) {
      Value value = output;
      Value original = originalOf.lookup(output);
      originalOf[result] = original ? original : output;
      value.replaceUsesWithIf(result, [&](OpOperand &use) {
        return !opSet.contains(topLevelOp(use.getOwner(), body));
      });
    }
    for (Operation *op : llvm::reverse(ops))
      op->erase();

    reportIndex[part] = report.partitions.size();
    report.partitions.push_back({name, epName, static_cast<int>(ops.size()),
                                 static_cast<int>(inputs.size()),
                                 static_cast<int>(outputs.size())});
  }
  for (size_t i = 0; i < nodes.size(); ++i)
    report.placements[i].partition = reportIndex[partitionOf[i]];

  // A call sits where its partition's last op was; users of its early results
  // may come before that. Partitions are acyclic, so an order exists.
  if (!sortTopologically(&body))
    return main.emitError("internal error: partitions form a cycle");
  // Constants whose users all moved into partitions are dead now.
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(body)))
    if (isFreeOnnxOp(&op) && op.use_empty())
      op.erase();
  (void)module;
  return success();
}

LogicalResult Partitioner::run() {
  queryEps();
  applyClaims();
  placeByCost();
  if (failed(reportUnclaimed()))
    return failure();
  formPartitions();
  mergeAdjacentPartitions();
  return outline();
}

std::string formatScore(double score) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.1f", score);
  return buffer;
}

} // namespace

LogicalResult partitionModule(ModuleOp module, ArrayRef<CompileEp *> eps,
                              const PartitionOptions &options, PartitionReport &report) {
  auto main = module.lookupSymbol<func::FuncOp>("main_graph");
  if (!main || main.getBody().empty())
    return module.emitError("partitioning needs a @main_graph function with a body");
  if (eps.empty())
    return module.emitError("partitioning needs at least one EP");
  // A graph output that is a graph input under another name has no node to
  // rename it in an EPContext model: give it an Identity for an EP to claim
  // (the CPU EP copies the input into the output buffer).
  Block &body = main.getBody().front();
  Operation *ret = body.getTerminator();
  for (OpOperand &operand : ret->getOpOperands()) {
    auto arg = dyn_cast<BlockArgument>(operand.get());
    if (!arg || arg.getOwner() != &body)
      continue;
    auto inName = main.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "onnx.name");
    auto outName = main.getResultAttrOfType<StringAttr>(operand.getOperandNumber(), "onnx.name");
    if (inName && outName && inName == outName)
      continue;
    OpBuilder builder(ret);
    std::string name = "Identity(" + (outName ? outName.str() : std::string("output")) + ")";
    OperationState state(NameLoc::get(builder.getStringAttr(name), ret->getLoc()), "onnx.Identity");
    state.addOperands(arg);
    state.addTypes(arg.getType());
    operand.set(builder.create(state)->getResult(0));
  }
  return Partitioner(main, eps, options, report).run();
}

LogicalResult runEpCustomPasses(ModuleOp module, ArrayRef<CompileEp *> eps) {
  for (CompileEp *ep : eps) {
    PassManager pm(module.getContext(), func::FuncOp::getOperationName());
    preparePassManager(pm);
    ep->addCustomPasses(pm);
    if (pm.size() == 0)
      continue;
    for (auto fn : module.getOps<func::FuncOp>()) {
      auto tag = fn->getAttrOfType<StringAttr>("ortc.ep");
      if (tag && tag.getValue() == ep->name() && failed(pm.run(fn)))
        return failure();
    }
  }
  return success();
}

std::string PartitionReport::formatText() const {
  // Columns padded to their widest entry.
  std::vector<std::array<std::string, 5>> rows{{"node", "op", "ep", "placed by", "partition"}};
  for (const Placement &p : placements)
    rows.push_back({p.node, p.op, p.ep.empty() ? "(none)" : p.ep,
                    p.how == "cost" ? "cost " + formatScore(p.score) + " ns" : p.how,
                    p.partition >= 0 ? partitions[p.partition].name : "-"});
  std::array<size_t, 5> width{};
  for (const auto &row : rows)
    for (size_t c = 0; c < row.size(); ++c)
      width[c] = std::max(width[c], row[c].size());
  std::string text = "placements (" + std::to_string(placements.size()) + " nodes):\n";
  for (const auto &row : rows) {
    std::string line = " ";
    for (size_t c = 0; c < row.size(); ++c)
      line += " " + row[c] + std::string(c + 1 < row.size() ? width[c] - row[c].size() : 0, ' ');
    text += line + "\n";
  }
  text += "partitions (" + std::to_string(partitions.size()) + "):\n";
  for (const PartitionInfo &p : partitions)
    text += "  " + p.name + " on " + p.ep + ": " + std::to_string(p.numOps) + " ops, " +
            std::to_string(p.numInputs) + " inputs, " + std::to_string(p.numOutputs) + " outputs\n";
  size_t numDeclines = 0;
  for (const Placement &p : placements)
    numDeclines += p.declines.size();
  text += "declines (" + std::to_string(numDeclines) + "):\n";
  for (const Placement &p : placements)
    for (const DeclineReason &d : p.declines)
      text += "  " + d.format() + "\n";
  return text;
}

std::string PartitionReport::formatJson() const { return "{" + formatJsonFields() + "}"; }

std::string PartitionReport::formatJsonFields() const {
  std::string json = "\"placements\": [";
  for (size_t i = 0; i < placements.size(); ++i) {
    const Placement &p = placements[i];
    json += std::string(i ? ", " : "") + "{\"node\": \"" + jsonEscape(p.node) + "\", \"op\": \"" +
            jsonEscape(p.op) + "\", \"ep\": " + (p.ep.empty() ? "null" : "\"" + p.ep + "\"") +
            ", \"how\": \"" + p.how + "\", \"partition\": " +
            (p.partition >= 0 ? "\"" + partitions[p.partition].name + "\"" : "null") +
            ", \"score_ns\": " + formatScore(p.score) + "}";
  }
  json += "], \"partitions\": [";
  for (size_t i = 0; i < partitions.size(); ++i) {
    const PartitionInfo &p = partitions[i];
    json += std::string(i ? ", " : "") + "{\"name\": \"" + p.name + "\", \"ep\": \"" + p.ep +
            "\", \"ops\": " + std::to_string(p.numOps) +
            ", \"inputs\": " + std::to_string(p.numInputs) +
            ", \"outputs\": " + std::to_string(p.numOutputs) + "}";
  }
  json += "], \"declines\": [";
  bool first = true;
  for (const Placement &p : placements)
    for (const DeclineReason &d : p.declines) {
      json += (first ? "" : ", ") + d.toJson();
      first = false;
    }
  return json + "]";
}

} // namespace ortc
