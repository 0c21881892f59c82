// Which of the shim's own NCCL exports the dynamic linker may find.
//
// The shim exports a hook for every entry point of the newest nccl.h it was
// built with (nccl_functions.inc), and runs with NCCL 2.18 and later. A
// program that asks whether the NCCL it loaded has a function (a weak
// reference, `dlsym(RTLD_DEFAULT, "ncclCommGrow")`, a framework that checks
// before it calls) must get the answer it gets without the shim: nothing,
// when that NCCL lacks it. So the export of an entry point that no loaded
// module but the shim defines is hidden from the dynamic linker, and shown
// again once a module that defines it is loaded:
//
//   the shim's .dynsym (mapped, read-only)          glibc's lookup of a name
//   ┌───────────────────────────────┬────────┐      ┌──────────────────────────┐
//   │ ncclAllReduce    st_value 0x..│ shown  │ ───> │ found in the shim: hook  │
//   │ ncclCommGrow     st_value 0   │ hidden │ ───> │ no value: next module,   │
//   │ pncclCommGrow    st_value 0   │ hidden │      │ or undefined, as without │
//   └───────────────────────────────┴────────┘      │ the shim                 │
//                                                   └──────────────────────────┘
//
// glibc passes over a dynamic symbol whose value is 0, so hiding is one
// 8-byte store into the shim's own mapping (the page made writable for it,
// then read-only again); showing stores the value back.
//
// When. During the shim's own relocation, before the program's (an
// IRELATIVE relocation of the shim's runs the update at load: the
// modules loaded with the program are mapped by then), so the program's weak
// references and its BIND_NOW bindings see the NCCL it was started with;
// then whenever the loader may have loaded or unloaded a module since
// (LoaderGeneration): at each dlopen and each dlsym of an NCCL name, before
// glibc looks, and at the first NCCL call. With no NCCL loaded at all (a
// Python process before it imports a framework), every export stays shown:
// the framework that loads NCCL later must bind to the shim's hooks.
//
// What this cannot reach: a library loaded with the program that glibc
// relocates before the shim (the program's own dependencies are relocated
// first) and that binds a weak reference or BIND_NOW at load; a library
// dlopen'ed with NCCL in the same call binds before the shim has looked.
// Those get the shim's hook, which answers ncclSystemError for a function
// NCCL lacks (resolve/real_nccl.h's NoRealNccl), as before.
//
// Not on the hot path: it walks the module list (dl_iterate_phdr, the
// loader's lock) and makes mprotect system calls when something changes;
// not async-signal-safe. Serialised by a spin lock that names its holder.
// At load (the IRELATIVE resolver calls the update itself, not
// UpdateNcclExports, and touches no thread-local variable) it runs before
// the shim's PLT is bound, so it calls glibc only through pointers the
// relocations before it filled (nccl_exports.cc says how).

#ifndef NCCLWATCH_SHIM_RESOLVE_NCCL_EXPORTS_H_
#define NCCLWATCH_SHIM_RESOLVE_NCCL_EXPORTS_H_

namespace ncclwatch::shim {

// Shows the exports of the entry points some loaded module defines and
// hides the rest, unless no module defines any (no NCCL loaded yet) or
// nothing was loaded or unloaded since the last time. A call from a signal
// handler on a thread that is updating already returns at once.
void UpdateNcclExports();

// Around a fork (pthread_atfork), as core/nccl_visibility.h's: before it,
// waits for an update another thread is making (it walks the modules under
// the loader's lock, which a child forked meanwhile would never get); after
// it, in the parent and in the child, lets the next one start.
void NcclExportsBeforeFork();
void NcclExportsAfterFork();

// Whether the shim's export of entry point `index` (nccl_functions.inc's
// order) is hidden now, for tests and the trace.
bool NcclExportHidden(int index);

}  // namespace ncclwatch::shim

#endif  // NCCLWATCH_SHIM_RESOLVE_NCCL_EXPORTS_H_
