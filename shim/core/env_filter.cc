// Start-up only: no allocation, no C++ runtime (the shim is linked as C).

#include "core/env_filter.h"

#include <string.h>

namespace ncclwatch::shim {
namespace {

// NCCL's own knobs: what init, the transports and the decoder's findings
// depend on (NCCL_SOCKET_IFNAME, NCCL_COMM_ID, NCCL_BUFFSIZE, NCCL_IB_HCA...).
constexpr const char* kPrefixes[] = {"NCCL_", "TORCH_NCCL_"};

// Everything else by exact name.
constexpr const char* kNames[] = {
    // the rank, the job's size and the rendezvous (torchrun, Slurm, Open MPI, PMI)
    "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "GROUP_WORLD_SIZE",
    "NODE_RANK", "ROLE_RANK", "ROLE_NAME", "ROLE_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
    "TORCHELASTIC_RUN_ID", "TORCHELASTIC_USE_AGENT_STORE",
    // torchrun's options, as its agent reads them from the environment
    "PET_MASTER_ADDR", "PET_MASTER_PORT", "PET_NNODES", "PET_NPROC_PER_NODE", "PET_NODE_RANK",
    "PET_RDZV_BACKEND", "PET_RDZV_ENDPOINT", "PET_RDZV_ID", "PET_STANDALONE",
    "TORCHELASTIC_RESTART_COUNT", "TORCHELASTIC_MAX_RESTARTS", "TORCH_DISTRIBUTED_DEBUG",
    "SLURM_JOB_ID", "SLURM_JOBID", "SLURM_STEP_ID", "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NODEID",
    "SLURM_NTASKS", "SLURM_NNODES", "SLURM_JOB_NUM_NODES", "SLURM_NTASKS_PER_NODE",
    "SLURM_TASKS_PER_NODE", "SLURM_JOB_NODELIST", "SLURM_STEP_NODELIST", "SLURM_NODELIST",
    "SLURM_CPUS_PER_TASK", "SLURM_GPUS_ON_NODE", "SLURM_STEP_GPUS", "SLURM_JOB_GPUS",
    "SLURMD_NODENAME", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
    "OMPI_COMM_WORLD_LOCAL_SIZE", "OMPI_COMM_WORLD_NODE_RANK", "OMPI_MCA_btl", "OMPI_MCA_pml",
    "OMPI_MCA_btl_tcp_if_include", "OMPI_MCA_btl_tcp_if_exclude", "OMPI_MCA_oob_tcp_if_include",
    "PMI_RANK", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALRANKID", "MPI_LOCALNRANKS", "PBS_JOBID",
    "LSB_JOBID", "JOB_ID",
    // the GPUs a process sees
    "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "CUDA_LAUNCH_BLOCKING",
    "CUDA_DEVICE_MAX_CONNECTIONS", "CUDA_MODULE_LOADING", "NVIDIA_VISIBLE_DEVICES",
    "NVIDIA_DRIVER_CAPABILITIES",
    // the other transports' interface choices
    "UCX_NET_DEVICES", "UCX_TLS", "GLOO_SOCKET_IFNAME", "FI_PROVIDER", "FI_EFA_USE_DEVICE_RDMA",
    "FI_EFA_FORK_SAFE",
    // what was loaded, and where the process runs
    "LD_LIBRARY_PATH", "LD_PRELOAD", "KUBERNETES_SERVICE_HOST", "container", "HOSTNAME"};

// A name or key naming a secret: containing one of these, in any case
// (NCCL_CREDS, db_password, api_key)...
constexpr const char* kSecrets[] = {"TOKEN",   "KEY",  "PASS", "PWD",       "SECRET",
                                    "JWT",     "PSK",  "AUTH", "COOKIE",    "PRIVATE",
                                    "SESSION", "CRED", "CERT", "SIGNATURE", "BEARER"};
// ...or one of these as a whole word (between characters that are not
// letters or digits): short enough to be parts of other words (pw=, db_pw,
// the signature of an Azure SAS URL, ?sig=).
constexpr const char* kSecretWords[] = {"PW", "SIG"};
// Listed names that look like secrets and are not.
constexpr const char* kNotSecrets[] = {"NCCL_IB_PKEY"};

constexpr char kRedacted[] = "<redacted>";

bool SameName(const char* name, int len, const char* listed) {
  return static_cast<int>(strlen(listed)) == len &&
         strncmp(name, listed, static_cast<size_t>(len)) == 0;
}

bool ContainsUpper(const char* s, size_t len, const char* word) {
  const size_t wl = strlen(word);
  for (size_t i = 0; i + wl <= len; ++i) {
    size_t j = 0;
    while (j < wl) {
      char c = s[i + j];
      if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
      if (c != word[j]) break;
      ++j;
    }
    if (j == wl) return true;
  }
  return false;
}

bool IsWordChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

// Whether `word` (upper case) is a whole word of s, in any case.
bool HasWordUpper(const char* s, size_t len, const char* word) {
  const size_t wl = strlen(word);
  for (size_t i = 0; i + wl <= len; ++i) {
    if ((i > 0 && IsWordChar(s[i - 1])) || (i + wl < len && IsWordChar(s[i + wl]))) continue;
    if (ContainsUpper(s + i, wl, word)) return true;
  }
  return false;
}

bool NamesSecret(const char* s, size_t len) {
  for (const char* w : kSecrets)
    if (ContainsUpper(s, len, w)) return true;
  for (const char* w : kSecretWords)
    if (HasWordUpper(s, len, w)) return true;
  return false;
}

bool IsSeparator(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ',' || c == ';' || c == '&' ||
         c == '?' || c == '"' || c == '\'';
}

bool IsBlank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool IsQuote(char c) { return c == '"' || c == '\''; }

// A bare key: letters, digits, '_', '.', '-' (token, api_key, --password).
bool IsKey(const char* s, const char* e) {
  if (s == e) return false;
  for (; s < e; ++s)
    if (!IsWordChar(*s) && *s != '_' && *s != '.' && *s != '-') return false;
  return true;
}

bool IsSchemeWord(const char* s, size_t len) {  // "Bearer <token>", "Basic <credentials>"
  return (len == 6 && ContainsUpper(s, len, "BEARER")) ||
         (len == 5 && ContainsUpper(s, len, "BASIC"));
}

const char* Find(const char* s, const char* e, char c) {
  for (; s < e; ++s)
    if (*s == c) return s;
  return nullptr;
}

const char* FindLast(const char* s, const char* e, char c) {
  const char* found = nullptr;
  for (; s < e; ++s)
    if (*s == c) found = s;
  return found;
}

bool SchemeAt(const char* p, const char* e) {
  return p + 3 <= e && p[0] == ':' && p[1] == '/' && p[2] == '/';
}

// The end of the token that starts at s: the next separator, except in a
// URL's authority (scheme://user:pass@host:port), where user-info may hold
// ',' ';' '&' and quotes (RFC 3986's sub-delimiters) and which runs to the
// next '/', '?', '#', blank or '"', or to its last separator before another
// URL (https://a@h1,https://b@h2).
const char* TokenEnd(const char* s, const char* e) {
  const char* p = s;
  while (p < e && !IsSeparator(*p)) {
    if (!SchemeAt(p, e)) {
      ++p;
      continue;
    }
    const char* last_separator = nullptr;
    for (p += 3; p < e && *p != '/' && *p != '?' && *p != '#' && *p != '"' && !IsBlank(*p); ++p) {
      if (SchemeAt(p, e) && last_separator != nullptr) return last_separator;
      if (IsSeparator(*p)) last_separator = p;
    }
  }
  return p;
}

// Appends to a buffer that silently stops at its end.
struct Out {
  char* p;
  size_t cap;
  size_t n = 0;
  void Put(const char* s, size_t len) {
    for (size_t i = 0; i < len && n < cap; ++i) p[n++] = s[i];
  }
  void Put(const char* s, const char* e) { Put(s, static_cast<size_t>(e - s)); }
  void Redacted() { Put(kRedacted, sizeof(kRedacted) - 1); }
};

// One token of a value. Returns true when the token is a key naming a
// secret with its value still to come ("password:" before " hunter2").
bool RedactToken(const char* s, const char* e, Out* out) {
  const char* scheme = nullptr;
  for (const char* p = s; p + 3 <= e; ++p)
    if (p[0] == ':' && p[1] == '/' && p[2] == '/') {
      scheme = p;
      break;
    }
  // key=value: the value goes if the key names a secret (token=..., pass=...);
  // otherwise the value is looked at in turn (a=b=https://u:p@h).
  for (const char* eq = Find(s, e, '='); eq != nullptr && (scheme == nullptr || eq < scheme);
       eq = Find(s, e, '=')) {
    out->Put(s, eq + 1);
    if (NamesSecret(s, static_cast<size_t>(eq - s))) {
      if (eq + 1 == e) return true;
      out->Redacted();
      return false;
    }
    s = eq + 1;
  }
  if (scheme != nullptr) {  // scheme://user:pass@host/...: the user-info goes
    const char* auth = scheme + 3;
    const char* auth_end = auth;
    while (auth_end < e && *auth_end != '/' && *auth_end != '#') ++auth_end;
    const char* at = FindLast(auth, auth_end, '@');
    if (at == nullptr) {
      out->Put(s, e);
      return false;
    }
    out->Put(s, auth);
    out->Redacted();
    out->Put(at, e);
    return false;
  }
  const char* colon = Find(s, e, ':');
  const char* at = FindLast(s, e, '@');
  if (colon != nullptr && at != nullptr && colon < at && Find(s, at, '/') == nullptr) {
    out->Redacted();  // user:pass@host
    out->Put(at, e);
    return false;
  }
  if (colon != nullptr && Find(s, colon, '/') == nullptr &&
      NamesSecret(s, static_cast<size_t>(colon - s))) {  // token:... (not a path list)
    out->Put(s, colon + 1);
    if (colon + 1 == e) return true;
    out->Redacted();
    return false;
  }
  out->Put(s, e);
  return false;
}

}  // namespace

bool RecordableVariable(const char* name, int len) {
  if (name == nullptr || len <= 0) return false;
  for (const char* x : kNotSecrets)
    if (SameName(name, len, x)) return true;
  bool listed = false;
  for (const char* p : kPrefixes) {
    const int pl = static_cast<int>(strlen(p));
    if (len > pl && strncmp(name, p, static_cast<size_t>(pl)) == 0) listed = true;
  }
  for (const char* x : kNames)
    if (SameName(name, len, x)) listed = true;
  return listed && !NamesSecret(name, static_cast<size_t>(len));
}

size_t RedactValue(const char* value, size_t len, char* out, size_t out_len) {
  Out o{out, out_len};
  const char* e = value + len;
  // Set where the next token is the secret: after "Bearer" or "Basic", an
  // option naming a secret ("--password X"), and a key naming one before a
  // ':' or '=' with blanks or quotes between ("token": "X", pw = X).
  bool secret_next = false;
  for (const char* p = value; p < e;) {
    if (IsSeparator(*p)) {
      if (secret_next && IsQuote(*p)) {  // a quoted secret goes whole, blanks and all
        const char* close = Find(p + 1, e, *p);
        o.Put(p, 1);
        o.Redacted();
        if (close == nullptr) return o.n;
        o.Put(close, 1);
        p = close + 1;
        secret_next = false;
        continue;
      }
      if (!IsBlank(*p)) secret_next = false;
      o.Put(p, 1);
      ++p;
      continue;
    }
    if (o.n >= o.cap) break;
    const char* t = p;
    p = TokenEnd(p, e);
    const size_t tl = static_cast<size_t>(p - t);
    if (IsSchemeWord(t, tl)) {
      o.Put(t, p);  // "Bearer" itself is no secret; what follows it is
      secret_next = true;
      continue;
    }
    if (secret_next && (*t == '{' || *t == '[')) {  // "auth": {"key": ...}: looked into
      o.Put(t, p);
      secret_next = false;
      continue;
    }
    if (secret_next) {
      o.Redacted();
      secret_next = false;
      continue;
    }
    secret_next = RedactToken(t, p, &o);
    if (!secret_next && IsKey(t, p) && NamesSecret(t, tl)) {
      if (t[0] == '-') {  // --password X
        secret_next = true;
        continue;
      }
      const char* q = p;  // "token" : ..., password = ...
      while (q < e && (IsQuote(*q) || *q == ' ' || *q == '\t')) ++q;
      if (q < e && (*q == ':' || *q == '=')) {
        o.Put(p, q + 1);
        p = q + 1;
        secret_next = true;
      }
    }
  }
  return o.n;
}

}  // namespace ncclwatch::shim
