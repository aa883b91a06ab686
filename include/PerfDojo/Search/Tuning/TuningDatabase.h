//===- TuningDatabase.h - Persistent record of evaluated variants -*- C++ -*-===//
//
// Every variant a tuning run evaluates, in an SQLite file: keyed by the
// canonical text of the kernel it started from, the target (CPU, features,
// thread count) and the toolchain, each variant by the hash of its own
// canonical text, with the moves that reach it, its status or failure
// reason and its time. Every record is its own transaction in a
// write-ahead-logged database, so a run killed at any moment (kill -9)
// leaves every completed record and nothing half-written; the next run
// reads them back instead of measuring again.
//
//===----------------------------------------------------------------------===//

#ifndef PERFDOJO_SEARCH_TUNING_TUNINGDATABASE_H
#define PERFDOJO_SEARCH_TUNING_TUNINGDATABASE_H

#include "mlir/Support/LLVM.h"
#include "llvm/ADT/StringRef.h"
#include <memory>
#include <optional>
#include <string>
#include <vector>

struct sqlite3;
struct sqlite3_stmt;

namespace mlir {
namespace perfdojo {

/// What a tuning run is about: one starting kernel on one target with one
/// toolchain. Times from different keys are never compared.
struct TuningKey {
  /// Canonical text of the starting kernel.
  std::string kernelText;
  /// CPU name, features and thread count (see getHostTarget).
  std::string target;
  /// LLVM version and PerfDojo's lowering version.
  std::string toolchain;
};

/// One evaluated variant.
struct VariantRecord {
  /// Hash of the variant's canonical text, as 16 hex digits.
  std::string hash;
  /// The moves from the starting kernel, comma-separated.
  std::string moves;
  /// "ok", or the failure status (compile-error, crash, timeout,
  /// wrong-answer).
  std::string status;
  std::string reason;
  /// Median seconds per run (status ok).
  double seconds = 0;
  double compileSeconds = 0;
  double maxError = 0;
};

class TuningDatabase {
public:
  ~TuningDatabase();
  TuningDatabase(const TuningDatabase &) = delete;
  TuningDatabase &operator=(const TuningDatabase &) = delete;

  /// Opens (creating if needed) the database at `path`; on failure returns
  /// null and sets `error`.
  static std::unique_ptr<TuningDatabase> open(StringRef path,
                                              std::string &error);

  /// Selects the key that later calls use, creating it if new.
  LogicalResult setKey(const TuningKey &key, std::string &error);

  /// The record of variant `hash` under the current key, if any.
  std::optional<VariantRecord> lookup(StringRef hash);
  /// Adds (or replaces) the record of one variant: one transaction.
  LogicalResult record(const VariantRecord &variant, std::string &error);
  /// Every record under the current key, in the order they were made.
  std::vector<VariantRecord> getVariants();
  /// The fastest variant with status ok under the current key.
  std::optional<VariantRecord> getBest();

  StringRef getPath() const { return path; }

private:
  TuningDatabase() = default;
  LogicalResult exec(StringRef sql, std::string &error);
  std::string lastError() const;
  VariantRecord readRow(sqlite3_stmt *statement) const;

  sqlite3 *db = nullptr;
  std::string path;
  int64_t keyId = -1;
};

/// This machine as a tuning target: CPU name, the features it reports, and
/// `threads`.
std::string getHostTarget(unsigned threads);
/// The toolchain a variant's time depends on.
std::string getToolchain();
/// The database pd-tune uses by default: tuning.db beside the machine
/// cache (see getMachineCachePath), whose folder is created if needed.
std::string getDefaultTuningDatabasePath();

} // namespace perfdojo
} // namespace mlir

#endif // PERFDOJO_SEARCH_TUNING_TUNINGDATABASE_H
