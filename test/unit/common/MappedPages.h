//===- MappedPages.h - which pages of a range this process has mapped -----===//
//
// For tests of memory that should not stay resident: /proc/self/pagemap says
// per virtual page whether it is present in this process's page tables,
// which is what RSS counts (mincore() would say whether the page cache holds
// a file's page, mapped here or not).
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_TEST_UNIT_COMMON_MAPPEDPAGES_H
#define ORTC_TEST_UNIT_COMMON_MAPPEDPAGES_H

#include <cstddef>
#include <cstdint>
#include <fcntl.h>
#include <unistd.h>

namespace ortc::testutil {

/// How many of the whole pages inside [data, data + size) are present in this
/// process's page tables, or -1 where /proc/self/pagemap cannot be read.
inline long presentPages(const void *data, size_t size) {
  const uintptr_t page = uintptr_t(::sysconf(_SC_PAGESIZE));
  uintptr_t first = (uintptr_t(data) + page - 1) / page, last = (uintptr_t(data) + size) / page;
  int fd = ::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  long present = 0;
  for (uintptr_t p = first; p < last; ++p) {
    uint64_t entry = 0;
    if (::pread(fd, &entry, sizeof entry, off_t(p * sizeof entry)) != ssize_t(sizeof entry)) {
      present = -1;
      break;
    }
    present += long(entry >> 63);
  }
  ::close(fd);
  return present;
}

} // namespace ortc::testutil

#endif // ORTC_TEST_UNIT_COMMON_MAPPEDPAGES_H
