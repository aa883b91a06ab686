//===- Move.cpp - Move locations, registry, apply and enumerate -----------===//

#include "PerfDojo/Transforms/Move.h"
#include "PerfDojo/Conversion/TextForm.h"
#include "PerfDojo/Transforms/CheckCache.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/xxhash.h"

using namespace mlir;
using namespace mlir::perfdojo;

Move::~Move() = default;

SmallVector<SmallVector<std::string, 2>>
Move::getParamChoices(const ResolvedLocation &) const {
  return {{}};
}

//===----------------------------------------------------------------------===//
// Registry
//===----------------------------------------------------------------------===//

MoveRegistry &MoveRegistry::get() {
  static MoveRegistry registry;
  return registry;
}

void MoveRegistry::add(std::unique_ptr<Move> move) {
  assert(!lookup(move->getName()) && "move registered twice");
  moves.push_back(std::move(move));
}

const Move *MoveRegistry::lookup(StringRef name) const {
  for (const std::unique_ptr<Move> &move : moves)
    if (move->getName() == name)
      return move.get();
  return nullptr;
}

//===----------------------------------------------------------------------===//
// Locations
//===----------------------------------------------------------------------===//

std::string MoveLocation::str(LocationKind kind) const {
  std::string text = name;
  if ((kind == LocationKind::Scope || kind == LocationKind::Operation) &&
      ordinal)
    text += "#" + std::to_string(ordinal);
  if (kind == LocationKind::Scope || kind == LocationKind::BufferDim)
    text += ":" + std::to_string(index);
  return text;
}

std::string MoveInstance::str() const {
  std::string text = move->getName().str() + "@" +
                     location.str(move->getLocationKind());
  for (const std::string &param : location.params)
    text += ":" + param;
  return text;
}

bool mlir::perfdojo::isMoveWord(StringRef text) {
  return !text.empty() && llvm::all_of(text, [](char c) {
    return llvm::isAlnum(c) || c == '_';
  });
}

SmallVector<std::string> mlir::perfdojo::parseMoveList(StringRef text) {
  SmallVector<std::string> moves;
  SmallVector<StringRef> lines;
  text.split(lines, '\n');
  for (StringRef line : lines) {
    line = line.trim();
    if (line.starts_with("#"))
      continue;
    size_t comment = line.find(" #");
    if (comment == StringRef::npos)
      comment = line.find("\t#");
    line = line.take_front(comment).trim();
    if (!line.empty())
      moves.push_back(line.str());
  }
  return moves;
}

/// Reads the location of `kind` from the first of the ':'-separated
/// `fields` of `location`; returns how many fields it took.
static FailureOr<unsigned> parseLocationFields(LocationKind kind,
                                               ArrayRef<StringRef> fields,
                                               StringRef location,
                                               MoveLocation &loc,
                                               std::string &error) {
  StringRef head = fields.front();
  auto [array, ordinal] = head.split('#');
  loc.name = array.str();
  if (!isMoveWord(array)) {
    error = "malformed location '" + location.str() + "': expected a name, "
            "found '" + array.str() + "'";
    return failure();
  }
  if (head.contains('#')) {
    if (kind != LocationKind::Scope && kind != LocationKind::Operation) {
      error = "malformed location '" + location.str() +
              "': a buffer location takes no '#' (that is for operations)";
      return failure();
    }
    if (ordinal.getAsInteger(10, loc.ordinal)) {
      error = "malformed location '" + location.str() +
              "': expected an ordinal after '#', found '" + ordinal.str() + "'";
      return failure();
    }
  }
  if (kind != LocationKind::Scope && kind != LocationKind::BufferDim)
    return 1;
  StringRef what =
      kind == LocationKind::Scope ? "a scope depth" : "a dimension index";
  if (fields.size() < 2 || fields[1].getAsInteger(10, loc.index)) {
    error = "malformed location '" + location.str() + "': expected " +
            what.str() + " after ':'";
    return failure();
  }
  return 2;
}

FailureOr<MoveLocation> mlir::perfdojo::parseMoveLocation(LocationKind kind,
                                                          StringRef text,
                                                          std::string &error) {
  MoveLocation loc;
  SmallVector<StringRef> fields;
  text.split(fields, ':');
  FailureOr<unsigned> used = parseLocationFields(kind, fields, text, loc, error);
  if (failed(used))
    return failure();
  if (*used != fields.size()) {
    error = "malformed location '" + text.str() + "': expected " +
            (kind == LocationKind::Scope       ? "'array[#n]:depth'"
             : kind == LocationKind::Operation ? "'array[#n]'"
             : kind == LocationKind::Buffer    ? "'name'"
                                               : "'name:dim'") +
            ", without parameters";
    return failure();
  }
  return loc;
}

FailureOr<MoveInstance> mlir::perfdojo::parseMove(StringRef text,
                                                  std::string &error) {
  text = text.trim();
  auto [name, location] = text.split('@');
  MoveInstance instance;
  instance.move = MoveRegistry::get().lookup(name);
  if (!instance.move) {
    std::string known;
    for (const std::unique_ptr<Move> &move : MoveRegistry::get().getMoves())
      known += (known.empty() ? "" : ", ") + move->getName().str();
    error = "unknown move '" + name.str() + "'; known moves: " + known;
    return failure();
  }
  if (!text.contains('@') || location.empty()) {
    error = "expected '" + name.str() + "@<location>', found '" + text.str() +
            "'";
    return failure();
  }
  SmallVector<StringRef> fields;
  location.split(fields, ':');
  FailureOr<unsigned> next =
      parseLocationFields(instance.move->getLocationKind(), fields, location,
                          instance.location, error);
  if (failed(next))
    return failure();
  MoveLocation &loc = instance.location;
  for (unsigned i = *next; i < fields.size(); ++i) {
    if (!isMoveWord(fields[i])) {
      error = "malformed parameter '" + fields[i].str() + "' in '" +
              text.str() + "'";
      return failure();
    }
    loc.params.push_back(fields[i].str());
  }
  ArrayRef<StringRef> paramNames = instance.move->getParamNames();
  if (loc.params.size() != paramNames.size()) {
    error = "'" + name.str() + "' takes " + std::to_string(paramNames.size()) +
            " parameter" + (paramNames.size() == 1 ? "" : "s");
    if (!paramNames.empty()) {
      error += " (";
      for (auto [i, p] : llvm::enumerate(paramNames))
        error += (i ? ", " : "") + p.str();
      error += ")";
    }
    error += ", found " + std::to_string(loc.params.size());
    return failure();
  }
  return instance;
}

FailureOr<ResolvedLocation>
mlir::perfdojo::resolveLocation(KernelOp kernel, LocationKind kind,
                                const MoveLocation &location,
                                std::string &error) {
  ResolvedLocation resolved;
  resolved.kernel = kernel;
  if (kind == LocationKind::Buffer || kind == LocationKind::BufferDim) {
    resolved.buffer = kernel.lookupBuffer(location.name);
    if (!resolved.buffer) {
      error = "no buffer named '" + location.name + "'";
      return failure();
    }
    resolved.dim = location.index;
    if (kind == LocationKind::BufferDim &&
        location.index >= resolved.buffer.getShape().size()) {
      error = "buffer '" + location.name + "' has rank " +
              std::to_string(resolved.buffer.getShape().size()) +
              "; dimension " + std::to_string(location.index) +
              " does not exist";
      return failure();
    }
    return resolved;
  }

  unsigned count = 0;
  kernel.walk<WalkOrder::PreOrder>([&](ComputeOp op) {
    if (op.getOut().getArray().getValue() != location.name)
      return WalkResult::advance();
    if (count++ == location.ordinal)
      resolved.op = op;
    return WalkResult::advance();
  });
  if (!resolved.op) {
    error = count == 0
                ? "no operation writes '" + location.name + "'"
                : std::to_string(count) + " operation" +
                      (count == 1 ? " writes '" : "s write '") + location.name +
                      "'; #" + std::to_string(location.ordinal) +
                      " does not exist";
    return failure();
  }
  if (kind == LocationKind::Scope) {
    unsigned depth = resolved.op.getDepth();
    if (location.index >= depth) {
      error = "the operation '" + location.str(LocationKind::Operation) +
              "' is nested in " +
              std::to_string(depth) + " scope" + (depth == 1 ? "" : "s") +
              "; depth " + std::to_string(location.index) +
              " does not exist";
      return failure();
    }
    resolved.scope = getEnclosingScope(resolved.op, location.index);
  }
  return resolved;
}

//===----------------------------------------------------------------------===//
// Check, apply, enumerate
//===----------------------------------------------------------------------===//

LogicalResult mlir::perfdojo::checkMove(KernelOp kernel,
                                        const MoveInstance &move,
                                        std::string &reason) {
  FailureOr<ResolvedLocation> loc = resolveLocation(
      kernel, move.move->getLocationKind(), move.location, reason);
  if (failed(loc))
    return failure();
  return move.move->check(*loc, move.location.params, reason);
}

LogicalResult mlir::perfdojo::applyMove(RewriterBase &rewriter,
                                        KernelOp kernel,
                                        const MoveInstance &move,
                                        std::string &reason) {
  FailureOr<ResolvedLocation> loc = resolveLocation(
      kernel, move.move->getLocationKind(), move.location, reason);
  if (failed(loc) ||
      failed(move.move->check(*loc, move.location.params, reason)))
    return failure();
  // Before the first move, remember the original kernel so that any move
  // can later be undone by replaying the others.
  if (!kernel->hasAttr(kOriginalAttrName)) {
    std::string original;
    llvm::raw_string_ostream os(original);
    if (succeeded(exportTextForm(kernel, os)))
      rewriter.modifyOpInPlace(kernel, [&] {
        kernel->setAttr(kOriginalAttrName, rewriter.getStringAttr(original));
      });
  }
  move.move->apply(rewriter, *loc, move.location.params);
  SmallVector<Attribute> history;
  if (auto old = kernel->getAttrOfType<ArrayAttr>(kHistoryAttrName))
    history.assign(old.begin(), old.end());
  history.push_back(rewriter.getStringAttr(move.str()));
  rewriter.modifyOpInPlace(kernel, [&] {
    kernel->setAttr(kHistoryAttrName, rewriter.getArrayAttr(history));
  });
  return success();
}

namespace {
/// A candidate location together with the IR it designates.
struct Candidate {
  MoveLocation location;
  ResolvedLocation resolved;
};
} // namespace

/// The canonical location of every candidate of `kind` in `kernel`, already
/// resolved: scopes are named by the first operation in them (or, for moves
/// that use the operation, by the first operation of each child).
static SmallVector<Candidate> getCandidates(KernelOp kernel, LocationKind kind,
                                            bool perChild) {
  SmallVector<Candidate> candidates;
  if (kind == LocationKind::Buffer || kind == LocationKind::BufferDim) {
    for (BufferOp buffer : kernel.getBuffers()) {
      unsigned dims = kind == LocationKind::Buffer ? 1 : buffer.getShape().size();
      for (unsigned d = 0; d < dims; ++d) {
        Candidate c;
        c.location.name = buffer.getSymName().str();
        c.location.index = d;
        c.resolved.kernel = kernel;
        c.resolved.buffer = buffer;
        c.resolved.dim = d;
        candidates.push_back(c);
      }
    }
    return candidates;
  }
  llvm::StringMap<unsigned> ordinals;
  llvm::DenseMap<Operation *, MoveLocation> opLocations;
  kernel.walk<WalkOrder::PreOrder>([&](ComputeOp op) {
    MoveLocation loc;
    loc.name = op.getOut().getArray().getValue().str();
    loc.ordinal = ordinals[loc.name]++;
    opLocations[op] = loc;
    if (kind == LocationKind::Operation) {
      Candidate c;
      c.location = loc;
      c.resolved.kernel = kernel;
      c.resolved.op = op;
      candidates.push_back(c);
    }
  });
  if (kind == LocationKind::Scope) {
    auto firstOp = [](Operation *root) {
      ComputeOp first;
      root->walk<WalkOrder::PreOrder>([&](ComputeOp op) {
        first = op;
        return WalkResult::interrupt();
      });
      return first;
    };
    kernel.walk<WalkOrder::PreOrder>([&](ScopeOp scope) {
      SmallVector<Operation *> roots{scope};
      if (perChild) {
        roots.clear();
        for (Operation &child : scope.getBodyBlock())
          roots.push_back(&child);
      }
      for (Operation *root : roots) {
        ComputeOp first = firstOp(root);
        if (!first)
          continue;
        Candidate c;
        c.location = opLocations[first];
        c.location.index = scope.getDepth();
        c.resolved.kernel = kernel;
        c.resolved.op = first;
        c.resolved.scope = scope;
        candidates.push_back(c);
      }
    });
  }
  return candidates;
}

namespace {
/// The context of every scope of a kernel, as Move::isScopeLocal defines it
/// (the buffer declarations, the sizes and mappings of the enclosing scopes,
/// the scope's subtree and its next sibling's), encoded exactly (uniqued
/// attributes by address, sizes, mappings and enumerations by value, the
/// subtree's shape by markers) and hashed to 128 bits.
class ScopeContexts {
public:
  explicit ScopeContexts(KernelOp kernel) {
    SmallVector<uint64_t> prefix;
    for (BufferOp buffer : kernel.getBuffers()) {
      prefix.push_back(word(buffer.getSymNameAttr()));
      prefix.push_back(uint64_t(buffer.getRole()));
      prefix.push_back(word(buffer.getElementTypeAttr()));
      prefix.push_back(word(buffer.getShapeAttr()));
      prefix.push_back(word(buffer.getReuseAttr()));
      prefix.push_back(uint64_t(buffer.getLocation()));
      prefix.push_back(word(buffer.getArraysAttr()));
    }
    prefix.push_back(kEnd);
    SmallVector<ScopeOp> enclosing;
    for (Operation &op : kernel.getBody().front())
      if (auto scope = dyn_cast<ScopeOp>(op))
        visit(scope, prefix, enclosing);
  }

  /// The key of `scope`'s context, or nullopt where its subtree holds an
  /// operation the encoding does not know.
  std::optional<std::pair<uint64_t, uint64_t>> keyFor(ScopeOp scope) const {
    auto it = hashes.find(scope);
    if (it == hashes.end())
      return std::nullopt;
    return std::make_pair(it->second.lo, it->second.hi);
  }

private:
  struct Hash128 {
    uint64_t lo, hi;
  };
  static constexpr uint64_t kScope = ~uint64_t(0) - 1, kCompute = kScope - 1,
                            kEnd = kScope - 2;

  static uint64_t word(Attribute attr) {
    return reinterpret_cast<uintptr_t>(attr.getAsOpaquePointer());
  }

  /// Appends the encoding of `op`'s subtree; false for an unknown operation.
  static bool encode(Operation *op, SmallVectorImpl<uint64_t> &words) {
    if (auto compute = dyn_cast<ComputeOp>(op)) {
      words.append({kCompute, uint64_t(compute.getKind()),
                    uint64_t(compute.getReduction()), word(compute.getOut()),
                    word(compute.getInputs())});
      return true;
    }
    auto scope = dyn_cast<ScopeOp>(op);
    if (!scope)
      return false;
    words.append(
        {kScope, uint64_t(scope.getSize()), uint64_t(scope.getMapping())});
    for (Operation &child : scope.getBodyBlock())
      if (!encode(&child, words))
        return false;
    words.push_back(kEnd);
    return true;
  }

  void visit(ScopeOp scope, ArrayRef<uint64_t> prefix,
             SmallVectorImpl<ScopeOp> &enclosing) {
    SmallVector<uint64_t, 128> words(prefix.begin(), prefix.end());
    for (ScopeOp outer : enclosing)
      words.append({uint64_t(outer.getSize()), uint64_t(outer.getMapping())});
    words.push_back(kEnd);
    Operation *next = scope->getNextNode();
    if (encode(scope, words) && (!next || encode(next, words))) {
      llvm::XXH128_hash_t hash = llvm::xxh3_128bits(
          ArrayRef<uint8_t>(reinterpret_cast<const uint8_t *>(words.data()),
                            words.size() * sizeof(uint64_t)));
      hashes[scope] = {hash.low64, hash.high64};
    }
    enclosing.push_back(scope);
    for (Operation &child : scope.getBodyBlock())
      if (auto inner = dyn_cast<ScopeOp>(child))
        visit(inner, prefix, enclosing);
    enclosing.pop_back();
  }

  llvm::DenseMap<Operation *, Hash128> hashes;
};

/// The legal parameter choices of `move` at `loc`.
using LegalParams = SmallVector<SmallVector<std::string, 2>>;

/// The scope-local moves of the registry, in order: those located at a
/// scope, and those located at a child of one (split_scope). A listing
/// shares their answers per scope, or per child of a scope.
struct ScopeLocalMoves {
  SmallVector<const Move *> perScope, perChild;

  ScopeLocalMoves() {
    for (const std::unique_ptr<Move> &move : MoveRegistry::get().getMoves())
      if (move->isScopeLocal() &&
          move->getLocationKind() == LocationKind::Scope)
        (move->locatesChild() ? perChild : perScope).push_back(move.get());
  }
};

/// The answers of every move of a group at one scope (or child), in the
/// group's order.
using ScopeAnswers = SmallVector<LegalParams>;
} // namespace

/// Checks `move` at `loc` for each of its parameter choices.
static LegalParams checkChoices(const Move &move, const ResolvedLocation &loc,
                                std::string &reason) {
  LegalParams legal;
  if (move.getParamNames().empty()) {
    if (succeeded(move.check(loc, {}, reason)))
      legal.emplace_back();
    return legal;
  }
  for (SmallVector<std::string, 2> &params : move.getParamChoices(loc))
    if (succeeded(move.check(loc, params, reason)))
      legal.push_back(std::move(params));
  return legal;
}

/// The answers of the moves of `group` at `candidate`'s scope, or, for
/// moves that locate a child, at the child holding its operation: shared by
/// this listing, taken from an earlier listing of the same context (and
/// child position), or computed for the whole group and remembered. Null
/// where the scope's context has no key.
static std::shared_ptr<const ScopeAnswers>
getAnswers(KernelOp kernel, const Candidate &candidate, bool perChild,
           ArrayRef<const Move *> group, std::string &reason) {
  ScopeOp scope = candidate.resolved.scope;
  Operation *at = scope;
  if (perChild) {
    at = candidate.resolved.op;
    while (at && at->getParentOp() != scope)
      at = at->getParentOp();
    if (!at)
      return nullptr;
  }
  auto shared = CheckCache::getShared<std::shared_ptr<const ScopeAnswers>>(
      at,
      perChild ? CheckCache::Question::ChildAnswers
               : CheckCache::Question::ScopeAnswers,
      [&]() -> std::shared_ptr<const ScopeAnswers> {
        auto contexts = CheckCache::getShared<ScopeContexts>(
            kernel, CheckCache::Question::ScopeContexts,
            [&] { return ScopeContexts(kernel); });
        std::optional<std::pair<uint64_t, uint64_t>> key =
            contexts->keyFor(scope);
        if (!key)
          return nullptr;
        if (perChild) {
          // The scope's context and the child's position, tagged apart
          // from the scopes' own keys.
          uint64_t position = 0;
          for (Operation &sibling : scope.getBodyBlock()) {
            if (&sibling == at)
              break;
            ++position;
          }
          uint64_t words[4] = {key->first, key->second, position,
                               0x6368696c64ull /* "child" */};
          llvm::XXH128_hash_t hash = llvm::xxh3_128bits(ArrayRef<uint8_t>(
              reinterpret_cast<const uint8_t *>(words), sizeof(words)));
          key = {hash.low64, hash.high64};
        }
        auto *dialect =
            kernel->getContext()->getLoadedDialect<PerfDojoDialect>();
        if (std::shared_ptr<const void> known = dialect->lookupListing(*key))
          return std::static_pointer_cast<const ScopeAnswers>(known);
        auto answers = std::make_shared<ScopeAnswers>();
        for (const Move *move : group)
          answers->push_back(checkChoices(*move, candidate.resolved, reason));
        dialect->recordListing(*key, answers);
        return answers;
      });
  return *shared;
}

/// Appends the legal instances of `move` in `kernel` to `legal`; with
/// `scopeLocal`, reusing the answers of scope-local moves.
static void appendLegalMoves(KernelOp kernel, const Move &move,
                             const ScopeLocalMoves *scopeLocal,
                             SmallVectorImpl<MoveInstance> &legal) {
  CheckCache::Scope cache;
  // The reasons of refusals are not used; one buffer serves every listing.
  static thread_local std::string reason;
  // Moves of one location kind share the candidates.
  unsigned kind = static_cast<unsigned>(move.getLocationKind()) +
                  (move.locatesChild() ? 4 : 0);
  auto candidates = CheckCache::getShared<SmallVector<Candidate>>(
      kernel,
      CheckCache::Question(unsigned(CheckCache::Question::Candidates) + kind),
      [&] {
        return getCandidates(kernel, move.getLocationKind(),
                             move.locatesChild());
      });
  // The group of scope-local moves `move` belongs to, and its position.
  ArrayRef<const Move *> group;
  std::optional<unsigned> slot;
  if (scopeLocal) {
    group = move.locatesChild() ? scopeLocal->perChild : scopeLocal->perScope;
    if (const auto *it = llvm::find(group, &move); it != group.end())
      slot = it - group.begin();
  }
  auto append = [&](const Candidate &candidate, const LegalParams &choices) {
    for (const SmallVector<std::string, 2> &params : choices) {
      MoveInstance &instance =
          legal.emplace_back(MoveInstance{&move, candidate.location});
      instance.location.params.assign(params.begin(), params.end());
    }
  };
  for (const Candidate &candidate : *candidates) {
    if (slot) {
      std::shared_ptr<const ScopeAnswers> answers = getAnswers(
          kernel, candidate, move.locatesChild(), group, reason);
      // (The size guards against a 128-bit key collision between groups.)
      if (answers && *slot < answers->size()) {
        append(candidate, (*answers)[*slot]);
        continue;
      }
    }
    append(candidate, checkChoices(move, candidate.resolved, reason));
  }
}

SmallVector<MoveInstance> mlir::perfdojo::enumerateMoves(KernelOp kernel,
                                                         const Move &move,
                                                         ListingReuse reuse) {
  std::optional<ScopeLocalMoves> scopeLocal;
  if (reuse == ListingReuse::ScopeContext)
    scopeLocal.emplace();
  SmallVector<MoveInstance> legal;
  appendLegalMoves(kernel, move, scopeLocal ? &*scopeLocal : nullptr, legal);
  return legal;
}

SmallVector<MoveInstance> mlir::perfdojo::enumerateMoves(KernelOp kernel,
                                                         ListingReuse reuse) {
  std::optional<ScopeLocalMoves> scopeLocal;
  if (reuse == ListingReuse::ScopeContext)
    scopeLocal.emplace();
  // The checks of every move share one cache.
  CheckCache::Scope cache;
  SmallVector<MoveInstance> legal;
  legal.reserve(512);
  for (const std::unique_ptr<Move> &move : MoveRegistry::get().getMoves())
    appendLegalMoves(kernel, *move, scopeLocal ? &*scopeLocal : nullptr,
                     legal);
  return legal;
}

LogicalResult mlir::perfdojo::undoMove(RewriterBase &rewriter, KernelOp kernel,
                                       unsigned index, std::string &reason) {
  auto history = kernel->getAttrOfType<ArrayAttr>(kHistoryAttrName);
  auto original = kernel->getAttrOfType<StringAttr>(kOriginalAttrName);
  if (!history || !original) {
    reason = "the kernel carries no move history";
    return failure();
  }
  if (index < 1 || index > history.size()) {
    reason = "move " + std::to_string(index) + " does not exist; the history "
             "holds " + std::to_string(history.size()) + " move" +
             (history.size() == 1 ? "" : "s");
    return failure();
  }
  // Rebuild the original in a scratch module, replay, then swap it in.
  MLIRContext *ctx = kernel.getContext();
  std::string importError;
  OwningOpRef<ModuleOp> scratch;
  {
    ScopedDiagnosticHandler silence(ctx, [&](Diagnostic &diag) {
      importError = diag.str();
      return success();
    });
    scratch = importTextForm(original.getValue(), "perfdojo.original", ctx);
  }
  if (!scratch) {
    reason = "the recorded original does not parse: " + importError;
    return failure();
  }
  KernelOp rebuilt = *scratch->getOps<KernelOp>().begin();
  IRRewriter scratchRewriter(ctx);
  for (auto [i, attr] : llvm::enumerate(history)) {
    if (i + 1 == index)
      continue;
    StringRef text = cast<StringAttr>(attr).getValue();
    std::string why;
    FailureOr<MoveInstance> move = parseMove(text, why);
    if (failed(move) ||
        failed(applyMove(scratchRewriter, rebuilt, *move, why))) {
      reason = "move " + std::to_string(i + 1) + " '" + text.str() +
               "' no longer applies: " + why;
      return failure();
    }
  }
  // The replay recorded its own history (and the same original).
  rewriter.setInsertionPoint(kernel);
  Operation *replacement = rebuilt->clone();
  rewriter.insert(replacement);
  if (!replacement->hasAttr(kHistoryAttrName)) {
    // Undoing the only move leaves the original, which has no history.
    rewriter.modifyOpInPlace(replacement, [&] {
      replacement->removeAttr(kOriginalAttrName);
    });
  }
  rewriter.eraseOp(kernel);
  return success();
}
