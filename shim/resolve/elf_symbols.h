// Reading a loaded module's symbols without asking the dynamic linker.
//
// The dl hooks need glibc's own dlsym before they can call it (the shim
// exports dlsym, so asking dlsym for "dlsym" would come back to the shim),
// and the visibility check (core/nccl_visibility.h) asks whether a module
// that is not libnccl.so defines NCCL's entry points. Both look a name up
// in a module's dynamic symbol table, through its GNU or SysV hash table,
// in memory. FileDefinesSymbol reads the static symbol table (.symtab) of a
// file on disk, for an executable that has NCCL linked in without exporting
// it.
//
// Not on the hot path: FindDynamicSymbol reads only memory, calls no C
// library function and is async-signal-safe, but its callers walk the module list (dl_iterate_phdr,
// which takes the loader's lock); FileDefinesSymbol makes system calls.
// Neither allocates.

#ifndef NCCLWATCH_SHIM_RESOLVE_ELF_SYMBOLS_H_
#define NCCLWATCH_SHIM_RESOLVE_ELF_SYMBOLS_H_

#include <link.h>
#include <stdint.h>

namespace ncclwatch::shim {

// The address of the function or object `name` that the module `info`
// (one of dl_iterate_phdr's) defines and exports, or nullptr. Undefined
// references (imports) do not count.
void* FindDynamicSymbol(const dl_phdr_info* info, const char* name);

// The entry of `name` in the dynamic symbol table of `info`, if it defines
// it, whatever its value (0 included: an export the shim hid,
// nccl_exports.h), or nullptr. Calls no C library function, so it can run
// before the caller's PLT is bound.
ElfW(Sym) * FindDynamicSymbolEntry(const dl_phdr_info* info, const char* name);

// Whether the ELF file at `path` defines `name` in its static symbol table
// (.symtab; a stripped file has none). Reads at most `max_bytes` of the
// string table; false when the file cannot be read or is larger.
bool FileDefinesSymbol(const char* path, const char* name, uint64_t max_bytes);

}  // namespace ncclwatch::shim

#endif  // NCCLWATCH_SHIM_RESOLVE_ELF_SYMBOLS_H_
