//===- ChildProcessTest.cpp - Forked children reporting by lines ----------===//

#include "PerfDojo/Support/ChildProcess.h"
#include "gtest/gtest.h"
#include <cstdio>
#include <cstdlib>
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
      error);
  ASSERT_TRUE(child) << error;
  std::string line;
  ASSERT_EQ(child->readLine(line, 60), 1);
  EXPECT_EQ(line, "one");
  ASSERT_EQ(child->readLine(line, 60), 1);
  EXPECT_EQ(line, "two\tfields");
  EXPECT_EQ(child->readLine(line, 60), 0);
  EXPECT_EQ(child->wait(), "exit status 3");
}

// A crash is an answer: the signal, and what the child wrote to stderr.
TEST(ChildProcess, ReportsACrashWithItsLastWords) {
  std::string error;
  std::unique_ptr<ChildProcess> child = ChildProcess::start(
      [](ChildChannel &c) {
        c.send("before");
        std::fprintf(stderr, "about to abort\n");
        std::fflush(stderr);
        std::abort();
        return 0;
      },
      error);
  ASSERT_TRUE(child) << error;
  std::vector<std::string> lines;
  while (child->readAvailable(lines)) {
  }
  EXPECT_EQ(lines, std::vector<std::string>{"before"});
  EXPECT_EQ(child->wait(), "killed by signal 6 (Aborted)");
  EXPECT_EQ(child->getStderr(1000).substr(0, 15), "about to abort\n");
}

// A silent child times out and can be killed.
TEST(ChildProcess, TimesOutAndKills) {
  std::string error;
  std::unique_ptr<ChildProcess> child = ChildProcess::start(
      [](ChildChannel &) {
        sleep(60);
        return 0;
      },
      error);
  ASSERT_TRUE(child) << error;
  std::string line;
  EXPECT_EQ(child->readLine(line, 0.05), -1);
  child->kill();
  EXPECT_EQ(child->wait(), "killed by signal 9 (Killed)");
}

TEST(ChildProcess, EscapesFields) {
  std::string text = "a\tb\nc\\d\\n";
  std::string escaped = escapeField(text);
  EXPECT_EQ(escaped.find_first_of("\t\n"), std::string::npos);
  EXPECT_EQ(unescapeField(escaped), text);
}
