// The inventory's environment filter (shim/core/env_filter.h): which
// variables a trace may carry, and that no credential goes with them.

#include "core/env_filter.h"

#include <catch2/catch.hpp>
#include <string>

namespace {

using ncclwatch::shim::RecordableVariable;
using ncclwatch::shim::RedactValue;

bool Recordable(const std::string& name) {
  return RecordableVariable(name.data(), static_cast<int>(name.size()));
}

std::string Redacted(const std::string& value, size_t cap = 256) {
  std::string out(cap, '\0');
  out.resize(RedactValue(value.data(), value.size(), out.data(), out.size()));
  return out;
}

// Variables known to carry secrets, or free text that may hold one. None may
// ever be recorded, whatever its value.
constexpr const char* kSecretBearing[] = {
    "SLURM_JWT",
    "SLURM_JOB_COMMENT",
    "SLURM_COMMENT",
    "SLURM_JOB_NAME",
    "SLURM_JOB_ACCOUNT",
    "SLURM_SPANK_TOKEN",
    "FI_PSK",
    "FI_EFA_PSK",
    "NCCL_IB_PASSPHRASE",
    "NCCL_NET_TOKEN",
    "NCCL_API_KEY",
    "NCCL_SECRET",
    "TORCH_NCCL_AUTH_TOKEN",
    "OMPI_MCA_orte_precondition_transports",
    "OMPI_MCA_pmix_precondition_transports",
    "PMIX_SECURITY_MODE",
    "PMIX_SERVER_URI4",
    "PMIX_MCA_psec",
    "UCX_SECRET",
    "GLOO_DEVICE_TRANSPORT_TOKEN",
    "XLA_FLAGS",
    "TF_GPU_THREAD_MODE",
    "HF_TOKEN",
    "HUGGING_FACE_HUB_TOKEN",
    "WANDB_API_KEY",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "GITHUB_TOKEN",
    "KRB5CCNAME",
    "SSH_AUTH_SOCK",
    "MUNGE_KEY",
    "KUBERNETES_SERVICE_TOKEN",
    "DATABASE_URL",
    "PASSWORD",
    "CUDA_MPS_PIPE_DIRECTORY",
    "NVIDIA_API_KEY",
    "NCCL_CREDS",
    "NCCL_NET_CREDENTIALS",
    "NCCL_IB_PW",
    "HOME",
    "USER",
    "PATH",
    "NCCL_",
};

}  // namespace

TEST_CASE("no variable known to carry a secret is recorded", "[env]") {
  for (const char* name : kSecretBearing) {
    INFO(name);
    CHECK_FALSE(Recordable(name));
  }
}

TEST_CASE("what the decoder and a person debugging init need is recorded", "[env]") {
  for (const char* name : {"NCCL_SOCKET_IFNAME",
                           "NCCL_COMM_ID",
                           "NCCL_BUFFSIZE",
                           "NCCL_IB_HCA",
                           "NCCL_DEBUG",
                           "NCCL_IB_PKEY",
                           "TORCH_NCCL_ASYNC_ERROR_HANDLING",
                           "MASTER_ADDR",
                           "MASTER_PORT",
                           "RANK",
                           "WORLD_SIZE",
                           "LOCAL_RANK",
                           "SLURM_PROCID",
                           "SLURM_NTASKS",
                           "SLURM_LOCALID",
                           "SLURM_JOB_ID",
                           "OMPI_COMM_WORLD_RANK",
                           "PMI_RANK",
                           "PMIX_RANK",
                           "CUDA_VISIBLE_DEVICES",
                           "LD_LIBRARY_PATH",
                           "LD_PRELOAD",
                           "HOSTNAME",
                           "container"}) {
    INFO(name);
    CHECK(Recordable(name));
  }
  CHECK_FALSE(Recordable(""));
  CHECK_FALSE(Recordable("RANKS"));  // exact names, not prefixes
  CHECK_FALSE(Recordable("MASTER_ADDRESS"));
  CHECK_FALSE(Recordable("NCCL_IB_PKEYS"));
}

TEST_CASE("credentials inside values are redacted", "[env]") {
  CHECK(Redacted("https://user:pass@host:29500") == "https://<redacted>@host:29500");
  CHECK(Redacted("tcp://alice@10.0.0.1:29500/x") == "tcp://<redacted>@10.0.0.1:29500/x");
  CHECK(Redacted("user:pass@host") == "<redacted>@host");
  CHECK(Redacted("https://h/p?token=abc&x=1") == "https://h/p?token=<redacted>&x=1");
  CHECK(Redacted("run 7 token=s3cr3t, password:hunter2 key=v") ==
        "run 7 token=<redacted>, password:<redacted> key=<redacted>");
  CHECK(Redacted("Authorization: Bearer abc.def") == "Authorization: Bearer <redacted>");
  CHECK(Redacted("a=b=https://u:p@h") == "a=b=https://<redacted>@h");
  // What is not a credential stays.
  for (const char* kept : {"eth0,ib0", "^docker,lo", "10.0.0.1:29500", "node[01-04]",
                           "=mlx5_0:1,mlx5_1:1", "/opt/nccl/lib:/usr/local/cuda/lib64:/keys/lib",
                           "0x8001", "user@host:22", "https://host:443/path", "4194304"}) {
    INFO(kept);
    CHECK(Redacted(kept) == kept);
  }
  // Cut to the buffer, after redaction: a secret is never half kept.
  CHECK(Redacted("https://user:verylongpassword@host", 12) == "https://<red");
  std::string many(100000, '=');  // long values cost no stack
  CHECK(Redacted(many).size() == 256);
}

// Each value holds the secret "s3cr3t" where a credential goes; the
// redacted value must say what it is without it.
TEST_CASE("credentials in the forms found in jobs' environments are redacted", "[env]") {
  struct Case {
    const char* value;
    const char* redacted;
  };
  const Case cases[] = {
      // A URL's password holding sub-delimiters (RFC 3986 allows them in user-info).
      {"https://user:pa;s3cr3t@host:29500", "https://<redacted>@host:29500"},
      {"https://user:pa,s3cr3t@host/x", "https://<redacted>@host/x"},
      {"tcp://u:a&b's3cr3t@10.0.0.1:29500", "tcp://<redacted>@10.0.0.1:29500"},
      {"'https://u:x;s3cr3t@h', other", "'https://<redacted>@h', other"},
      {"https://a@h1,https://u:s3cr3t@h2/x", "https://<redacted>@h1,https://<redacted>@h2/x"},
      // A job id that is a key=value pair.
      {"token=s3cr3t", "token=<redacted>"},
      {"job-7,token=s3cr3t", "job-7,token=<redacted>"},
      // Short keys, as whole words.
      {"pw=s3cr3t", "pw=<redacted>"},
      {"db_pw=s3cr3t user=me", "db_pw=<redacted> user=me"},
      {"PW:s3cr3t", "PW:<redacted>"},
      // An option and its value.
      {"--password s3cr3t --port 1", "--password <redacted> --port 1"},
      {"--password=s3cr3t", "--password=<redacted>"},
      {"-api-token  s3cr3t", "-api-token  <redacted>"},
      {"--token 's3cr3t and more' --x", "--token '<redacted>' --x"},
      // JSON and YAML-like keys.
      {"{\"token\": \"s3cr3t\", \"n\": 1}", "{\"token\": \"<redacted>\", \"n\": 1}"},
      {"{\"token\":\"s3 cr3t\"}", "{\"token\":\"<redacted>\"}"},
      {"{'password' : 's3cr3t'}", "{'password' : '<redacted>'}"},
      {"password: s3cr3t", "password: <redacted>"},
      {"token = s3cr3t", "token = <redacted>"},
      {"\"auth\": {\"key\": \"s3cr3t\"}", "\"auth\": {\"key\": \"<redacted>\"}"},
      // An Azure SAS URL.
      {"https://acct.blob.core.windows.net/c/f?sv=2022-11-02&se=2026&sp=r&sig=s3cr3t%2Bx",
       "https://acct.blob.core.windows.net/c/f?sv=2022-11-02&se=2026&sp=r&sig=<redacted>"},
      {"https://h/p?x=1&SIG=s3cr3t", "https://h/p?x=1&SIG=<redacted>"},
      // What is near these and no secret stays.
      {"signal=9 pwr=1 design=a", "signal=9 pwr=1 design=a"},
      {"the token is fine", "the token is fine"},
      {"--port 29500", "--port 29500"},
  };
  for (const Case& c : cases) {
    INFO(c.value);
    const std::string out = Redacted(c.value);
    CHECK(out == c.redacted);
    CHECK(out.find("s3cr3t") == std::string::npos);
    CHECK(out.find("cr3t") == std::string::npos);
  }
}
