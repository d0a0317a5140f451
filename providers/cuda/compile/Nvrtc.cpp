//===- Nvrtc.cpp - CUDA C++ to cubin and PTX with NVRTC -------------------===//

#include "providers/cuda/compile/Nvrtc.h"

#include <nvrtc.h>

#include <cstring>
#include <memory>
#include <sstream>

namespace ortc::cuda {

std::string CudaArch::name() const {
  return "sm_" + std::to_string(major) + std::to_string(minor);
}

std::string CudaArch::virtualName() const {
  return "compute_" + std::to_string(major) + std::to_string(minor);
}

std::optional<CudaArch> parseCudaArch(std::string_view text) {
  if (text.substr(0, 3) == "sm_")
    text.remove_prefix(3);
  if (text.size() < 2 || text.size() > 3)
    return std::nullopt;
  for (char c : text)
    if (c < '0' || c > '9')
      return std::nullopt;
  CudaArch arch;
  arch.major = std::stoi(std::string(text.substr(0, text.size() - 1)));
  arch.minor = text.back() - '0';
  if (arch.major < 5)
    return std::nullopt;
  return arch;
}

std::string nvrtcVersion() {
  int major = 0, minor = 0;
  ::nvrtcVersion(&major, &minor);
  return std::to_string(major) + "." + std::to_string(minor);
}

namespace {

struct ProgramDeleter {
  void operator()(nvrtcProgram *p) const {
    nvrtcDestroyProgram(p);
    delete p;
  }
};
using Program = std::unique_ptr<nvrtcProgram, ProgramDeleter>;

std::string programLog(nvrtcProgram program) {
  size_t size = 0;
  if (nvrtcGetProgramLogSize(program, &size) != NVRTC_SUCCESS || size <= 1)
    return "";
  std::string log(size, '\0');
  nvrtcGetProgramLog(program, log.data());
  log.resize(size - 1); // the terminating NUL
  return log;
}

/// The log's first line that says "error" (the whole log is kept apart).
std::string firstErrorLine(const std::string &log) {
  std::istringstream lines(log);
  std::string line;
  while (std::getline(lines, line))
    if (line.find("error") != std::string::npos)
      return line;
  return log.substr(0, log.find('\n'));
}

} // namespace

bool compileCuda(const std::string &source, const std::string &name, const CudaArch &arch,
                 CudaBinary &out, std::string &error) {
  Program program(new nvrtcProgram(nullptr));
  if (nvrtcResult r = nvrtcCreateProgram(program.get(), source.c_str(), name.c_str(), 0, nullptr,
                                         nullptr);
      r != NVRTC_SUCCESS) {
    delete program.release();
    error = name + ": nvrtcCreateProgram: " + nvrtcGetErrorString(r);
    return false;
  }
  std::string archOption = "--gpu-architecture=" + arch.name();
  const char *options[] = {archOption.c_str(), "--std=c++17", "--ptxas-options=-v"};
  nvrtcResult compiled = nvrtcCompileProgram(*program, 3, options);
  out.log = programLog(*program);
  if (compiled != NVRTC_SUCCESS) {
    error = name + " (" + arch.name() + "): " + firstErrorLine(out.log);
    return false;
  }
  size_t cubinSize = 0, ptxSize = 0;
  if (nvrtcGetCUBINSize(*program, &cubinSize) != NVRTC_SUCCESS || cubinSize == 0 ||
      nvrtcGetPTXSize(*program, &ptxSize) != NVRTC_SUCCESS || ptxSize <= 1) {
    error = name + " (" + arch.name() + "): NVRTC produced no cubin or no PTX";
    return false;
  }
  out.arch = arch;
  out.cubin.resize(cubinSize);
  nvrtcGetCUBIN(*program, reinterpret_cast<char *>(out.cubin.data()));
  out.ptx.assign(ptxSize, '\0');
  nvrtcGetPTX(*program, out.ptx.data());
  out.ptx.resize(ptxSize - 1);
  return true;
}

std::vector<KernelResources> parsePtxasReport(const std::string &log) {
  std::vector<KernelResources> kernels;
  std::istringstream lines(log);
  std::string line;
  auto number = [](const std::string &text, const char *before) -> std::optional<int64_t> {
    size_t at = text.find(before);
    if (at == std::string::npos)
      return std::nullopt;
    size_t begin = text.rfind(' ', at == 0 ? 0 : at - 1);
    begin = begin == std::string::npos ? 0 : begin + 1;
    try {
      return std::stoll(text.substr(begin, at - begin));
    } catch (...) {
      return std::nullopt;
    }
  };
  while (std::getline(lines, line)) {
    const std::string entry = "Compiling entry function '";
    if (size_t at = line.find(entry); at != std::string::npos) {
      size_t begin = at + entry.size(), end = line.find('\'', begin);
      kernels.push_back({line.substr(begin, end - begin)});
      continue;
    }
    if (kernels.empty())
      continue;
    KernelResources &k = kernels.back();
    if (auto v = number(line, " bytes stack frame"))
      k.stackBytes = *v;
    if (auto v = number(line, " bytes spill stores"))
      k.spillStores = *v;
    if (auto v = number(line, " bytes spill loads"))
      k.spillLoads = *v;
    if (auto v = number(line, " registers"))
      k.registers = int(*v);
    if (auto v = number(line, " bytes smem"))
      k.sharedBytes = *v;
  }
  return kernels;
}

namespace {

template <typename T> bool readAt(const std::vector<uint8_t> &bytes, uint64_t offset, T &value) {
  if (offset > bytes.size() || bytes.size() - offset < sizeof(T))
    return false;
  std::memcpy(&value, bytes.data() + offset, sizeof(T));
  return true;
}

} // namespace

std::optional<std::vector<std::string>> cubinFunctionSymbols(const std::vector<uint8_t> &cubin,
                                                             std::string &error) {
  constexpr uint16_t kEmCuda = 190;
  constexpr uint32_t kShtSymtab = 2;
  constexpr uint8_t kSttFunc = 2;
  uint16_t machine = 0, shentsize = 0, shnum = 0;
  uint64_t shoff = 0;
  if (cubin.size() < 64 || std::memcmp(cubin.data(), "\x7f" "ELF", 4) != 0 || cubin[4] != 2) {
    error = "not a 64-bit ELF";
    return std::nullopt;
  }
  if (!readAt(cubin, 18, machine) || machine != kEmCuda) {
    error = "ELF machine " + std::to_string(machine) + " is not EM_CUDA (190)";
    return std::nullopt;
  }
  if (!readAt(cubin, 40, shoff) || !readAt(cubin, 58, shentsize) || !readAt(cubin, 60, shnum) ||
      shentsize < 64) {
    error = "truncated ELF header";
    return std::nullopt;
  }
  std::vector<std::string> names;
  for (uint16_t i = 0; i < shnum; ++i) {
    uint64_t header = shoff + uint64_t(i) * shentsize;
    uint32_t type = 0, link = 0;
    uint64_t offset = 0, size = 0, entsize = 0;
    if (!readAt(cubin, header + 4, type) || !readAt(cubin, header + 24, offset) ||
        !readAt(cubin, header + 32, size) || !readAt(cubin, header + 40, link) ||
        !readAt(cubin, header + 56, entsize)) {
      error = "truncated section header " + std::to_string(i);
      return std::nullopt;
    }
    if (type != kShtSymtab)
      continue;
    uint64_t strings = 0, stringsSize = 0;
    uint64_t stringsHeader = shoff + uint64_t(link) * shentsize;
    if (link >= shnum || entsize < 24 || !readAt(cubin, stringsHeader + 24, strings) ||
        !readAt(cubin, stringsHeader + 32, stringsSize) || strings > cubin.size() ||
        cubin.size() - strings < stringsSize || offset > cubin.size() ||
        cubin.size() - offset < size) {
      error = "symbol table " + std::to_string(i) + " lies outside the file";
      return std::nullopt;
    }
    for (uint64_t sym = offset; sym + 24 <= offset + size; sym += entsize) {
      uint32_t nameOffset = 0;
      uint8_t info = 0;
      readAt(cubin, sym, nameOffset);
      readAt(cubin, sym + 4, info);
      if ((info & 0xf) != kSttFunc || nameOffset >= stringsSize)
        continue;
      const char *begin = reinterpret_cast<const char *>(cubin.data() + strings + nameOffset);
      names.emplace_back(begin, strnlen(begin, size_t(stringsSize - nameOffset)));
    }
  }
  return names;
}

} // namespace ortc::cuda
