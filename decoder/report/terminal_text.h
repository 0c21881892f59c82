// Text from traces and logs, made safe to print and to put in JSON.
//
// Hosts, paths, executables, environment values and NCCL's error text come
// from the traced machine and may hold any byte: an escape sequence that
// retitles or clears the reader's terminal, or bytes that are not UTF-8.
// Every report passes its text through one of these before it leaves.

#ifndef NCCLWATCH_DECODER_REPORT_TERMINAL_TEXT_H_
#define NCCLWATCH_DECODER_REPORT_TERMINAL_TEXT_H_

#include <string>
#include <string_view>

namespace ncclwatch::decoder {

// For a terminal: control characters (C0 but newline and tab, DEL, and the
// C1 controls U+0080-U+009F) and bytes that are not UTF-8 become \xNN;
// everything else, UTF-8 text included, is kept.
std::string TerminalSafe(std::string_view text);

// For one line of a report or an error (a file name, a message that holds
// one): as TerminalSafe, and newline and tab become \x0a and \x09 too, so a
// name cannot end the line and forge the next.
std::string OneLine(std::string_view text);

// The length of the UTF-8 sequence at text[i] (2-4) if it is a whole, valid
// one, else 0. (ASCII is 1.)
size_t Utf8SequenceAt(std::string_view text, size_t i);

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_REPORT_TERMINAL_TEXT_H_
