#include "model/fate.h"

namespace ncclwatch::decoder {

Fate FateOf(const ProcessTrace& t) {
  Fate fate;
  const FatalSignalEvent* signal = t.signals.empty() ? nullptr : &t.signals.back();
  if (t.end) {
    fate.kind = Fate::kExited;
    fate.exit_code = t.end->exit_code;
    fate.when_ns = t.RealtimeNs(t.end->t);
    if (signal != nullptr && signal->order < t.end->order) {
      fate.signo = signal->signo;
      fate.signal_ns = t.RealtimeNs(signal->t);
    }
  } else if (signal != nullptr) {
    const uint64_t last_call_order = t.LastCallOrder();
    const bool carried_on = signal->disposition != 0 && last_call_order > signal->order;
    if (!carried_on) {
      fate.kind = Fate::kSignal;
      fate.signo = signal->signo;
      fate.disposition = signal->disposition;
      fate.when_ns = t.RealtimeNs(signal->t);
      fate.signal_ns = fate.when_ns;
    }
  }
  return fate;
}

}  // namespace ncclwatch::decoder
