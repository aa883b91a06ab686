//===- TuningDatabase.cpp - Persistent record of evaluated variants -------===//

#include "PerfDojo/Search/Tuning/TuningDatabase.h"
#include "PerfDojo/Search/Evaluator/Machine.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/TargetParser/Host.h"
#include <sqlite3.h>

using namespace mlir;
using namespace mlir::perfdojo;

/// Bumped whenever the lowering changes what code a kernel compiles to, so
/// that times measured with an older lowering are not reused. 2: fused
/// multiply-adds (fp-contract), streaming stores of whole lines only,
/// register tiles sharing accumulators (2026-11-22). 3: vector partials of
/// reductions beside other children of their loop, streaming stores into
/// large temporaries (2026-11-27). 4: kernels for AMD Zen 4 scheduled by
/// LLVM's generic model (getKernelTuneCPU, 2026-12-01). 5: the CPU
/// lowering prefetches the next row of passes over rows (prefetchNextRow,
/// 2026-12-01). 6: exp on AVX-512 in 14 instructions (a float exponent for
/// vscalefps, Horner's order), floating-point max and min with nsz
/// (2026-12-02). 7: a division by an element that a loop shares multiplies
/// by its reciprocal, computed once before the loop (2026-12-02).
static constexpr const char *kLoweringVersion = "7";

namespace {
/// A prepared statement, finalized when it goes out of scope.
class Statement {
public:
  Statement(sqlite3 *db, StringRef sql) {
    if (sqlite3_prepare_v2(db, sql.data(), int(sql.size()), &statement,
                           nullptr) != SQLITE_OK)
      statement = nullptr;
  }
  ~Statement() { sqlite3_finalize(statement); }
  explicit operator bool() const { return statement; }
  sqlite3_stmt *get() { return statement; }
  void bind(int index, StringRef text) {
    sqlite3_bind_text(statement, index, text.data(), int(text.size()),
                      SQLITE_TRANSIENT);
  }
  void bind(int index, double value) {
    sqlite3_bind_double(statement, index, value);
  }
  void bind(int index, int64_t value) {
    sqlite3_bind_int64(statement, index, value);
  }
  int step() { return sqlite3_step(statement); }

private:
  sqlite3_stmt *statement = nullptr;
};

std::string columnText(sqlite3_stmt *statement, int column) {
  const unsigned char *text = sqlite3_column_text(statement, column);
  return text ? std::string(reinterpret_cast<const char *>(text)) : "";
}
} // namespace

TuningDatabase::~TuningDatabase() { sqlite3_close(db); }

std::string TuningDatabase::lastError() const {
  return path + ": " + sqlite3_errmsg(db);
}

LogicalResult TuningDatabase::exec(StringRef sql, std::string &error) {
  char *message = nullptr;
  if (sqlite3_exec(db, sql.str().c_str(), nullptr, nullptr, &message) ==
      SQLITE_OK)
    return success();
  error = path + ": " + (message ? message : "unknown error");
  sqlite3_free(message);
  return failure();
}

std::unique_ptr<TuningDatabase> TuningDatabase::open(StringRef path,
                                                     std::string &error) {
  std::unique_ptr<TuningDatabase> database(new TuningDatabase());
  database->path = path.str();
  if (sqlite3_open_v2(database->path.c_str(), &database->db,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
                      nullptr) != SQLITE_OK) {
    error = database->db ? database->lastError()
                         : database->path + ": cannot open";
    return nullptr;
  }
  // Another run on the same file waits for the lock instead of failing.
  sqlite3_busy_timeout(database->db, 10000);
  // Write-ahead logging: a killed writer leaves only whole transactions.
  if (failed(database->exec("PRAGMA journal_mode=WAL;"
                            "PRAGMA synchronous=NORMAL;"
                            "CREATE TABLE IF NOT EXISTS keys("
                            "  id INTEGER PRIMARY KEY,"
                            "  kernel TEXT NOT NULL, target TEXT NOT NULL,"
                            "  toolchain TEXT NOT NULL,"
                            "  UNIQUE(kernel, target, toolchain));"
                            "CREATE TABLE IF NOT EXISTS variants("
                            "  key INTEGER NOT NULL REFERENCES keys(id),"
                            "  hash TEXT NOT NULL, moves TEXT NOT NULL,"
                            "  status TEXT NOT NULL, reason TEXT NOT NULL,"
                            "  seconds REAL, compile_seconds REAL,"
                            "  max_error REAL,"
                            "  recorded TEXT DEFAULT CURRENT_TIMESTAMP,"
                            "  PRIMARY KEY(key, hash));",
                            error)))
    return nullptr;
  return database;
}

LogicalResult TuningDatabase::setKey(const TuningKey &key,
                                     std::string &error) {
  {
    Statement insert(db, "INSERT OR IGNORE INTO keys(kernel, target, "
                         "toolchain) VALUES(?, ?, ?)");
    if (!insert)
      return error = lastError(), failure();
    insert.bind(1, key.kernelText);
    insert.bind(2, key.target);
    insert.bind(3, key.toolchain);
    if (insert.step() != SQLITE_DONE)
      return error = lastError(), failure();
  }
  Statement select(db, "SELECT id FROM keys WHERE kernel = ? AND target = ? "
                       "AND toolchain = ?");
  if (!select)
    return error = lastError(), failure();
  select.bind(1, key.kernelText);
  select.bind(2, key.target);
  select.bind(3, key.toolchain);
  if (select.step() != SQLITE_ROW)
    return error = lastError(), failure();
  keyId = sqlite3_column_int64(select.get(), 0);
  return success();
}

VariantRecord TuningDatabase::readRow(sqlite3_stmt *statement) const {
  VariantRecord variant;
  variant.hash = columnText(statement, 0);
  variant.moves = columnText(statement, 1);
  variant.status = columnText(statement, 2);
  variant.reason = columnText(statement, 3);
  variant.seconds = sqlite3_column_double(statement, 4);
  variant.compileSeconds = sqlite3_column_double(statement, 5);
  variant.maxError = sqlite3_column_double(statement, 6);
  return variant;
}

static constexpr const char *kColumns =
    "hash, moves, status, reason, seconds, compile_seconds, max_error";

std::optional<VariantRecord> TuningDatabase::lookup(StringRef hash) {
  Statement select(db, std::string("SELECT ") + kColumns +
                           " FROM variants WHERE key = ? AND hash = ?");
  if (!select)
    return std::nullopt;
  select.bind(1, keyId);
  select.bind(2, hash);
  if (select.step() != SQLITE_ROW)
    return std::nullopt;
  return readRow(select.get());
}

LogicalResult TuningDatabase::record(const VariantRecord &variant,
                                     std::string &error) {
  if (keyId < 0)
    return error = path + ": no tuning key selected", failure();
  Statement insert(db, "INSERT OR REPLACE INTO variants(key, hash, moves, "
                       "status, reason, seconds, compile_seconds, max_error) "
                       "VALUES(?, ?, ?, ?, ?, ?, ?, ?)");
  if (!insert)
    return error = lastError(), failure();
  insert.bind(1, keyId);
  insert.bind(2, variant.hash);
  insert.bind(3, variant.moves);
  insert.bind(4, variant.status);
  insert.bind(5, variant.reason);
  insert.bind(6, variant.seconds);
  insert.bind(7, variant.compileSeconds);
  insert.bind(8, variant.maxError);
  if (insert.step() != SQLITE_DONE)
    return error = lastError(), failure();
  return success();
}

std::vector<VariantRecord> TuningDatabase::getVariants() {
  std::vector<VariantRecord> variants;
  Statement select(db, std::string("SELECT ") + kColumns +
                           " FROM variants WHERE key = ? ORDER BY rowid");
  if (!select)
    return variants;
  select.bind(1, keyId);
  while (select.step() == SQLITE_ROW)
    variants.push_back(readRow(select.get()));
  return variants;
}

std::optional<VariantRecord> TuningDatabase::getBest() {
  Statement select(db, std::string("SELECT ") + kColumns +
                           " FROM variants WHERE key = ? AND status = 'ok' "
                           "ORDER BY seconds LIMIT 1");
  if (!select)
    return std::nullopt;
  select.bind(1, keyId);
  if (select.step() != SQLITE_ROW)
    return std::nullopt;
  return readRow(select.get());
}

std::string mlir::perfdojo::getHostTarget(unsigned threads) {
  std::string target = getCPUName() + "; " +
                       llvm::sys::getHostCPUName().str() + ";";
  // The features in a fixed order.
  llvm::StringMap<bool> features = llvm::sys::getHostCPUFeatures();
  SmallVector<StringRef> enabled;
  for (const auto &feature : features)
    if (feature.getValue())
      enabled.push_back(feature.getKey());
  llvm::sort(enabled);
  for (StringRef feature : enabled)
    target += " +" + feature.str();
  return target + "; threads=" + std::to_string(threads);
}

std::string mlir::perfdojo::getToolchain() {
  return std::string("LLVM ") + LLVM_VERSION_STRING + "; lowering " +
         kLoweringVersion;
}

std::string mlir::perfdojo::getDefaultTuningDatabasePath() {
  SmallString<256> path(getMachineCachePath());
  llvm::sys::path::remove_filename(path);
  (void)llvm::sys::fs::create_directories(path);
  llvm::sys::path::append(path, "tuning.db");
  return std::string(path);
}
