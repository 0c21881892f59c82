// Building the report: the diagnosis, the processes as the traces or the logs
// showed them, and the call sites the findings name, made into one value.

#include "report/report.h"

#include <set>
#include <sstream>

#include "report/call_site.h"
#include "report/json_writer.h"
#include "report/report_parts.h"

namespace ncclwatch::decoder {
namespace {

// What both faces take from the diagnosis alike.
Report ReportOf(const Diagnosis& d, const UnreadableFiles& logs_not_read) {
  Report r;
  r.verdict = d.problem ? Verdict::kProblem : d.running ? Verdict::kRunning : Verdict::kHealthy;
  r.findings = d.findings;
  if (r.verdict == Verdict::kRunning) r.pending = d.pending;
  r.logs_not_read = logs_not_read;
  return r;
}

// Names, once each, the call sites the findings' words and facts name. The
// renderers are the ones that know which sites a finding names: rendering
// each finding through a namer that records is how the table stays whole
// when a kind's facts gain a site.
void NameCallSites(const CallSiteNamer& namer, Report* r) {
  CallSiteNamer record = [&](const CallSiteRef& site) {
    const auto key = std::make_pair(site.process, site.address);
    auto it = r->call_sites.find(key);
    if (it == r->call_sites.end()) it = r->call_sites.emplace(key, namer(site)).first;
    return it->second;
  };
  for (const Finding& f : r->findings) {
    RenderFinding(f, record);
    std::ostringstream discard;
    JsonWriter w(discard);
    WriteFindingJson(f, record, w);
  }
}

}  // namespace

CallSiteNamer Report::Sites() const {
  return [this](const CallSiteRef& site) {
    auto it = call_sites.find(std::make_pair(site.process, site.address));
    return it != call_sites.end() ? it->second : std::string("an unknown call site");
  };
}

Report MakeTracedReport(const JobAnalysis& job, const Diagnosis& d,
                        const UnreadableFiles& logs_not_read) {
  Report r = ReportOf(d, logs_not_read);
  TracesSeen seen;
  std::set<std::string> hosts;
  std::set<uint64_t> comms;
  for (const ProcessRecord& p : job.processes()) {
    hosts.insert(p.host);
    for (const CommMembership& m : p.comms)
      if (m.comm) comms.insert(m.comm);
    TracedProcess t;
    t.path = p.path;
    t.host = p.host;
    t.pid = p.pid;
    t.rank = p.rank;
    t.rank_source = p.rank_source;
    t.nccl_version = p.nccl_version;
    t.end = p.fate;
    t.last = p.last;
    t.last_beat_ns = p.completion.beats > 0 ? p.completion.last_beat_ns : 0;
    t.records = p.records;
    t.torn_slots = p.stats.torn_slots + p.unparsed;
    t.overwritten_slots = p.stats.ring_overwritten;
    t.unwritten_slots = p.stats.unwritten_slots;
    seen.processes.push_back(std::move(t));
  }
  seen.hosts = hosts.size();
  seen.communicators = comms.size();
  seen.jobs = d.jobs.size();
  seen.tracked = d.tracked;
  seen.end_ns = d.end_ns;
  r.seen = std::move(seen);
  for (const UnreadableTrace& u : job.unreadable()) r.traces_not_read.push_back({u.path, u.error});
  NameCallSites(TraceCallSites(job), &r);
  return r;
}

Report MakeLoggedReport(const NcclLog& log, const Diagnosis& d,
                        const UnreadableFiles& logs_not_read) {
  Report r = ReportOf(d, logs_not_read);
  LogsSeen seen;
  seen.files = log.sources().size();
  for (const LogProcess& p : log.processes()) {
    LoggedProcess l;
    l.source = p.source >= 0 && static_cast<size_t>(p.source) < log.sources().size()
                   ? log.sources()[p.source]
                   : std::string();
    l.host = p.host;
    l.pid = p.pid;
    l.rank = p.rank;
    l.nccl_version = p.nccl_version;
    l.bus_id = p.bus_id;
    l.init = p.init_complete  ? LoggedProcess::Init::kComplete
             : p.init_started ? LoggedProcess::Init::kStarted
                              : LoggedProcess::Init::kUnknown;
    l.lines = p.lines.size();
    seen.processes.push_back(std::move(l));
  }
  r.seen = std::move(seen);
  NameCallSites(NoCallSites(), &r);
  return r;
}

Report MakeReport(const EvidenceDiagnosis& e) {
  return e.traced() ? MakeTracedReport(e.job, e.diagnosis, e.logs_not_read)
                    : MakeLoggedReport(e.log, e.diagnosis, e.logs_not_read);
}

void WriteReport(const EvidenceDiagnosis& e, bool json, std::ostream& out) {
  const Report r = MakeReport(e);
  if (json)
    WriteJson(r, out);
  else
    WriteHuman(r, out);
}

}  // namespace ncclwatch::decoder
