//===- ChildProcessTest.cpp - The supervisor of child processes -----------===//

#include "PerfDojo/Support/ChildProcess.h"
#include "gtest/gtest.h"
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

using namespace mlir;
using namespace mlir::perfdojo;

// Lines arrive in order; the exit status is described.
TEST(ChildProcess, ReportsLinesAndExitStatus) {
  std::string error;
  std::unique_ptr<ChildProcess> child = ChildProcess::start(
      [](ChildChannel &c) {
        c.send("one");
        c.send("two\tfields");
        return 3;
      },
      ChildOptions(), error);
  ASSERT_TRUE(child) << error;
  std::string line;
  ASSERT_EQ(child->readLine(line, 60), 1);
  EXPECT_EQ(line, "one");
  ASSERT_EQ(child->readLine(line, 60), 1);
  EXPECT_EQ(line, "two\tfields");
  EXPECT_EQ(child->readLine(line, 60), 0);
  const ChildStatus &status = child->wait();
  EXPECT_EQ(status.kind, ChildStatus::Kind::Exited);
  EXPECT_EQ(status.exitCode, 3);
  EXPECT_FALSE(status.succeeded());
  EXPECT_EQ(status.describe(), "exit status 3");
}

// A crash is an answer: the signal, and what the child wrote to stderr.
TEST(ChildProcess, ReportsACrashWithItsLastWords) {
  ChildOptions options;
  options.captureStderr = true;
  std::string error;
  std::unique_ptr<ChildProcess> child = ChildProcess::start(
      [](ChildChannel &c) {
        c.send("before");
        std::fprintf(stderr, "about to abort\n");
        std::fflush(stderr);
        std::abort();
        return 0;
      },
      options, error);
  ASSERT_TRUE(child) << error;
  std::vector<std::string> lines;
  while (child->readAvailable(lines)) {
  }
  EXPECT_EQ(lines, std::vector<std::string>{"before"});
  const ChildStatus &status = child->wait();
  EXPECT_EQ(status.kind, ChildStatus::Kind::Signalled);
  EXPECT_EQ(status.signal, SIGABRT);
  EXPECT_EQ(status.describe(), "killed by signal 6 (Aborted)");
  EXPECT_EQ(child->getStderr(1000).substr(0, 15), "about to abort\n");
}

// A silent child times out and is killed: the status says so.
TEST(ChildProcess, TimesOutAndKills) {
  std::string error;
  std::unique_ptr<ChildProcess> child = ChildProcess::start(
      [](ChildChannel &) {
        sleep(60);
        return 0;
      },
      ChildOptions(), error);
  ASSERT_TRUE(child) << error;
  std::string line;
  EXPECT_EQ(child->readLine(line, 0.05), -1);
  child->kill();
  const ChildStatus &status = child->wait();
  EXPECT_EQ(status.kind, ChildStatus::Kind::TimedOut);
  EXPECT_EQ(status.describe(), "timed out: killed by signal 9 (Killed)");
}

// waitFor waits on the process, not its pipe, and kills it past the limit.
TEST(ChildProcess, WaitForKillsPastTheLimit) {
  std::string error;
  std::unique_ptr<ChildProcess> fast = ChildProcess::start(
      [](ChildChannel &) { return 0; }, ChildOptions(), error);
  ASSERT_TRUE(fast) << error;
  EXPECT_TRUE(fast->waitFor(60).succeeded());
  std::unique_ptr<ChildProcess> slow = ChildProcess::start(
      [](ChildChannel &) {
        sleep(60);
        return 0;
      },
      ChildOptions(), error);
  ASSERT_TRUE(slow) << error;
  EXPECT_EQ(slow->waitFor(0.05).kind, ChildStatus::Kind::TimedOut);
}

// The default crash signals: a child's own handler is not run.
TEST(ChildProcess, RestoresTheDefaultCrashSignals) {
  signal(SIGFPE, [](int) { _exit(42); });
  ChildOptions options;
  options.defaultCrashSignals = true;
  ChildRunResult result = runInChild(
      [](ChildChannel &) {
        raise(SIGFPE);
        return 0;
      },
      options, 60);
  signal(SIGFPE, SIG_DFL);
  ASSERT_TRUE(result.startError.empty()) << result.startError;
  EXPECT_EQ(result.status.kind, ChildStatus::Kind::Signalled);
  EXPECT_EQ(result.status.signal, SIGFPE);
}

// A one-shot child: its bytes, its environment, its time limit.
TEST(ChildProcess, RunsACallableOnce) {
  ChildOptions options;
  options.environment = {{"PERFDOJO_CHILD_TEST", "set"}};
  ChildRunResult result = runInChild(
      [](ChildChannel &c) {
        const char *value = getenv("PERFDOJO_CHILD_TEST");
        std::string bytes = std::string(value ? value : "unset") + '\0' + "!";
        c.write(bytes.data(), bytes.size());
        return 0;
      },
      options, 60);
  ASSERT_TRUE(result.startError.empty()) << result.startError;
  EXPECT_TRUE(result.status.succeeded());
  EXPECT_EQ(result.output, std::string("set\0!", 5));

  ChildRunResult hung = runInChild(
      [](ChildChannel &) {
        sleep(60);
        return 0;
      },
      ChildOptions(), 0.05);
  EXPECT_EQ(hung.status.kind, ChildStatus::Kind::TimedOut);
}

// An allocation past the memory limit fails in the child.
TEST(ChildProcess, LimitsTheChildsMemory) {
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
  GTEST_SKIP() << "AddressSanitizer reserves more address space than a limit";
#endif
#endif
  ChildOptions options;
  options.memoryLimitBytes = uint64_t(1) << 30;
  ChildRunResult result = runInChild(
      [](ChildChannel &) {
        // volatile: the compiler may not assume that malloc succeeds.
        void *volatile p = std::malloc(size_t(4) << 30);
        return p ? 0 : 7;
      },
      options, 60);
  EXPECT_EQ(result.status.kind, ChildStatus::Kind::Exited);
  EXPECT_EQ(result.status.exitCode, 7);
}

// A command: its stdout, its exit status; one that does not exist.
TEST(ChildProcess, RunsACommand) {
  ChildRunResult result =
      runCommand({"sh", "-c", "echo hello; exit 2"}, ChildOptions(), 60);
  ASSERT_TRUE(result.startError.empty()) << result.startError;
  EXPECT_EQ(result.output, "hello\n");
  EXPECT_EQ(result.status.describe(), "exit status 2");
  ChildRunResult missing =
      runCommand({"perfdojo-no-such-command"}, ChildOptions(), 60);
  EXPECT_EQ(missing.status.exitCode, 127);
}

// Memory shared with a child carries its results back.
TEST(ChildProcess, SharesMemory) {
  SharedMemory memory(16);
  ASSERT_TRUE(memory.getData());
  ChildRunResult result = runInChild(
      [&](ChildChannel &) {
        std::strcpy(memory.getData(), "from the child");
        return 0;
      },
      ChildOptions(), 60);
  EXPECT_TRUE(result.status.succeeded());
  EXPECT_STREQ(memory.getData(), "from the child");
}

TEST(ChildProcess, EscapesFields) {
  std::string text = "a\tb\nc\\d\\n";
  std::string escaped = escapeField(text);
  EXPECT_EQ(escaped.find_first_of("\t\n"), std::string::npos);
  EXPECT_EQ(unescapeField(escaped), text);
}
