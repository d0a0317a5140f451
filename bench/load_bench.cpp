//===- load_bench.cpp - where loading a compiled model spends its time ----===//
//
// Times the steps of the runtime's load path on one model_ctx.onnx, each on
// its own, in the order the loader runs them, and prints one JSON object per
// line so that bench/load.py can parse it:
//
//   {"kind":"model","path":..,"partitions":..,"blob_bytes":..,"inline":..,
//    "aligned":..}
//   {"kind":"phase","name":"checksum","reps":..,"first_ms":..,"median_ms":..,
//    "min_ms":..}
//
// Phases (summed over the model's EPContext nodes):
//   parse          readModelFile: the protobuf parse of model_ctx.onnx
//   context        loadContextModel: the parse, the EPContext checks, the
//                  sidecar memory maps
//   realign        an inline blob (unaligned inside the protobuf string):
//                  aligned_alloc + memcpy, as PlanExecutor::load copies it
//   checksum       XXH3-64 over the blob (blobChecksum)
//   envelope       openBlob: checksum + section directory
//   open_cpu_blob  openCpuBlob: envelope + FlatBuffer verifier + plan checks
//   copy_verify    an inline blob: openCpuBlobCopy, the copy and the checksum
//                  in one pass into huge-page-advised memory, then the checks
//   code           LoadedSharedObject::load: memfd + dlopen + header checks
//   partition      CpuRuntimeEp::loadContext: all of the partition's load
//   session        Session::load + destruction: the whole load, as the C API
//                  runs it
// Each repetition maps the sidecar afresh (as a load does), so "checksum" and
// the later phases include faulting in the mapped pages once per repetition.
//
// Usage: ortc-bench-load [--reps=N] MODEL_CTX.onnx
//
//===----------------------------------------------------------------------===//

#include "onnx/onnx_pb.h"
#include "providers/cpu/blob/CpuBlob.h"
#include "providers/cpu/runtime/CpuRuntimeEp.h"
#include "providers/cpu/runtime/HostCpu.h"
#include "providers/cpu/runtime/SharedObjectLoader.h"
#include "runtime/session/ContextModel.h"
#include "runtime/session/Session.h"
#include "runtime/support/BlobContainer.h"
#include "runtime/support/ModelFile.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

using namespace ortc;

namespace {

double wallSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

[[noreturn]] void die(const std::string &message) {
  std::fprintf(stderr, "ortc-bench-load: %s\n", message.c_str());
  std::exit(2);
}

template <typename T> T check(Result<T> result) {
  if (!result.isOk())
    die(result.status().message());
  return result.takeValue();
}

struct Phases {
  std::vector<std::string> order;
  std::map<std::string, std::vector<double>> seconds; // per repetition

  // Adds the time of `body` to phase `name` of repetition `rep`.
  void time(const std::string &name, int rep, const std::function<void()> &body) {
    std::vector<double> &v = seconds[name];
    if (v.empty())
      order.push_back(name);
    if (int(v.size()) <= rep)
      v.resize(rep + 1, 0.0);
    double start = wallSeconds();
    body();
    v[rep] += wallSeconds() - start;
  }
};

std::string jsonString(const std::string &s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\';
    if (static_cast<unsigned char>(c) >= 0x20)
      out += c;
  }
  return out + "\"";
}

} // namespace

int main(int argc, char **argv) {
  int reps = 9;
  std::string path;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--reps=", 0) == 0) {
      reps = std::atoi(arg.c_str() + 7);
      if (reps < 1)
        die("--reps must be at least 1");
    } else if (arg == "--help" || arg == "-h") {
      std::printf("usage: ortc-bench-load [--reps=N] MODEL_CTX.onnx\n");
      return 0;
    } else if (path.empty()) {
      path = arg;
    } else {
      die("unexpected argument '" + arg + "'");
    }
  }
  if (path.empty())
    die("no model given (usage: ortc-bench-load [--reps=N] MODEL_CTX.onnx)");

  const std::string arch = cpu::hostArchitecture();
  const std::vector<std::string> features = cpu::hostCpuFeatures();
  Phases phases;
  size_t blobBytes = 0, partitions = 0;
  bool anyInline = false, allAligned = true;

  for (int rep = 0; rep < reps; ++rep) {
    phases.time("parse", rep, [&] {
      onnx::ModelProto proto;
      std::string error;
      if (!readModelFile(path, proto, error))
        die(error);
    });
    ContextModel model;
    phases.time("context", rep, [&] { model = check(loadContextModel(path)); });
    partitions = model.nodes.size();
    blobBytes = 0;
    for (const ContextNode &node : model.nodes) {
      const EpContextView &context = node.context;
      const std::string what = "partition '" + context.partitionName + "'";
      blobBytes += context.size;
      anyInline = anyInline || node.embedded;
      const char *bytes = context.data;
      char *copy = nullptr;
      if (reinterpret_cast<uintptr_t>(bytes) % cpu::kCpuBlobAlignment != 0) {
        allAligned = false;
        phases.time("realign", rep, [&] {
          copy = static_cast<char *>(std::aligned_alloc(64, (context.size + 63) / 64 * 64));
          if (!copy)
            die("out of memory");
          std::memcpy(copy, bytes, context.size);
        });
        bytes = copy;
      }
      phases.time("checksum", rep, [&] {
        volatile uint64_t sum = blobChecksum(bytes, context.size);
        (void)sum;
      });
      phases.time("envelope", rep, [&] { check(openBlob(bytes, context.size, what)); });
      cpu::CpuBlobView view;
      phases.time("open_cpu_blob", rep, [&] {
        view = check(cpu::openCpuBlob(bytes, context.size, what, arch, features));
      });
      if (copy) {
        phases.time("copy_verify", rep, [&] {
          OwnedBlobBytes storage;
          check(cpu::openCpuBlobCopy(context.data, context.size, what, arch, features, storage));
        });
      }
      phases.time("code", rep,
                  [&] { check(cpu::LoadedSharedObject::load(view.code, view.codeSize, what)); });
      std::free(copy);
      phases.time("partition", rep, [&] {
        cpu::CpuRuntimeEp ep;
        check(ep.loadContext(context));
      });
    }
    model = ContextModel();
    phases.time("session", rep,
                [&] { check(Session::load(path, check(createBuiltinEpRegistry()))); });
  }

  std::printf("{\"kind\":\"model\",\"path\":%s,\"partitions\":%zu,\"blob_bytes\":%zu,"
              "\"inline\":%s,\"aligned\":%s}\n",
              jsonString(path).c_str(), partitions, blobBytes, anyInline ? "true" : "false",
              allAligned ? "true" : "false");
  for (const std::string &name : phases.order) {
    std::vector<double> v = phases.seconds[name];
    double first = v[0];
    std::sort(v.begin(), v.end());
    std::printf("{\"kind\":\"phase\",\"name\":\"%s\",\"reps\":%zu,\"first_ms\":%.3f,"
                "\"median_ms\":%.3f,\"min_ms\":%.3f}\n",
                name.c_str(), v.size(), first * 1e3, v[v.size() / 2] * 1e3, v[0] * 1e3);
  }
  return 0;
}
