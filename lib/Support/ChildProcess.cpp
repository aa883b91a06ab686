//===- ChildProcess.cpp - Work supervised in a child process --------------===//
//
// Plain C++17 and POSIX, no LLVM: pd-gpu-run compiles this file too (see
// ChildProcess.h).
//
//===----------------------------------------------------------------------===//

#include "PerfDojo/Support/ChildProcess.h"
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

using namespace mlir::perfdojo;

using Clock = std::chrono::steady_clock;

static double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

static std::string describeError(const char *what) {
  return std::string(what) + ": " + std::strerror(errno);
}

//===----------------------------------------------------------------------===//
// ChildStatus
//===----------------------------------------------------------------------===//

std::string mlir::perfdojo::describeSignal(int signal) {
  const char *name = strsignal(signal);
  return "killed by signal " + std::to_string(signal) + " (" +
         (name ? name : "unknown") + ")";
}

std::string ChildStatus::describe() const {
  switch (kind) {
  case Kind::Exited:
    return exitCode ? "exit status " + std::to_string(exitCode) : "";
  case Kind::Signalled:
    return describeSignal(signal);
  case Kind::TimedOut:
    return "timed out: " + describeSignal(signal);
  case Kind::Lost:
    return "lost the child: " + error;
  }
  return "";
}

//===----------------------------------------------------------------------===//
// The child's side
//===----------------------------------------------------------------------===//

void ChildChannel::write(const void *data, size_t size) {
  const char *p = static_cast<const char *>(data);
  while (size) {
    ssize_t n = ::write(fd, p, size);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      _exit(125); // The parent is gone.
    p += n;
    size -= size_t(n);
  }
}

void ChildChannel::send(std::string_view line) {
  std::string text(line);
  text += '\n';
  write(text.data(), text.size());
}

/// Sets the child up as `options` say, in the child.
static void setUpChild(const ChildOptions &options, pid_t parent,
                       int stderrFD) {
#ifdef __linux__
  if (options.dieWithParent) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    // The parent may have died before the request.
    if (getppid() != parent)
      _exit(1);
  }
#endif
  (void)parent;
  if (stderrFD >= 0) {
    dup2(stderrFD, STDERR_FILENO);
    close(stderrFD);
  }
  for (const auto &[name, value] : options.environment)
    setenv(name.c_str(), value.c_str(), 1);
  if (options.memoryLimitBytes) {
    struct rlimit limit;
    limit.rlim_cur = limit.rlim_max = rlim_t(options.memoryLimitBytes);
    setrlimit(RLIMIT_AS, &limit);
  }
  if (options.defaultCrashSignals)
    for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP}) {
      struct sigaction action = {};
      action.sa_handler = SIG_DFL;
      sigaction(sig, &action, nullptr);
    }
}

//===----------------------------------------------------------------------===//
// Starting
//===----------------------------------------------------------------------===//

std::unique_ptr<ChildProcess>
ChildProcess::forkChild(const ChildOptions &options,
                        const std::function<void(int)> &inChild,
                        std::string &error) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    error = describeError("cannot create a pipe");
    return nullptr;
  }
  int errFD = -1;
  if (options.captureStderr) {
    char path[] = "/tmp/perfdojo-child-stderr-XXXXXX";
    errFD = mkstemp(path);
    if (errFD < 0) {
      error = describeError("cannot create a temporary file");
      close(fds[0]);
      close(fds[1]);
      return nullptr;
    }
    unlink(path);
  }
  // Nothing buffered may be written twice.
  if (options.flush)
    options.flush();
  std::fflush(nullptr);
  pid_t parent = getpid();
  pid_t forked = fork();
  if (forked < 0) {
    error = describeError("cannot start a child process");
    close(fds[0]);
    close(fds[1]);
    if (errFD >= 0)
      close(errFD);
    return nullptr;
  }
  if (forked == 0) {
    close(fds[0]);
    setUpChild(options, parent, errFD);
    inChild(fds[1]);
    _exit(127); // inChild does not return.
  }
  close(fds[1]);
  std::unique_ptr<ChildProcess> child(new ChildProcess());
  child->pid = forked;
  child->fd = fds[0];
  child->stderrFD = errFD;
  return child;
}

std::unique_ptr<ChildProcess>
ChildProcess::start(const std::function<int(ChildChannel &)> &body,
                    const ChildOptions &options, std::string &error) {
  return forkChild(
      options,
      [&](int fd) {
        ChildChannel channel(fd);
        int result = body(channel);
        if (options.flush)
          options.flush();
        std::fflush(nullptr);
        _exit(result);
      },
      error);
}

std::unique_ptr<ChildProcess>
ChildProcess::startCommand(const std::vector<std::string> &argv,
                           const ChildOptions &options, std::string &error) {
  if (argv.empty()) {
    error = "no command to run";
    return nullptr;
  }
  // Made before the fork: the child only calls async-signal-safe functions.
  std::vector<char *> args;
  for (const std::string &arg : argv)
    args.push_back(const_cast<char *>(arg.c_str()));
  args.push_back(nullptr);
  return forkChild(
      options,
      [&](int fd) {
        dup2(fd, STDOUT_FILENO);
        execvp(args[0], args.data());
        _exit(127);
      },
      error);
}

ChildProcess::~ChildProcess() {
  if (!waited) {
    if (pid > 0)
      ::kill(pid, SIGKILL);
    wait();
  }
  if (fd >= 0)
    close(fd);
  if (stderrFD >= 0)
    close(stderrFD);
}

//===----------------------------------------------------------------------===//
// Following
//===----------------------------------------------------------------------===//

void ChildProcess::fill() {
  char buffer[65536];
  ssize_t n;
  do
    n = ::read(fd, buffer, sizeof(buffer));
  while (n < 0 && errno == EINTR);
  if (n <= 0)
    ended = true;
  else
    pending.append(buffer, size_t(n));
}

bool ChildProcess::readAvailable(std::vector<std::string> &lines) {
  fill();
  size_t start = 0, end;
  while ((end = pending.find('\n', start)) != std::string::npos) {
    lines.push_back(pending.substr(start, end - start));
    start = end + 1;
  }
  pending.erase(0, start);
  return !ended;
}

int ChildProcess::readLine(std::string &line, double timeoutSeconds) {
  auto start = Clock::now();
  while (true) {
    size_t end = pending.find('\n');
    if (end != std::string::npos) {
      line = pending.substr(0, end);
      pending.erase(0, end + 1);
      return 1;
    }
    if (ended)
      return 0;
    double left = timeoutSeconds - secondsSince(start);
    if (left <= 0)
      return -1;
    struct pollfd p = {fd, POLLIN, 0};
    int r = poll(&p, 1, int(std::min(left, 3600.0) * 1000) + 1);
    if (r < 0 && errno != EINTR)
      return 0;
    if (r > 0)
      fill();
  }
}

bool ChildProcess::readAll(std::string &output, double timeoutSeconds) {
  auto start = Clock::now();
  while (!ended) {
    double left =
        timeoutSeconds > 0 ? timeoutSeconds - secondsSince(start) : 3600.0;
    if (left <= 0)
      break;
    struct pollfd p = {fd, POLLIN, 0};
    int r = poll(&p, 1, int(std::min(left, 3600.0) * 1000) + 1);
    if (r < 0 && errno != EINTR)
      break;
    if (r > 0)
      fill();
  }
  output += pending;
  pending.clear();
  return ended;
}

void ChildProcess::kill() {
  if (!waited && pid > 0) {
    ::kill(pid, SIGKILL);
    killed = true;
  }
}

void ChildProcess::setStatus(int waitStatus) {
  waited = true;
  if (WIFSIGNALED(waitStatus)) {
    status.signal = WTERMSIG(waitStatus);
    status.kind = killed && status.signal == SIGKILL
                      ? ChildStatus::Kind::TimedOut
                      : ChildStatus::Kind::Signalled;
  } else {
    status.kind = ChildStatus::Kind::Exited;
    status.exitCode = WIFEXITED(waitStatus) ? WEXITSTATUS(waitStatus) : -1;
  }
}

const ChildStatus &ChildProcess::wait() {
  if (waited)
    return status;
  int waitStatus = 0;
  pid_t r;
  do
    r = waitpid(pid, &waitStatus, 0);
  while (r < 0 && errno == EINTR);
  if (r < 0) {
    waited = true;
    status.kind = ChildStatus::Kind::Lost;
    status.error = std::strerror(errno);
    return status;
  }
  setStatus(waitStatus);
  return status;
}

const ChildStatus &ChildProcess::waitFor(double timeoutSeconds) {
  if (waited)
    return status;
  auto start = Clock::now();
  while (true) {
    int waitStatus = 0;
    pid_t r = waitpid(pid, &waitStatus, WNOHANG);
    if (r == pid) {
      setStatus(waitStatus);
      return status;
    }
    if (r < 0 && errno != EINTR) {
      waited = true;
      status.kind = ChildStatus::Kind::Lost;
      status.error = std::strerror(errno);
      return status;
    }
    double elapsed = secondsSince(start);
    if (elapsed > timeoutSeconds) {
      kill();
      return wait();
    }
    struct timespec pause = {0, elapsed < 0.01 ? 50000
                                : elapsed < 1  ? 1000000
                                               : 10000000};
    nanosleep(&pause, nullptr);
  }
}

std::string ChildProcess::getStderr(size_t maxBytes) const {
  if (stderrFD < 0)
    return "";
  std::string text(maxBytes, '\0');
  ssize_t n = pread(stderrFD, text.data(), maxBytes, 0);
  text.resize(n > 0 ? size_t(n) : 0);
  return text;
}

//===----------------------------------------------------------------------===//
// One-shot children
//===----------------------------------------------------------------------===//

/// Collects everything `child` (null: not started) does within the limit.
static ChildRunResult collect(std::unique_ptr<ChildProcess> child,
                              std::string startError, double timeoutSeconds) {
  ChildRunResult result;
  if (!child) {
    result.startError = std::move(startError);
    return result;
  }
  auto start = Clock::now();
  if (!child->readAll(result.output, timeoutSeconds))
    child->kill();
  // The pipe may close before the child ends: wait out the rest.
  double left = timeoutSeconds > 0
                    ? std::max(0.0, timeoutSeconds - secondsSince(start))
                    : 1e9;
  result.status = child->waitFor(left);
  result.stderrText = child->getStderr(1 << 20);
  return result;
}

ChildRunResult
mlir::perfdojo::runInChild(const std::function<int(ChildChannel &)> &body,
                           const ChildOptions &options, double timeoutSeconds) {
  std::string error;
  std::unique_ptr<ChildProcess> child =
      ChildProcess::start(body, options, error);
  return collect(std::move(child), error, timeoutSeconds);
}

ChildRunResult mlir::perfdojo::runCommand(const std::vector<std::string> &argv,
                                          const ChildOptions &options,
                                          double timeoutSeconds) {
  std::string error;
  std::unique_ptr<ChildProcess> child =
      ChildProcess::startCommand(argv, options, error);
  return collect(std::move(child), error, timeoutSeconds);
}

//===----------------------------------------------------------------------===//
// Shared memory and fields
//===----------------------------------------------------------------------===//

SharedMemory::SharedMemory(size_t bytes, bool shared)
    : size(std::max<size_t>(bytes, 1)) {
  void *p = mmap(nullptr, size, PROT_READ | PROT_WRITE,
                 (shared ? MAP_SHARED : MAP_PRIVATE) | MAP_ANONYMOUS, -1, 0);
  data = p == MAP_FAILED ? nullptr : static_cast<char *>(p);
#ifdef MADV_HUGEPAGE
  if (data && !shared)
    madvise(data, size, MADV_HUGEPAGE);
#endif
}

SharedMemory::~SharedMemory() {
  if (data)
    munmap(data, size);
}

std::string mlir::perfdojo::escapeField(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '\n')
      out += "\\n";
    else if (c == '\t')
      out += "\\t";
    else
      out += c;
  }
  return out;
}

std::string mlir::perfdojo::unescapeField(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\\' || i + 1 == text.size()) {
      out += text[i];
      continue;
    }
    char c = text[++i];
    out += c == 'n' ? '\n' : c == 't' ? '\t' : c;
  }
  return out;
}
