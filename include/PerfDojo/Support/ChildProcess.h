//===- ChildProcess.h - Work supervised in a child process ------*- C++ -*-===//
//
// The one supervisor of child processes: runs a piece of work (a callable,
// in a forked copy of the tool) or a command (exec'd) in a child, so that a
// crash, an assertion, a hang or a runaway allocation in it cannot take the
// tool down. The child reports to its parent over a pipe (one line at a
// time, or any bytes), or through SharedMemory for large results; the
// parent follows it with a time limit and learns how it ended: a
// ChildStatus that says exited (with its code), killed by a signal (with
// the signal's name) or timed out, and what it wrote to stderr.
//
// Users: pd-walk (its walks and the replays of its reductions), the
// evaluator (each compiled kernel runs in a child) and pd-gpu-run (each
// package runs in a child). The supervisor is plain C++17 and POSIX, no
// LLVM: pd-gpu-run, built without LLVM on GPU machines, compiles this
// library's ChildProcess.cpp into itself.
//
// Fork only from a process with no other running threads that the child
// needs (disable the MLIRContext's thread pool first).
//
//===----------------------------------------------------------------------===//

#ifndef PERFDOJO_SUPPORT_CHILDPROCESS_H
#define PERFDOJO_SUPPORT_CHILDPROCESS_H

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <sys/types.h>
#include <utility>
#include <vector>

namespace mlir {
namespace perfdojo {

/// How a child process ended.
struct ChildStatus {
  enum class Kind {
    /// It exited by itself with `exitCode`.
    Exited,
    /// A signal (`signal`) ended it: a crash, an abort.
    Signalled,
    /// The parent killed it (SIGKILL) past its time limit.
    TimedOut,
    /// The parent could not wait for it (`error` says why).
    Lost,
  };
  Kind kind = Kind::Exited;
  int exitCode = 0;
  int signal = 0;
  std::string error;

  /// Whether it exited by itself with code 0.
  bool succeeded() const { return kind == Kind::Exited && exitCode == 0; }
  /// "" for exit status 0, "exit status 3", "killed by signal 6 (Aborted)",
  /// "timed out: killed by signal 9 (Killed)", "lost the child: ...".
  std::string describe() const;
};

/// "killed by signal 11 (Segmentation fault)".
std::string describeSignal(int signal);

/// How to start a child.
struct ChildOptions {
  /// Send the child's stderr to a temporary file that getStderr reads back
  /// (else it shares the parent's).
  bool captureStderr = false;
  /// The child's address space limit (RLIMIT_AS) in bytes; 0: unlimited.
  /// An allocation past it fails in the child, not in the tool.
  uint64_t memoryLimitBytes = 0;
  /// Restore the default action of the crash signals (SIGSEGV, SIGBUS,
  /// SIGFPE, SIGILL, SIGABRT, SIGTRAP) in the child, so that it dies
  /// quietly: the parent reports the signal, and the tool's handlers would
  /// print a stack trace of the child's code.
  bool defaultCrashSignals = false;
  /// Kill the child when the parent dies (Linux; elsewhere ignored).
  bool dieWithParent = false;
  /// Environment variables set in the child.
  std::vector<std::pair<std::string, std::string>> environment;
  /// Flushes the parent's buffered streams other than stdio's (say,
  /// llvm::outs()): called before the fork, so that nothing buffered is
  /// written twice, and in the child after a callable returns. stdio is
  /// always flushed.
  std::function<void()> flush;
};

/// The child's end of the pipe.
class ChildChannel {
public:
  explicit ChildChannel(int fd) : fd(fd) {}
  /// Sends one line (`line` must not hold a newline; see escapeField).
  /// Blocks while the pipe is full.
  void send(std::string_view line);
  /// Sends `size` bytes as they are. A child whose parent is gone exits
  /// (status 125).
  void write(const void *data, size_t size);
  /// The pipe's write end, for code that writes to a file descriptor.
  int getFD() const { return fd; }

private:
  int fd;
};

/// A child process and the parent's end of its pipe. Destroying it kills a
/// child not waited for.
class ChildProcess {
public:
  /// Forks. The child runs `body`, flushes its streams and exits with
  /// body's result, never returning (a body may also _exit itself). Returns
  /// null, with `error` set, if the pipe, the file or the fork cannot be
  /// made.
  static std::unique_ptr<ChildProcess>
  start(const std::function<int(ChildChannel &)> &body,
        const ChildOptions &options, std::string &error);
  /// Runs the command `argv` (found on PATH) in a child whose stdout is the
  /// pipe. A command that cannot be run exits with status 127.
  static std::unique_ptr<ChildProcess>
  startCommand(const std::vector<std::string> &argv,
               const ChildOptions &options, std::string &error);
  ~ChildProcess();
  ChildProcess(const ChildProcess &) = delete;
  ChildProcess &operator=(const ChildProcess &) = delete;

  pid_t getPid() const { return pid; }
  /// The pipe's read end, for poll().
  int getFD() const { return fd; }

  /// Appends the complete lines that can be read without blocking (call it
  /// after poll() reported the pipe readable). Returns false once the child
  /// has closed its end and every line was returned.
  bool readAvailable(std::vector<std::string> &lines);
  /// Waits up to `timeoutSeconds` for the next line. Returns 1 with a line,
  /// 0 at the end of the stream, -1 on timeout.
  int readLine(std::string &line, double timeoutSeconds);
  /// Reads until the child closes its end or `timeoutSeconds` pass (0: no
  /// limit); returns false on timeout. `output` gets everything read.
  bool readAll(std::string &output, double timeoutSeconds = 0);

  /// Kills the child (SIGKILL) if it still runs, for running past its time
  /// limit: wait() then reports TimedOut.
  void kill();
  /// Waits for the child to end (once) and says how.
  const ChildStatus &wait();
  /// Waits at most `timeoutSeconds` for the child to end, polling more
  /// and more slowly (from 50 us to 10 ms, so that a short run is seen at
  /// once); past the limit kills it. A child's pipe may be held open by
  /// other children, so this waits on the process itself.
  const ChildStatus &waitFor(double timeoutSeconds);

  /// The first `maxBytes` the child wrote to stderr (with captureStderr).
  std::string getStderr(size_t maxBytes) const;

private:
  ChildProcess() = default;
  /// Forks a child set up as `options` say that runs `inChild` with the
  /// pipe's write end; `inChild` must not return.
  static std::unique_ptr<ChildProcess>
  forkChild(const ChildOptions &options,
            const std::function<void(int)> &inChild, std::string &error);
  /// Reads what the pipe holds into `pending`; sets `ended` at its end.
  void fill();
  /// Records how the child ended from waitpid's `waitStatus`.
  void setStatus(int waitStatus);

  pid_t pid = -1;
  int fd = -1;
  int stderrFD = -1;
  bool waited = false;
  bool killed = false;
  ChildStatus status;
  std::string pending;
  bool ended = false;
};

/// Everything a one-shot child did.
struct ChildRunResult {
  ChildStatus status;
  /// What it sent over its channel (a command: its stdout).
  std::string output;
  /// What it wrote to stderr (with captureStderr).
  std::string stderrText;
  /// Why it could not be started (then `status` means nothing).
  std::string startError;
};

/// Runs `body` in a child, collecting what it sends, and kills it if it
/// has not ended after `timeoutSeconds` (0: no limit).
ChildRunResult runInChild(const std::function<int(ChildChannel &)> &body,
                          const ChildOptions &options, double timeoutSeconds);
/// The same for a command (see ChildProcess::startCommand).
ChildRunResult runCommand(const std::vector<std::string> &argv,
                          const ChildOptions &options, double timeoutSeconds);

/// Anonymous memory, unmapped on destruction: shared with the children
/// forked after it is made (MAP_SHARED: where a child leaves results too
/// large for the pipe), or private (copied on write into the child, and
/// eligible for transparent huge pages, as a real program's memory).
class SharedMemory {
public:
  explicit SharedMemory(size_t bytes, bool shared = true);
  ~SharedMemory();
  SharedMemory(const SharedMemory &) = delete;
  SharedMemory &operator=(const SharedMemory &) = delete;
  /// Null when the mapping failed.
  char *getData() const { return data; }
  size_t getSize() const { return size; }

private:
  char *data = nullptr;
  size_t size = 0;
};

/// Escapes backslashes, tabs and newlines so that a string fits in one
/// tab-separated field of a line, and back.
std::string escapeField(std::string_view text);
std::string unescapeField(std::string_view text);

} // namespace perfdojo
} // namespace mlir

#endif // PERFDOJO_SUPPORT_CHILDPROCESS_H
