#include "report/call_site.h"

#include <cxxabi.h>
#include <elf.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>

#include "absl/strings/str_format.h"

namespace ncclwatch::decoder {
namespace {

struct Symbol {
  uint64_t start;
  uint64_t size;
  std::string name;
};

// Function symbols of one ELF file, sorted by address; empty when unreadable.
std::vector<Symbol> ReadSymbols(const std::string& path) {
  std::vector<Symbol> out;
  std::ifstream in(path, std::ios::binary);
  if (!in) return out;
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (data.size() < sizeof(Elf64_Ehdr)) return out;
  Elf64_Ehdr eh;
  std::memcpy(&eh, data.data(), sizeof(eh));
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64)
    return out;
  if (eh.e_shoff == 0 || eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shoff > data.size() ||
      static_cast<uint64_t>(eh.e_shnum) * sizeof(Elf64_Shdr) > data.size() - eh.e_shoff) {
    return out;
  }
  std::vector<Elf64_Shdr> sh(eh.e_shnum);
  std::memcpy(sh.data(), data.data() + eh.e_shoff, eh.e_shnum * sizeof(Elf64_Shdr));
  for (uint32_t want : {static_cast<uint32_t>(SHT_SYMTAB), static_cast<uint32_t>(SHT_DYNSYM)}) {
    for (const Elf64_Shdr& s : sh) {
      if (s.sh_type != want || s.sh_link >= sh.size() || s.sh_entsize != sizeof(Elf64_Sym))
        continue;
      const Elf64_Shdr& strs = sh[s.sh_link];
      if (s.sh_offset > data.size() || s.sh_size > data.size() - s.sh_offset ||
          strs.sh_offset > data.size() || strs.sh_size > data.size() - strs.sh_offset) {
        continue;
      }
      for (uint64_t off = 0; off + sizeof(Elf64_Sym) <= s.sh_size; off += sizeof(Elf64_Sym)) {
        Elf64_Sym sym;
        std::memcpy(&sym, data.data() + s.sh_offset + off, sizeof(sym));
        if (ELF64_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_value == 0 ||
            sym.st_name >= strs.sh_size)
          continue;
        const char* name = data.data() + strs.sh_offset + sym.st_name;
        const size_t max = strs.sh_size - sym.st_name;
        out.push_back({sym.st_value, sym.st_size, std::string(name, strnlen(name, max))});
      }
    }
    if (!out.empty()) break;
  }
  std::sort(out.begin(), out.end(),
            [](const Symbol& a, const Symbol& b) { return a.start < b.start; });
  return out;
}

std::string Demangle(const std::string& name) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> d(
      abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status), std::free);
  if (status != 0 || !d) return name;
  std::string s = d.get();
  // Keep it to the function: drop the parameter list (the first '(' outside
  // template arguments, lambda names and parentheses).
  int angle = 0, brace = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '<') ++angle;
    if (c == '>' && angle) --angle;
    if (c == '{') ++brace;
    if (c == '}' && brace) --brace;
    if (c == '(' && i >= 8 && s.compare(i - 8, 8, "operator") == 0 && i + 1 < s.size() &&
        s[i + 1] == ')') {
      ++i;  // the call operator's own name, "operator()"
      continue;
    }
    if (c == '(' && angle == 0 && brace == 0 && i > 0) return s.substr(0, i);
  }
  return s;
}

}  // namespace

std::string SymbolAt(const std::string& path, uint64_t vaddr) {
  static std::map<std::string, std::vector<Symbol>> cache;
  auto it = cache.find(path);
  if (it == cache.end()) it = cache.emplace(path, ReadSymbols(path)).first;
  const std::vector<Symbol>& syms = it->second;
  auto after = std::upper_bound(syms.begin(), syms.end(), vaddr,
                                [](uint64_t v, const Symbol& s) { return v < s.start; });
  if (after == syms.begin()) return "";
  const Symbol& s = *std::prev(after);
  if (s.size != 0 && vaddr >= s.start + s.size) return "";
  return Demangle(s.name);
}

std::string CallSite(const std::vector<ModuleInfo>& modules, uint64_t address) {
  if (address == 0) return "an unknown call site";
  for (const ModuleInfo& m : modules) {
    if (address < m.start || address >= m.end) continue;
    const size_t slash = m.path.rfind('/');
    const std::string name = slash == std::string::npos ? m.path : m.path.substr(slash + 1);
    const uint64_t vaddr = address - m.base;
    // The return address is after the call instruction: look just before it.
    const std::string symbol = SymbolAt(m.path, vaddr - 1);
    return symbol.empty() ? absl::StrFormat("%s+0x%x", name, vaddr)
                          : absl::StrFormat("%s+0x%x (%s)", name, vaddr, symbol);
  }
  return absl::StrFormat("0x%x", address);
}

CallSiteNamer TraceCallSites(const JobAnalysis& job) {
  return [&job](const CallSiteRef& site) {
    return site.process >= 0 && site.process < static_cast<int>(job.processes().size())
               ? CallSite(job.processes()[site.process].modules, site.address)
               : std::string("an unknown call site");
  };
}

}  // namespace ncclwatch::decoder
