// Not on the hot path (see elf_symbols.h).

#include "elf_symbols.h"

#include <elf.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

namespace ncclwatch::shim {
namespace {

uint32_t GnuHash(const char* s) {
  uint32_t h = 5381;
  for (const unsigned char* p = reinterpret_cast<const unsigned char*>(s); *p; ++p) h = h * 33 + *p;
  return h;
}

uint32_t SysvHash(const char* s) {
  uint32_t h = 0;
  for (const unsigned char* p = reinterpret_cast<const unsigned char*>(s); *p; ++p) {
    h = (h << 4) + *p;
    const uint32_t g = h & 0xf0000000u;
    if (g != 0) h ^= g >> 24;
    h &= ~g;
  }
  return h;
}

// glibc relocates the dynamic section's pointers in place on x86-64; the
// vDSO's (and some other loaders') stay relative to the load address.
uintptr_t DynPtr(uintptr_t base, uintptr_t value) { return value < base ? base + value : value; }

bool Defined(const ElfW(Sym) & s) {
  const int type = ELF64_ST_TYPE(s.st_info);
  return s.st_shndx != SHN_UNDEF && s.st_value != 0 && (type == STT_FUNC || type == STT_OBJECT);
}

// strcmp's answer to "equal?", without calling it: the shim's own exports
// are looked up while it is being relocated, before its PLT is bound
// (nccl_exports.h).
bool SameName(const char* a, const char* b) {
  for (; *a != '\0' && *a == *b; ++a, ++b) {
  }
  return *a == *b;
}

// The dynamic symbol table entry of `name` that `info` defines (any value,
// 0 included), or nullptr.
const ElfW(Sym) * FindEntry(const dl_phdr_info* info, const char* name, bool need_value) {
  const ElfW(Dyn)* dyn = nullptr;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
      dyn = reinterpret_cast<const ElfW(Dyn)*>(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
  }
  if (dyn == nullptr) return nullptr;
  const uintptr_t base = info->dlpi_addr;
  const ElfW(Sym)* symtab = nullptr;
  const char* strtab = nullptr;
  const uint32_t* gnu = nullptr;
  const uint32_t* sysv = nullptr;
  for (; dyn->d_tag != DT_NULL; ++dyn) {
    switch (dyn->d_tag) {
      case DT_SYMTAB:
        symtab = reinterpret_cast<const ElfW(Sym)*>(DynPtr(base, dyn->d_un.d_ptr));
        break;
      case DT_STRTAB:
        strtab = reinterpret_cast<const char*>(DynPtr(base, dyn->d_un.d_ptr));
        break;
      case DT_GNU_HASH:
        gnu = reinterpret_cast<const uint32_t*>(DynPtr(base, dyn->d_un.d_ptr));
        break;
      case DT_HASH:
        sysv = reinterpret_cast<const uint32_t*>(DynPtr(base, dyn->d_un.d_ptr));
        break;
      default:
        break;
    }
  }
  if (symtab == nullptr || strtab == nullptr) return nullptr;
  auto found = [&](uint32_t i) -> const ElfW(Sym) * {
    const ElfW(Sym)& s = symtab[i];
    const int type = ELF64_ST_TYPE(s.st_info);
    if (s.st_shndx == SHN_UNDEF || (type != STT_FUNC && type != STT_OBJECT)) return nullptr;
    if (need_value && !Defined(s)) return nullptr;
    return SameName(strtab + s.st_name, name) ? &s : nullptr;
  };
  if (gnu != nullptr) {
    const uint32_t nbuckets = gnu[0], symoffset = gnu[1], bloom_words = gnu[2];
    if (nbuckets == 0) return nullptr;
    const uint32_t* buckets =
        reinterpret_cast<const uint32_t*>(reinterpret_cast<const uint64_t*>(gnu + 4) + bloom_words);
    const uint32_t* chain = buckets + nbuckets;
    const uint32_t h = GnuHash(name);
    uint32_t i = buckets[h % nbuckets];
    if (i < symoffset) return nullptr;
    for (;; ++i) {
      const uint32_t h2 = chain[i - symoffset];
      if ((h | 1) == (h2 | 1)) {
        if (const ElfW(Sym)* p = found(i)) return p;
      }
      if (h2 & 1) return nullptr;
    }
  }
  if (sysv != nullptr) {
    const uint32_t nbucket = sysv[0];
    if (nbucket == 0) return nullptr;
    const uint32_t* bucket = sysv + 2;
    const uint32_t* chain = bucket + nbucket;
    for (uint32_t i = bucket[SysvHash(name) % nbucket]; i != STN_UNDEF; i = chain[i]) {
      if (const ElfW(Sym)* p = found(i)) return p;
    }
  }
  return nullptr;
}

}  // namespace

void* FindDynamicSymbol(const dl_phdr_info* info, const char* name) {
  const ElfW(Sym)* s = FindEntry(info, name, true);
  return s != nullptr ? reinterpret_cast<void*>(info->dlpi_addr + s->st_value) : nullptr;
}

ElfW(Sym) * FindDynamicSymbolEntry(const dl_phdr_info* info, const char* name) {
  return const_cast<ElfW(Sym)*>(FindEntry(info, name, false));
}

namespace {

bool ReadAt(int fd, void* buf, size_t n, uint64_t off) {
  uint8_t* p = static_cast<uint8_t*>(buf);
  while (n > 0) {
    const ssize_t r = pread(fd, p, n, static_cast<off_t>(off));
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
    off += static_cast<uint64_t>(r);
  }
  return true;
}

// Searches .symtab (entries [sym_off, sym_off + sym_size)) for a defined
// symbol whose name starts at string-table offset `name_off`.
bool SymtabDefines(int fd, uint64_t sym_off, uint64_t sym_size, uint32_t name_off) {
  ElfW(Sym) chunk[256];
  for (uint64_t done = 0; done + sizeof(ElfW(Sym)) <= sym_size;) {
    uint64_t n = (sym_size - done) / sizeof(ElfW(Sym));
    if (n > 256) n = 256;
    if (!ReadAt(fd, chunk, n * sizeof(ElfW(Sym)), sym_off + done)) return false;
    for (uint64_t i = 0; i < n; ++i)
      if (chunk[i].st_name == name_off && Defined(chunk[i])) return true;
    done += n * sizeof(ElfW(Sym));
  }
  return false;
}

}  // namespace

bool FileDefinesSymbol(const char* path, const char* name, uint64_t max_bytes) {
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool result = false;
  ElfW(Ehdr) eh;
  do {
    if (!ReadAt(fd, &eh, sizeof(eh), 0) || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
        eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_shentsize != sizeof(ElfW(Shdr)) ||
        eh.e_shnum == 0 || eh.e_shnum > 4096)
      break;
    // The .symtab section and its string table (its sh_link).
    ElfW(Shdr) symtab, strtab;
    bool have = false;
    for (uint32_t i = 0; i < eh.e_shnum && !have; ++i) {
      if (!ReadAt(fd, &symtab, sizeof(symtab), eh.e_shoff + i * sizeof(ElfW(Shdr)))) break;
      if (symtab.sh_type != SHT_SYMTAB) continue;
      if (symtab.sh_link >= eh.e_shnum ||
          !ReadAt(fd, &strtab, sizeof(strtab), eh.e_shoff + symtab.sh_link * sizeof(ElfW(Shdr))))
        break;
      have = true;
    }
    if (!have || strtab.sh_size > max_bytes) break;
    // Find "name\0" in the string table a chunk at a time (chunks overlap
    // by the name's length), then a defined symbol with that name offset.
    const size_t len = strlen(name);
    char buf[65536];
    if (len + 2 > sizeof(buf) / 2) break;
    for (uint64_t off = 0; off < strtab.sh_size && !result;) {
      uint64_t n = strtab.sh_size - off;
      if (n > sizeof(buf)) n = sizeof(buf);
      if (!ReadAt(fd, buf, n, strtab.sh_offset + off)) break;
      // No check of the byte before: the linker may share a string's tail
      // ("ncclX" inside "pncclX").
      for (uint64_t i = 0; i + len < n; ++i) {
        if (buf[i + len] != '\0' || memcmp(buf + i, name, len) != 0) continue;
        if (SymtabDefines(fd, symtab.sh_offset, symtab.sh_size, static_cast<uint32_t>(off + i))) {
          result = true;
          break;
        }
      }
      if (n < sizeof(buf)) break;
      off += n - len;
    }
  } while (false);
  close(fd);
  return result;
}

}  // namespace ncclwatch::shim
