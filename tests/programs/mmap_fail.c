/* Preloaded after the shim (tests/test_shim_limits.py): mmap fails with ENOMEM where the shim
 * gives a spent chunk's 4 MiB window back to its reserved range (PROT_NONE, MAP_FIXED), as it
 * does when the process has as many mappings as vm.max_map_count allows; every other mapping
 * is made.  Built as a shared library; mmap64 too, the name a build with 64-bit file offsets
 * (_FILE_OFFSET_BITS=64, as Python's extension builds) calls. */
#define _GNU_SOURCE
#include <errno.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
    if (prot == PROT_NONE && (flags & MAP_FIXED) && len == (4u << 20)) {
        errno = ENOMEM;
        return MAP_FAILED;
    }
    return (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
}

void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
    return mmap(addr, len, prot, flags, fd, off);
}
