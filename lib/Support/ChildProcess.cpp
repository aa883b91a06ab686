//===- ChildProcess.cpp - Work in a forked child that reports by lines ----===//

#include "PerfDojo/Support/ChildProcess.h"
#include "llvm/Support/raw_ostream.h"
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace mlir;
using namespace mlir::perfdojo;

void ChildChannel::send(llvm::StringRef line) {
  std::string text = line.str() + "\n";
  const char *p = text.data();
  size_t left = text.size();
  while (left) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      _exit(125); // The parent is gone.
    p += n;
    left -= n;
  }
}

std::unique_ptr<ChildProcess>
ChildProcess::start(llvm::function_ref<int(ChildChannel &)> body,
                    std::string &error) {
  int fds[2];
  if (pipe(fds) != 0) {
    error = std::string("cannot create a pipe: ") + std::strerror(errno);
    return nullptr;
  }
  char path[] = "/tmp/perfdojo-child-stderr-XXXXXX";
  int errFD = mkstemp(path);
  if (errFD < 0) {
    error = std::string("cannot create a temporary file: ") +
            std::strerror(errno);
    close(fds[0]);
    close(fds[1]);
    return nullptr;
  }
  unlink(path);
  llvm::outs().flush();
  llvm::errs().flush();
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid < 0) {
    error = std::string("cannot fork: ") + std::strerror(errno);
    close(fds[0]);
    close(fds[1]);
    close(errFD);
    return nullptr;
  }
  if (pid == 0) {
    close(fds[0]);
    dup2(errFD, STDERR_FILENO);
    close(errFD);
    // A crash report without symbols: symbolizing would start a process
    // per crash.
    setenv("LLVM_DISABLE_SYMBOLIZATION", "1", 1);
    ChildChannel channel(fds[1]);
    int status = body(channel);
    llvm::outs().flush();
    llvm::errs().flush();
    std::fflush(nullptr);
    _exit(status);
  }
  close(fds[1]);
  std::unique_ptr<ChildProcess> child(new ChildProcess());
  child->pid = pid;
  child->fd = fds[0];
  child->stderrFD = errFD;
  return child;
}

ChildProcess::~ChildProcess() {
  if (!waited) {
    kill();
    wait();
  }
  if (fd >= 0)
    close(fd);
  if (stderrFD >= 0)
    close(stderrFD);
}

void ChildProcess::fill() {
  char buffer[65536];
  ssize_t n;
  do
    n = ::read(fd, buffer, sizeof(buffer));
  while (n < 0 && errno == EINTR);
  if (n <= 0)
    ended = true;
  else
    pending.append(buffer, n);
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
  auto start = std::chrono::steady_clock::now();
  while (true) {
    size_t end = pending.find('\n');
    if (end != std::string::npos) {
      line = pending.substr(0, end);
      pending.erase(0, end + 1);
      return 1;
    }
    if (ended)
      return 0;
    double left = timeoutSeconds -
                  std::chrono::duration<double>(
                      std::chrono::steady_clock::now() - start)
                      .count();
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

void ChildProcess::kill() {
  if (!waited && pid > 0)
    ::kill(pid, SIGKILL);
}

std::string ChildProcess::wait() {
  if (waited)
    return exitDescription;
  int status = 0;
  pid_t r;
  do
    r = waitpid(pid, &status, 0);
  while (r < 0 && errno == EINTR);
  waited = true;
  if (r < 0)
    exitDescription = std::string("lost the child: ") + std::strerror(errno);
  else if (WIFSIGNALED(status))
    exitDescription = "killed by signal " + std::to_string(WTERMSIG(status)) +
                      " (" + strsignal(WTERMSIG(status)) + ")";
  else if (WIFEXITED(status) && WEXITSTATUS(status) != 0)
    exitDescription = "exit status " + std::to_string(WEXITSTATUS(status));
  return exitDescription;
}

std::string ChildProcess::getStderr(size_t maxBytes) const {
  std::string text(maxBytes, '\0');
  ssize_t n = pread(stderrFD, text.data(), maxBytes, 0);
  text.resize(n > 0 ? n : 0);
  return text;
}

std::string mlir::perfdojo::escapeField(llvm::StringRef text) {
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

std::string mlir::perfdojo::unescapeField(llvm::StringRef text) {
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
