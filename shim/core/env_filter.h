// Which environment variables the inventory records, and what of their
// values: a trace is copied around (attached to tickets, sent to whoever
// debugs the job), so it must never carry a credential.
//
// Names: an allow-list. NCCL's own knobs (NCCL_*, TORCH_NCCL_*), then exact
// names only: the launchers' rank, size and job variables, the rendezvous
// address, the GPUs a process may see, the library search path. Nothing by
// a launcher's prefix (SLURM_*, OMPI_*, FI_*, ...): those families hold
// secrets (SLURM_JWT, OMPI_MCA_orte_precondition_transports, FI_PSK) and
// free text (SLURM_JOB_COMMENT). A listed name is still refused when it
// names a secret (TOKEN, KEY, PASS, SECRET, JWT, PSK, ...), except the few
// known not to be one (NCCL_IB_PKEY: an InfiniBand partition number).
//
// Values: user-info in a URL (scheme://user:pass@host, the password
// holding ',' ';' '&' or quotes too), a bare user:pass@host, key=value and
// key:value pairs whose key names a secret (also with blanks or quotes
// around the ':' or '=', as in JSON: "token": "..."), the word after an
// option naming one (--password X) and after "Bearer" or "Basic" are
// redacted. A key names a secret when it holds TOKEN, KEY, PASS, CRED, ...
// or the whole word PW or SIG (an Azure SAS URL's ?sig=).
//
// Start-up only (not on the hot path); allocates nothing.

#ifndef NCCLWATCH_SHIM_CORE_ENV_FILTER_H_
#define NCCLWATCH_SHIM_CORE_ENV_FILTER_H_

#include <stddef.h>

namespace ncclwatch::shim {

// Whether the variable `name` (len bytes, no '=') may be recorded.
bool RecordableVariable(const char* name, int len);

// Copies `value` (len bytes) into `out` with credentials replaced by
// "<redacted>"; the result is cut to out_len bytes (not NUL-terminated).
// Returns its length.
size_t RedactValue(const char* value, size_t len, char* out, size_t out_len);

}  // namespace ncclwatch::shim

#endif  // NCCLWATCH_SHIM_CORE_ENV_FILTER_H_
