//===- ChildProcess.h - Work in a child that reports by lines ---*- C++ -*-===//
//
// Runs a piece of work in a forked copy of the tool, so that a crash, an
// assertion or a hang in it cannot take the tool down: the child reports
// progress and results to its parent one line at a time over a pipe, and
// the parent learns how it ended (exit status, signal, or killed after a
// time limit) and what it wrote to stderr. pd-walk runs its walks and the
// replays of its reductions this way.
//
// Fork only from a process with no other running threads that the child
// needs (disable the MLIRContext's thread pool first).
//
//===----------------------------------------------------------------------===//

#ifndef PERFDOJO_SUPPORT_CHILDPROCESS_H
#define PERFDOJO_SUPPORT_CHILDPROCESS_H

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include <memory>
#include <string>
#include <sys/types.h>
#include <vector>

namespace mlir {
namespace perfdojo {

/// The child's end of the pipe.
class ChildChannel {
public:
  explicit ChildChannel(int fd) : fd(fd) {}
  /// Sends one line (`line` must not hold a newline; see escapeField).
  /// Blocks while the pipe is full.
  void send(llvm::StringRef line);

private:
  int fd;
};

/// A forked child and the parent's end of its pipe.
class ChildProcess {
public:
  /// Forks. The child runs `body`, flushes stdout and stderr and exits
  /// with body's result, never returning. Its stderr goes to a temporary
  /// file that getStderr reads back. Returns null, with `error` set, if the
  /// pipe, the file or the fork cannot be made.
  static std::unique_ptr<ChildProcess>
  start(llvm::function_ref<int(ChildChannel &)> body, std::string &error);
  ~ChildProcess();

  /// The pipe's read end, for poll().
  int getFD() const { return fd; }

  /// Appends the complete lines that can be read without blocking (call it
  /// after poll() reported the pipe readable). Returns false once the child
  /// has closed its end and every line was returned.
  bool readAvailable(std::vector<std::string> &lines);

  /// Waits up to `timeoutSeconds` for the next line. Returns 1 with a line,
  /// 0 at the end of the stream, -1 on timeout.
  int readLine(std::string &line, double timeoutSeconds);

  /// Kills the child (SIGKILL) if it still runs.
  void kill();

  /// Waits for the child to end (once) and describes how: "exit status 3",
  /// "killed by signal 6 (Aborted)", or "" for exit status 0.
  std::string wait();

  /// The first `maxBytes` the child wrote to stderr.
  std::string getStderr(size_t maxBytes) const;

private:
  ChildProcess() = default;
  /// Reads what the pipe holds into `pending`; sets `ended` at its end.
  void fill();
  pid_t pid = -1;
  int fd = -1;
  int stderrFD = -1;
  bool waited = false;
  std::string exitDescription;
  std::string pending;
  bool ended = false;
};

/// Escapes backslashes, tabs and newlines so that a string fits in one
/// tab-separated field of a line, and back.
std::string escapeField(llvm::StringRef text);
std::string unescapeField(llvm::StringRef text);

} // namespace perfdojo
} // namespace mlir

#endif // PERFDOJO_SUPPORT_CHILDPROCESS_H
