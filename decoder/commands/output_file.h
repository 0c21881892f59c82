// OutputFile: a file a command writes (`timeline -o F`), made whole or not
// at all, and safely in a folder that others may write to (/tmp, a shared
// trace folder).
//
// The content goes to a new temporary file beside F, created with
// O_CREAT|O_EXCL under a random name (never through a symbolic link, never
// into a file that already exists), and Commit() renames it onto F: a reader
// never sees half a file, and the rename replaces F's directory entry (a
// symbolic link planted at F, or at any name beside it, is never followed).
// F may not be one of the command's input files (the same file, or a link to
// one): a timeline written over the traces it was made from would destroy
// them.
//
//   OutputFile out;
//   if (absl::Status s = out.Open(path, inputs); !s.ok()) ...  // exit 2
//   Write(out.stream());
//   if (absl::Status s = out.Commit(); !s.ok()) ...
//
// An OutputFile destroyed without Commit removes its temporary file.
//
// Thread-safety: none; one command owns it.

#ifndef NCCLWATCH_DECODER_COMMANDS_OUTPUT_FILE_H_
#define NCCLWATCH_DECODER_COMMANDS_OUTPUT_FILE_H_

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace ncclwatch::decoder {

class OutputFile {
 public:
  OutputFile();
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  // Makes the temporary file beside `path`. InvalidArgument with a one-line
  // reason when `path` is a folder or one of `inputs`; the system's reason
  // when the file cannot be made.
  absl::Status Open(const std::string& path, const std::vector<std::string>& inputs);

  // Where the content goes (after a successful Open).
  std::ostream& stream();

  // Writes out what is buffered, closes the file and renames it onto the
  // path; the temporary file is removed if any step fails.
  absl::Status Commit();

 private:
  class Buffer;
  std::string path_;
  std::string temp_;  // "" once renamed or removed
  int fd_ = -1;
  std::unique_ptr<Buffer> buffer_;
  std::unique_ptr<std::ostream> stream_;
};

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_COMMANDS_OUTPUT_FILE_H_
