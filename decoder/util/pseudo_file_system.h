// PseudoFileSystem: whether an open file lies on a file system the kernel
// makes up (/proc, /sys, debugfs, cgroups, ...). Such files are neither logs
// nor traces: their sizes say nothing (a /proc file says 0 and may read
// without end: /proc/self/pagemap holds 8 bytes for every page of the
// address space), so the commands refuse them without reading, and never
// walk into their folders.
//
// Thread-safety: a plain function (one fstatfs).

#ifndef NCCLWATCH_DECODER_UTIL_PSEUDO_FILE_SYSTEM_H_
#define NCCLWATCH_DECODER_UTIL_PSEUDO_FILE_SYSTEM_H_

namespace ncclwatch::decoder {

// The file system's name ("proc", "sysfs", ...) when `fd` lies on such a
// one, else nullptr (an ordinary file system, or fstatfs failed).
const char* PseudoFileSystem(int fd);

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_UTIL_PSEUDO_FILE_SYSTEM_H_
