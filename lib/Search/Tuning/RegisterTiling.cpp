//===- RegisterTiling.cpp - Register tiles of products --------------------===//
//
// Members of HeuristicRunner (HeuristicRunner.h, where each is documented).
//
//===----------------------------------------------------------------------===//

#include "HeuristicRunner.h"
#include "PerfDojo/Transforms/MoveOps.h"
#include <cmath>
#include <map>

using namespace mlir;
using namespace mlir::perfdojo;
using namespace mlir::perfdojo::moves;
using namespace mlir::perfdojo::heuristics;

std::optional<HeuristicRunner::Product>
HeuristicRunner::findProduct(ArrayRef<std::string> skip) {
  std::optional<Product> found;
  env.getKernel().walk([&](ComputeOp op) {
    if (found || op.getReduction() == Reduction::none)
      return;
    auto vector = dyn_cast<ScopeOp>(op->getParentOp());
    if (!vector || vector.getMapping() != Mapping::vector || !isProduct(op))
      return;
    if (std::optional<Product> narrow = findNarrowProduct(op)) {
      if (!llvm::is_contained(skip, scopeLocation(op, 0)))
        found = narrow;
      return;
    }
    auto columns = dyn_cast<ScopeOp>(vector->getParentOp());
    auto reduction =
        columns ? dyn_cast<ScopeOp>(columns->getParentOp()) : ScopeOp();
    if (!reduction || columns.getMapping() != Mapping::seq ||
        reduction.getMapping() != Mapping::seq)
      return;
    SmallVector<LinearForm> forms(op.getOut().getLinearForms());
    if (usesVariable(forms, reduction.getDepth()) ||
        forms.back().coeff(columns.getDepth()) == 0)
      return;
    auto rows = dyn_cast<ScopeOp>(reduction->getParentOp());
    if (llvm::is_contained(skip, scopeLocation(op, 0)))
      return;
    found = Product{op, rows, reduction, columns};
  });
  return found;
}

int64_t HeuristicRunner::rowTile(int64_t size, int64_t vectors,
                                 int64_t accumulators,
                                 function_ref<bool(int64_t)> fits) {
  for (int64_t r : {8, 6, 4, 3, 2})
    if (size % r == 0 && size > r && r * vectors <= accumulators &&
        (!fits || fits(r)))
      return r;
  return 0;
}

int64_t HeuristicRunner::rowTileInRegisters(Product p, ScopeOp rows,
                                            int64_t vectors,
                                            int64_t accumulators) {
  return rowTile(rows.getSize(), vectors, accumulators, [&](int64_t r) {
    int64_t tile = r * vectors;
    return tile + windowLiveVectors(p, rows, r, vectors, tile) + 2 <=
           int64_t(target.vectorRegisters);
  });
}

void HeuristicRunner::splitOperands(
    Product p, SmallVectorImpl<SmallVector<LinearForm>> &loaded,
    SmallVectorImpl<SmallVector<LinearForm>> &broadcast) {
  unsigned lanes = p.op->getParentOfType<ScopeOp>().getDepth();
  for (Attribute input : p.op.getInputs())
    if (auto access = dyn_cast<AccessAttr>(input)) {
      SmallVector<LinearForm> in(access.getLinearForms());
      (in.back().coeff(lanes) ? loaded : broadcast).push_back(in);
    }
}

bool HeuristicRunner::usedBy(ArrayRef<SmallVector<LinearForm>> operands,
                             unsigned d) {
  return llvm::any_of(
      operands, [&](ArrayRef<LinearForm> in) { return usesVariable(in, d); });
}

bool HeuristicRunner::usedAlone(ArrayRef<SmallVector<LinearForm>> operands,
                                unsigned d) {
  return llvm::any_of(operands, [&](ArrayRef<LinearForm> in) {
    return llvm::any_of(in, [&](const LinearForm &form) {
      return form.coeff(d) &&
             llvm::count_if(form.coeffs, [](int64_t c) { return c != 0; }) == 1;
    });
  });
}

ScopeOp HeuristicRunner::predictWindow(
    Product p, int64_t tile,
    SmallVectorImpl<std::pair<unsigned, int64_t>> *scopes) {
  SmallVector<LinearForm> forms(p.op.getOut().getLinearForms());
  int64_t instances = tile;
  ScopeOp k = p.reduction;
  for (; k && unrollsAsWindow(k, forms, instances);
       k = dyn_cast<ScopeOp>(k->getParentOp())) {
    instances *= k.getSize();
    if (scopes)
      scopes->push_back({k.getDepth(), int64_t(k.getSize())});
  }
  return k;
}

int64_t HeuristicRunner::windowLiveVectors(Product p, ScopeOp x, int64_t rows,
                                           int64_t c, int64_t tile) {
  // The scopes and extents that vary within the unrolled instances.
  SmallVector<std::pair<unsigned, int64_t>> varying{{x.getDepth(), rows}};
  if (p.columns)
    varying.push_back({p.columns.getDepth(), c});
  size_t before = varying.size();
  predictWindow(p, tile, &varying);
  if (varying.size() == before)
    return 0;
  SmallVector<SmallVector<LinearForm>> loaded, broadcast;
  splitOperands(p, loaded, broadcast);
  int64_t count = 1;
  for (auto [d, n] : varying)
    count *= n;
  int64_t live = 0;
  for (ArrayRef<LinearForm> in : loaded) {
    // Each vector's first and last reader.
    std::map<SmallVector<int64_t>, std::pair<int64_t, int64_t>> readers;
    for (int64_t i = 0; i < count; ++i) {
      SmallVector<int64_t> offset(in.size(), 0);
      int64_t rest = i;
      for (auto [d, n] : varying) {
        for (auto [dim, form] : llvm::enumerate(in))
          offset[dim] += form.coeff(d) * (rest % n);
        rest /= n;
      }
      auto [it, first] = readers.try_emplace(offset, i, i);
      if (!first)
        it->second.second = i;
    }
    SmallVector<int64_t> change(count + 1, 0);
    for (const auto &entry : readers)
      if (entry.second.second > entry.second.first) {
        ++change[entry.second.first];
        --change[entry.second.second];
      }
    int64_t now = 0, most = 0;
    for (int64_t delta : change)
      most = std::max(most, now += delta);
    live += most;
  }
  return live;
}

bool HeuristicRunner::windowUnrollsSliding(Product p, int64_t tile) {
  SmallVector<LinearForm> forms(p.op.getOut().getLinearForms());
  ScopeOp k = predictWindow(p, tile);
  SmallVector<SmallVector<LinearForm>> loaded, broadcast;
  splitOperands(p, loaded, broadcast);
  for (; k && !usesVariable(forms, k.getDepth()) &&
         int64_t(k.getSize()) <= kMaxWindow;
       k = dyn_cast<ScopeOp>(k->getParentOp()))
    for (ArrayRef<LinearForm> in : loaded)
      for (const LinearForm &form : in)
        if (form.coeff(k.getDepth()) &&
            llvm::count_if(form.coeffs, [](int64_t c) { return c != 0; }) > 1)
          return false;
  return true;
}

HeuristicRunner::TileChoice HeuristicRunner::chooseTile(Product p,
                                                        int64_t vectorsPerRow,
                                                        int64_t accumulators,
                                                        int64_t cols) {
  TileChoice choice;
  choice.columns =
      vectorsPerRow > cols && vectorsPerRow % cols == 0 ? cols : vectorsPerRow;
  SmallVector<LinearForm> forms(p.op.getOut().getLinearForms());
  SmallVector<SmallVector<LinearForm>> loaded, broadcast;
  splitOperands(p, loaded, broadcast);
  // Lanes that do not fill a register (6 of 8) hold their mask in one.
  int64_t registers =
      target.vectorRegisters -
      (llvm::isPowerOf2_64(p.op->getParentOfType<ScopeOp>().getSize()) ? 0 : 1);
  // The row scopes: sequential, above k, indexing the output but not
  // its contiguous dimension.
  SmallVector<ScopeOp> rowScopes;
  for (auto s = dyn_cast<ScopeOp>(p.reduction->getParentOp()); s;
       s = dyn_cast<ScopeOp>(s->getParentOp()))
    if (usesVariable(forms, s.getDepth()) &&
        !forms.back().coeff(s.getDepth()) && s.getMapping() == Mapping::seq)
      rowScopes.push_back(s);
  // Score: modelled efficiency, the sliding window unrolled, no peeled
  // columns, tile size, one row scope, C == cols, R.
  using Score = std::tuple<double, bool, bool, int64_t, bool, bool, int64_t>;
  Score best{0, false, false, 0, false, false, 0};
  bool bestTwo = false;
  auto consider = [&](int64_t c, ArrayRef<std::pair<ScopeOp, int64_t>> rows,
                      int64_t rowsCovered = 0) {
    double fmas = double(c), vectors = double(c), broadcasts = 1;
    for (auto [scope, r] : rows) {
      ScopeOp s = scope;
      fmas *= double(r);
      if (usedBy(loaded, s.getDepth()))
        vectors *= double(r);
      if (usedBy(broadcast, s.getDepth()))
        broadcasts *= double(r);
    }
    double cycles = std::max({fmas / 2, (vectors + broadcasts) / 2, 4.0});
    bool whole = vectorsPerRow % c == 0;
    Score score{std::round(fmas / 2 / cycles * 1000) / 1000,
                windowUnrollsSliding(p, int64_t(fmas)),
                whole,
                int64_t(fmas),
                rows.size() == 1,
                c == cols,
                rows.front().second};
    if (score <= best)
      return;
    best = score;
    bestTwo = rows.size() == 2;
    choice.columns = c;
    choice.covered = whole ? 0 : vectorsPerRow - vectorsPerRow % c;
    choice.rowsCovered = rowsCovered;
    choice.rowsDepth = ScopeOp(rows.front().first).getDepth();
    choice.rows = rows.front().second;
    choice.rows2Depth = std::nullopt;
    choice.rows2 = 0;
    if (rows.size() == 2) {
      choice.rows2Depth = ScopeOp(rows.back().first).getDepth();
      choice.rows2 = rows.back().second;
    }
  };
  for (int64_t c = 1; c <= vectorsPerRow && c <= accumulators; ++c) {
    // A C that does not divide the vectors tiles the largest multiple
    // of it below them (the rest is peeled off), with rows of one scope
    // that the vector-loaded operand does not use, so that each loaded
    // vector serves all of them (matmul's, not a depthwise
    // convolution's, where 4 rows x 3 vectors ran 2x slower than its 13
    // vectors of one row).
    if (vectorsPerRow % c) {
      if (p.columns)
        for (ScopeOp s : rowScopes)
          if (!usedBy(loaded, s.getDepth()))
            if (int64_t r = rowTile(s.getSize(), c, accumulators))
              consider(c, {{s, r}});
      continue;
    }
    if (p.columns)
      for (ScopeOp s : rowScopes) {
        // Rows that index their own vectors of the loaded operand in a
        // dimension of their own (a batch, a depthwise convolution's
        // channel) share no loaded vector, only the broadcasts; they
        // multiply the streams instead. A depthwise 3x3 convolution over 8
        // images of 110 columns (Zen 4): 4 images x 6 vectors of 16 ran
        // 5.6-6.8 ms, the 2 image rows x 6 taken instead 2.7-4.4.
        if (usedAlone(loaded, s.getDepth()))
          continue;
        int64_t r = rowTile(s.getSize(), c, accumulators);
        if (r)
          consider(c, {{s, r}});
        // More rows than any divisor gives, the rest peeled off: in a
        // long scope (at least 64 tiles, so that the leftover rows, in
        // small tiles of their own, take a small part of the time) that
        // the vector-loaded operand does not use. gemm's 1024 rows: 6 x
        // 4 vectors over 1020 and 4 peeled, not 4 x 4 (0.86x-0.96x of
        // the time); swiglu's 256 ran 1.08x slower so, bmm's 256 no
        // faster.
        int64_t size = s.getSize();
        if (!usedBy(loaded, s.getDepth()))
          for (int64_t more : {8, 6})
            if (more > r && size % more && size >= 64 * more &&
                more * c <= accumulators)
              consider(c, {{s, more}}, size - size % more);
      }
    // Two scopes: one only the broadcast operand uses, one only the
    // vector-loaded operand uses.
    for (ScopeOp w : rowScopes) {
      if (usedBy(loaded, w.getDepth()) || !usedBy(broadcast, w.getDepth()))
        continue;
      for (ScopeOp x : rowScopes) {
        if (!usedBy(loaded, x.getDepth()) || usedBy(broadcast, x.getDepth()))
          continue;
        for (int64_t rw = 2; rw <= 8; ++rw)
          for (int64_t rx = 2; rx <= 8; ++rx) {
            int64_t tile = rw * rx * c, ws = w.getSize(), xs = x.getSize();
            if (ws % rw || ws == rw || xs % rx || xs == rx ||
                tile > accumulators ||
                tile + std::min(rw, rx * c) + 1 +
                        windowLiveVectors(p, x, rx, c, tile) >
                    registers)
              continue;
            consider(c, {{w, rw}, {x, rx}});
          }
      }
    }
  }
  // A product of one vector keeps its own choice of one row scope.
  if (!p.columns && !bestTwo) {
    choice.rowsDepth = std::nullopt;
    choice.rows = 0;
  }
  return choice;
}

void HeuristicRunner::registerBlock() {
  // Three quarters of the vector registers hold the tile (24 of AVX-512's
  // 32, 12 of AVX2's 16), the rest the loaded vectors and a broadcast;
  // a tile row is a sixth of that (4 vectors; 2 on AVX2, in 6 rows).
  const int64_t accumulators = target.vectorRegisters * 3 / 4;
  const int64_t cols = std::max<int64_t>(1, accumulators / 6);
  SmallVector<std::string> done;
  while (steps < kMaxSteps) {
    std::optional<Product> p = findProduct(done);
    if (!p)
      return;
    std::string id = scopeLocation(p->op, 0);
    done.push_back(id);
    unsigned k = p->reduction.getDepth();
    // k holds the product alone (a convolution's peeled columns go).
    if (!llvm::hasSingleElement(p->reduction.getBodyBlock())) {
      size_t before = env.getMoves().size();
      if (!isolate(id, k)) {
        rollBackTo(before);
        continue;
      }
      p = findProductAt(id);
      if (!p)
        continue;
    }
    // Whether `scheme` took the product whole; where it did not, its
    // steps are taken back and the product found again.
    auto takes = [&](function_ref<bool()> scheme) {
      size_t before = env.getMoves().size();
      if (scheme())
        return true;
      rollBackTo(before);
      p = findProductAt(id);
      return false;
    };
    // A product of a few lanes runs them along another scope; one whose
    // loaded vectors no row reuses streams its matrix.
    if (!p->columns && takes([&] { return lanesAcrossRows(id); }))
      continue;
    if (p && p->columns && !reusesLoadedVectors(*p) &&
        takes([&] { return streamProduct(id); }))
      continue;
    if (!p)
      continue;
    // The tile: C vectors of columns by R rows, chosen together.
    int64_t vectorsPerRow = p->columns ? p->columns.getSize() : 1;
    TileChoice tile = chooseTile(*p, vectorsPerRow, accumulators, cols);
    // Columns that C does not divide: the rest peeled off (a product of
    // its own, visited later) and k split around the tiled part.
    if (tile.covered) {
      size_t before = env.getMoves().size();
      peelInit(*p, p->columns, tile.covered, id);
      done.push_back(id);
      std::optional<Product> tiled;
      if ((p = findProductAt(id)) && p->columns &&
          apply(PeelScopeOp::make(scopeLoc(p->op, p->columns.getDepth()),
                                  tile.covered)) &&
          isolate(id, k))
        tiled = findProductAt(id);
      if (!tiled || !tiled->columns ||
          int64_t(tiled->columns.getSize()) != tile.covered) {
        rollBackTo(before);
        continue;
      }
      p = tiled;
      vectorsPerRow = tile.covered;
    }
    // Rows that R does not divide: the rest peeled off the product and
    // its initialization (a product of its own, visited later).
    if (tile.rowsCovered && tile.rowsDepth) {
      size_t before = env.getMoves().size();
      // The product alone in the row scope first (an element-wise tail
      // that shares it keeps all its rows).
      if (!isolate(id, *tile.rowsDepth) || !(p = findProductAt(id))) {
        rollBackTo(before);
        continue;
      }
      peelInit(*p, scopeAt(p->op, *tile.rowsDepth), tile.rowsCovered, id);
      done.push_back(id);
      if (!(p = findProductAt(id)) ||
          !apply(PeelScopeOp::make(scopeLoc(p->op, *tile.rowsDepth),
                                   tile.rowsCovered)) ||
          !(p = findProductAt(id))) {
        rollBackTo(before);
        continue;
      }
    }
    // columns -> (columns / C) x C, the outer part above the reduction.
    // A two-scope tile of one vector takes the columns above the
    // reduction whole (a convolution's 31 vectors of 16 lanes, which no
    // C > 1 divides, would otherwise be unrolled into 248 accumulators);
    // a one-scope tile then unrolls them all where its rows allow
    // (rowTile below).
    if (p->columns && tile.columns < vectorsPerRow &&
        (tile.columns > 1 || tile.rows2Depth) &&
        (tile.columns == 1 ||
         apply(TileScopeOp::make(scopeLoc(p->op, k + 1), tile.columns))) &&
        apply(SwapNestedScopesOp::make(scopeLoc(*findOpAt(id), k))))
      raiseAboveReductions(id, k);
    std::optional<Product> q = findProductAt(id);
    if (!q)
      continue;
    // Whatever sits between k and the lanes is unrolled.
    if (q->columns)
      (void)apply(UnrollOp::make(scopeLoc(q->op, q->columns.getDepth())));
    // Rows in tiles, the tile brought below k. The rows are a scope
    // above k that indexes the output but not its contiguous dimension,
    // preferably one that the vector-loaded operand (read along the
    // columns) does not use, so that each loaded vector serves every row
    // of the tile: matmul's i (B does not use it), a convolution's
    // output channel (not its output row h, which x uses); else the
    // nearest.
    q = findProductAt(id);
    if (!q)
      continue;
    // A two-scope tile: both row scopes in tiles below k, then ordered.
    if (tile.rows2Depth) {
      size_t before = env.getMoves().size();
      if (tileRowsBelowK(id, *tile.rowsDepth, tile.rows) &&
          tileRowsBelowK(id, *tile.rows2Depth, tile.rows2)) {
        completeTile(id);
        continue;
      }
      rollBackTo(before);
      tile.rowsDepth = std::nullopt;
      q = findProductAt(id);
      if (!q)
        continue;
    }
    SmallVector<LinearForm> forms(q->op.getOut().getLinearForms());
    auto isRows = [&](ScopeOp s) {
      unsigned d = s.getDepth();
      return usesVariable(forms, d) && !forms.back().coeff(d);
    };
    SmallVector<SmallVector<LinearForm>> loaded, broadcast;
    splitOperands(*q, loaded, broadcast);
    ScopeOp rows;
    for (auto s = dyn_cast<ScopeOp>(q->reduction->getParentOp()); s;
         s = dyn_cast<ScopeOp>(s->getParentOp())) {
      if (!isRows(s) || s.getMapping() != Mapping::seq)
        continue;
      if (tile.rowsDepth) {
        if (s.getDepth() == *tile.rowsDepth)
          rows = s;
        continue;
      }
      bool shared = !usedBy(loaded, s.getDepth());
      if (!rows || shared) {
        rows = s;
        if (shared)
          break;
      }
    }
    if (!rows)
      continue;
    // The vectors per row of the tile: those of the unrolled scopes
    // between k and the lanes (4 after the column tiling, 7 for
    // relu_ffn's 112 columns, which 4 does not divide).
    int64_t vectors = 1;
    for (Operation *s = q->op->getParentOp()->getParentOp();
         s != q->reduction.getOperation(); s = s->getParentOp())
      vectors *= cast<ScopeOp>(s).getSize();
    int64_t rowsPerTile =
        tile.rowsCovered ? tile.rows
                         : rowTileInRegisters(*q, rows, vectors, accumulators);
    if (!rowsPerTile)
      continue;
    size_t before = env.getMoves().size();
    if (!tileRowsBelowK(id, rows.getDepth(), rowsPerTile)) {
      rollBackTo(before);
      continue;
    }
    completeTile(id);
  }
}

bool HeuristicRunner::lanesAcrossRows(StringRef id) {
  std::optional<Product> p = findProductAt(id);
  const int64_t width = target.vectorWidth;
  if (!p || p->columns || target.gpu || width < 2 || steps >= kMaxSteps)
    return false;
  auto lanes = cast<ScopeOp>(p->op->getParentOp());
  int64_t narrow = lanes.getSize();
  if (2 * narrow > width)
    return false;
  SmallVector<LinearForm> forms(p->op.getOut().getLinearForms());
  unsigned v = lanes.getDepth(), k = p->reduction.getDepth();
  // S, and the operands (with the dimension) that read it.
  ScopeOp rows;
  SmallVector<std::pair<std::string, unsigned>> copies;
  for (auto s = dyn_cast<ScopeOp>(p->reduction->getParentOp()); s && !rows;
       s = dyn_cast<ScopeOp>(s->getParentOp())) {
    unsigned d = s.getDepth();
    if (s.getMapping() != Mapping::seq || s.getSize() % width ||
        llvm::count_if(
            forms, [&](const LinearForm &f) { return f.coeff(d) != 0; }) != 1)
      continue;
    copies.clear();
    bool ok = true;
    for (Attribute input : p->op.getInputs()) {
      auto access = dyn_cast<AccessAttr>(input);
      if (!access)
        continue;
      SmallVector<LinearForm> in(access.getLinearForms());
      if (!usesVariable(in, d))
        continue;
      unsigned uses = 0, dim = 0;
      for (auto [i, f] : llvm::enumerate(in))
        if (f.coeff(d)) {
          ++uses;
          dim = i;
          ok &= f.coeff(d) == 1;
        }
      ok &= uses == 1 && !usesVariable(in, v) &&
            visitsPerElement(p->op, in) >= width;
      copies.push_back({access.getArray().getValue().str(), dim});
    }
    if (ok && !copies.empty())
      rows = s;
  }
  if (!rows)
    return false;
  const int64_t accumulators = target.vectorRegisters * 3 / 4;
  int64_t groups = rows.getSize() / width, c = 1;
  for (int64_t candidate : {4, 3, 2})
    if (groups % candidate == 0 && candidate * narrow <= accumulators) {
      c = candidate;
      break;
    }
  unsigned s = rows.getDepth();
  ComputeOp init = findInit(id);
  std::string initId = init ? scopeLocation(init, 0) : "";
  // The copies, before the top-level nest, S's dimension last.
  for (auto &[array, dim] : copies) {
    std::string name = addCopy(id, 0, array, "_t");
    if (name.empty())
      return false;
    unsigned rank = env.getKernel().lookupArray(name).getShape().size();
    for (unsigned d = dim; d + 1 < rank; ++d)
      if (!apply(PermuteDimsOp::make(bufferLoc(name, d))))
        return false;
  }
  // The product alone from S down to k, then its lanes moved.
  for (unsigned d = k; d-- > s;)
    if (!isolate(id, d))
      return false;
  if (!moveLanes(id, s, v, c))
    return false;
  // The initialization alike, where it has the same scope S and lanes.
  if (std::optional<ComputeOp> i =
          initId.empty() ? std::nullopt : findOpAt(initId)) {
    auto initLanes = dyn_cast<ScopeOp>((*i)->getParentOp());
    ScopeOp initRows = scopeAt(*i, s);
    SmallVector<LinearForm> initForms(i->getOut().getLinearForms());
    bool alike = initLanes && initRows &&
                 initLanes.getMapping() == Mapping::vector &&
                 initLanes.getSize() == lanes.getSize() &&
                 initRows.getSize() == rows.getSize() &&
                 initForms.size() == forms.size();
    for (size_t d = 0; alike && d < forms.size(); ++d)
      alike = initForms[d].coeff(s) == forms[d].coeff(s) &&
              initForms[d].coeff(initLanes.getDepth()) == forms[d].coeff(v);
    if (alike) {
      size_t before = env.getMoves().size();
      unsigned iv = initLanes.getDepth();
      bool ok = true;
      for (unsigned d = iv; ok && d-- > s;)
        ok = isolate(initId, d);
      if (!ok || !moveLanes(initId, s, iv, c))
        rollBackTo(before);
      else
        fuseInit(id);
    }
  }
  unrollWindow(id);
  return true;
}

bool HeuristicRunner::moveLanes(StringRef id, unsigned s, unsigned v,
                                int64_t c) {
  auto at = [&](unsigned d) { return scopeLoc(*findOpAt(id), d); };
  unsigned split =
      int64_t(scopeAt(*findOpAt(id), s).getSize()) > target.vectorWidth;
  if (!apply(UnsetMappingOp::make(at(v))) ||
      (split && !apply(TileScopeOp::make(at(s), target.vectorWidth))))
    return false;
  for (unsigned d = s + split; d < v + split; ++d)
    if (!apply(SwapNestedScopesOp::make(at(d))))
      return false;
  if (!apply(VectorizeOp::make(at(v + split))))
    return false;
  if (!split)
    return apply(UnrollOp::make(at(v - 1)));
  unsigned tiled = int64_t(scopeAt(*findOpAt(id), s).getSize()) > c;
  if (tiled && !apply(TileScopeOp::make(at(s), c)))
    return false;
  for (unsigned d = s + tiled; d < v + tiled; ++d)
    if (!apply(SwapNestedScopesOp::make(at(d))))
      return false;
  return apply(UnrollOp::make(at(v - 1 + tiled))) &&
         apply(UnrollOp::make(at(v + tiled)));
}

bool HeuristicRunner::reusesLoadedVectors(Product p) {
  SmallVector<LinearForm> forms(p.op.getOut().getLinearForms());
  SmallVector<SmallVector<LinearForm>> loaded, broadcast;
  splitOperands(p, loaded, broadcast);
  for (auto s = dyn_cast<ScopeOp>(p.reduction->getParentOp()); s;
       s = dyn_cast<ScopeOp>(s->getParentOp()))
    if (s.getMapping() == Mapping::seq && usesVariable(forms, s.getDepth()) &&
        !forms.back().coeff(s.getDepth()) && !usedBy(loaded, s.getDepth()))
      return true;
  return false;
}

bool HeuristicRunner::streamProduct(StringRef id) {
  std::optional<Product> p = findProductAt(id);
  if (!p || !p->columns)
    return false;
  int64_t size = p->reduction.getSize(), group = 0;
  for (int64_t g : {kStreamRows, kStreamRows / 2, kStreamRows / 4})
    if (size % g == 0 && size > g) {
      group = g;
      break;
    }
  if (!group)
    return false;
  SmallVector<LinearForm> forms(p->op.getOut().getLinearForms());
  bool outerIndexesOutput = false;
  for (auto s = dyn_cast<ScopeOp>(p->reduction->getParentOp()); s;
       s = dyn_cast<ScopeOp>(s->getParentOp()))
    outerIndexesOutput |= usesVariable(forms, s.getDepth());
  unsigned k = p->reduction.getDepth();
  int64_t columns = p->columns.getSize();
  if (!outerIndexesOutput && target.threads > 1 && sharesOutEvenly(columns)) {
    if (!apply(TileScopeOp::make(scopeLoc(p->op, k + 1),
                                 columns / target.threads)) ||
        !apply(SwapNestedScopesOp::make(scopeLoc(*findOpAt(id), k))))
      return false;
    raiseAboveReductions(id, k);
    if (!(p = findProductAt(id)))
      return false;
    k = p->reduction.getDepth();
  }
  // k -> (k / group) x group; the group below the columns, unrolled.
  return apply(TileScopeOp::make(scopeLoc(p->op, k), group)) &&
         apply(SwapNestedScopesOp::make(scopeLoc(*findOpAt(id), k + 1))) &&
         apply(UnrollOp::make(scopeLoc(*findOpAt(id), k + 2)));
}

std::optional<HeuristicRunner::LoopsAboveLanes>
HeuristicRunner::loopsAboveLanes(ComputeOp op,
                                 function_ref<bool(ScopeOp)> stop) {
  auto vector = dyn_cast<ScopeOp>(op->getParentOp());
  if (!vector || vector.getMapping() != Mapping::vector)
    return std::nullopt;
  LoopsAboveLanes loops;
  for (auto s = dyn_cast<ScopeOp>(vector->getParentOp()); s;
       s = dyn_cast<ScopeOp>(s->getParentOp())) {
    if (stop(s)) {
      loops.at = s;
      break;
    }
    if (s.getMapping() == Mapping::unroll)
      continue;
    if (s.getMapping() != Mapping::seq)
      return std::nullopt;
    loops.vectors *= s.getSize();
    loops.depths.push_back(s.getDepth());
  }
  return loops;
}

int64_t HeuristicRunner::bytesPerRun(ComputeOp op, AccessAttr access,
                                     ScopeOp from) {
  SmallVector<int64_t> extents = getEnclosingExtents(op);
  for (unsigned d = 0; d < from.getDepth() && d < extents.size(); ++d)
    extents[d] = 1;
  BufferOp buffer = env.getKernel().lookupArray(access.getArray().getValue());
  __int128 bytes = buffer ? elementBytes(buffer) : 4;
  for (auto [dim, form] : llvm::enumerate(access.getLinearForms())) {
    if (form.getNumDims() > extents.size())
      extents.resize(form.getNumDims(), 1);
    auto [low, high] = form.range(extents);
    __int128 span = high - low + 1;
    if (buffer && dim < buffer.getShape().size())
      span = std::min<__int128>(span, buffer.getShape()[dim]);
    bytes = std::min<__int128>(bytes * span, int64_t(1) << 62);
  }
  return int64_t(bytes);
}

void HeuristicRunner::orderLoopsAroundTiles() {
  SmallVector<std::string> done;
  while (steps < kMaxSteps) {
    std::string id;
    unsigned from = 0, to = 0;
    env.getKernel().walk([&](ComputeOp op) {
      if (!id.empty() || op.getReduction() == Reduction::none ||
          llvm::is_contained(done, scopeLocation(op, 0)))
        return;
      auto vector = dyn_cast<ScopeOp>(op->getParentOp());
      if (!vector || vector.getMapping() != Mapping::vector)
        return;
      auto k = dyn_cast<ScopeOp>(vector->getParentOp());
      while (k && k.getMapping() == Mapping::unroll)
        k = dyn_cast<ScopeOp>(k->getParentOp());
      SmallVector<LinearForm> forms(op.getOut().getLinearForms());
      if (!k || k.getMapping() != Mapping::seq ||
          usesVariable(forms, k.getDepth()))
        return;
      done.push_back(scopeLocation(op, 0));
      // The perfect nest above K, innermost first.
      SmallVector<ScopeOp> nest;
      for (auto s = dyn_cast<ScopeOp>(k->getParentOp());
           s && s.getMapping() == Mapping::seq;
           s = dyn_cast<ScopeOp>(s->getParentOp())) {
        if (!nest.empty() && !llvm::hasSingleElement(s.getBodyBlock()))
          break;
        nest.push_back(s);
      }
      if (nest.size() < 2)
        return;
      // The bytes that the inputs using `s`'s variable read in one run
      // of `over` (at most 2^62).
      auto reads = [&](ScopeOp s, ScopeOp over) {
        __int128 total = 0;
        for (Attribute input : op.getInputs())
          if (auto access = dyn_cast<AccessAttr>(input))
            if (usesVariable(SmallVector<LinearForm>(access.getLinearForms()),
                             s.getDepth()))
              total += bytesPerRun(op, access, over);
        return int64_t(std::min<__int128>(total, int64_t(1) << 62));
      };
      ScopeOp inner = nest.front(), outer = nest.back(), best = inner;
      if (reads(inner, outer) <= kStagedBytes)
        return;
      int64_t least = reads(inner, k);
      for (ScopeOp s : ArrayRef(nest).drop_front())
        if (int64_t r = reads(s, k);
            r < least && reads(s, outer) <= kStagedBytes) {
          best = s;
          least = r;
        }
      if (best == inner)
        return;
      id = scopeLocation(op, 0);
      from = best.getDepth();
      to = inner.getDepth();
    });
    if (id.empty())
      return;
    size_t before = env.getMoves().size();
    for (unsigned d = from; d < to; ++d)
      if (!apply(SwapNestedScopesOp::make(scopeLoc(*findOpAt(id), d)))) {
        rollBackTo(before);
        break;
      }
  }
}

void HeuristicRunner::unrollAccumulators() {
  const int64_t accumulators = target.vectorRegisters * 3 / 4;
  SmallVector<std::string> done;
  while (steps < kMaxSteps) {
    std::string id;
    SmallVector<unsigned> depths;
    env.getKernel().walk([&](ComputeOp op) {
      if (!id.empty() || op.getReduction() == Reduction::none ||
          llvm::is_contained(done, scopeLocation(op, 0)))
        return;
      auto vector = dyn_cast<ScopeOp>(op->getParentOp());
      SmallVector<LinearForm> forms(op.getOut().getLinearForms());
      if (!vector || !forms.back().coeff(vector.getDepth()))
        return;
      std::optional<LoopsAboveLanes> loops = loopsAboveLanes(
          op, [&](ScopeOp s) { return !usesVariable(forms, s.getDepth()); });
      if (!loops || loops->depths.empty() || !loops->at ||
          loops->at.getMapping() != Mapping::seq ||
          loops->vectors > accumulators)
        return;
      id = scopeLocation(op, 0);
      depths = std::move(loops->depths);
    });
    if (id.empty())
      return;
    done.push_back(id);
    size_t before = env.getMoves().size();
    bool ok = true;
    for (unsigned d : depths)
      ok = ok && apply(UnrollOp::make(scopeLoc(*findOpAt(id), d)));
    if (!ok) {
      rollBackTo(before);
      continue;
    }
    unrollInit(id, accumulators);
  }
}

void HeuristicRunner::unrollInit(StringRef id, int64_t accumulators) {
  ComputeOp init = findInit(id);
  std::optional<ComputeOp> op = findOpAt(id);
  if (!init || !op)
    return;
  std::optional<LoopsAboveLanes> loops =
      loopsAboveLanes(init, [&](ScopeOp s) { return s->isAncestor(*op); });
  if (!loops || loops->depths.empty() || !loops->at ||
      loops->vectors > accumulators)
    return;
  size_t before = env.getMoves().size();
  for (unsigned d : loops->depths)
    if (!apply(UnrollOp::make(scopeLoc(findInit(id), d)))) {
      rollBackTo(before);
      return;
    }
}

void HeuristicRunner::peelInit(Product p, ScopeOp scope, int64_t covered,
                               std::string &id) {
  ComputeOp init = findInit(id);
  if (!init || !scope)
    return;
  MoveLocation at = scopeLoc(p.op, 0);
  SmallVector<LinearForm> forms(p.op.getOut().getLinearForms());
  SmallVector<LinearForm> initForms(init.getOut().getLinearForms());
  if (forms.size() != initForms.size())
    return;
  for (auto s = init->getParentOfType<ScopeOp>(); s;
       s = s->getParentOfType<ScopeOp>()) {
    if (s.getMapping() != Mapping::seq || s.getSize() != scope.getSize() ||
        llvm::any_of(llvm::seq<size_t>(0, forms.size()), [&](size_t i) {
          return initForms[i].coeff(s.getDepth()) !=
                 forms[i].coeff(scope.getDepth());
        }))
      continue;
    if (apply(PeelScopeOp::make(scopeLoc(init, s.getDepth()), covered))) {
      ++at.ordinal;
      id = at.str(LocationKind::Scope);
    }
    return;
  }
}

void HeuristicRunner::completeTile(StringRef id) {
  orderTile(id);
  unrollWindow(id);
  packPanel(id);
  fuseInit(id);
  stageOperands(id);
  unrollSteps(id);
}

void HeuristicRunner::unrollSteps(StringRef id) {
  std::optional<Product> q = findProductAt(id);
  if (!q || !q->columns || q->reduction.getMapping() != Mapping::seq)
    return;
  SmallVector<LinearForm> forms(q->op.getOut().getLinearForms());
  int64_t instances = 1;
  for (Operation *s = q->op->getParentOp()->getParentOp();
       s != q->reduction.getOperation(); s = s->getParentOp()) {
    auto scope = cast<ScopeOp>(s);
    if (!usesVariable(forms, scope.getDepth()))
      return;
    instances *= scope.getSize();
  }
  int64_t size = q->reduction.getSize();
  for (int64_t group : {4, 2})
    if (size % group == 0 && size >= 2 * group &&
        instances * group <= kMaxStepInstances) {
      unsigned k = q->reduction.getDepth();
      size_t before = env.getMoves().size();
      if (!apply(TileScopeOp::make(scopeLoc(q->op, k), group)) ||
          !apply(UnrollOp::make(scopeLoc(*findOpAt(id), k + 1))))
        rollBackTo(before);
      return;
    }
}

SmallVector<std::pair<int64_t, int64_t>>
HeuristicRunner::writtenBox(ComputeOp op) {
  SmallVector<int64_t> extents = getEnclosingExtents(op);
  SmallVector<std::pair<int64_t, int64_t>> box;
  for (const LinearForm &form : op.getOut().getLinearForms()) {
    auto [lo, hi] = form.range(extents);
    box.push_back({int64_t(lo), int64_t(hi)});
  }
  return box;
}

ComputeOp HeuristicRunner::findInit(StringRef id) {
  ComputeOp product = *findOpAt(id), init;
  StringRef array = product.getOut().getArray().getValue();
  SmallVector<std::pair<int64_t, int64_t>> box = writtenBox(product);
  env.getKernel().walk<WalkOrder::PreOrder>([&](ComputeOp op) {
    if (op == product)
      return WalkResult::interrupt();
    if (op.getReduction() != Reduction::none ||
        op.getOut().getArray().getValue() != array ||
        llvm::any_of(op.getInputs(), [&](Attribute input) {
          auto access = dyn_cast<AccessAttr>(input);
          return access && access.getArray().getValue() == array;
        }))
      return WalkResult::advance();
    SmallVector<std::pair<int64_t, int64_t>> written = writtenBox(op);
    bool overlaps = written.size() == box.size();
    for (size_t d = 0; overlaps && d < box.size(); ++d)
      overlaps = written[d].first <= box[d].second &&
                 box[d].first <= written[d].second;
    if (overlaps)
      init = op;
    return WalkResult::advance();
  });
  return init;
}

void HeuristicRunner::fuseInit(StringRef id) {
  std::optional<ComputeOp> product = findOpAt(id);
  ComputeOp init = findInit(id);
  if (!product || !init || !init->getParentOfType<ScopeOp>() ||
      steps >= kMaxSteps)
    return;
  // The initialization, by its ordinal among the writers of the array,
  // kept as it moves past other writers.
  MoveLocation at = scopeLoc(init, 0);
  auto findInitOp = [&] { return *findOpAt(at.str(LocationKind::Scope)); };
  // The scopes the two share, and the product's scopes below them that
  // index its output (above its reduction).
  SmallVector<ScopeOp> around;
  for (auto s = (*product)->getParentOfType<ScopeOp>(); s;
       s = s->getParentOfType<ScopeOp>())
    around.push_back(s);
  std::reverse(around.begin(), around.end());
  unsigned shared = 0;
  while (shared < around.size() && around[shared]->isAncestor(init))
    ++shared;
  SmallVector<LinearForm> forms(product->getOut().getLinearForms());
  SmallVector<ScopeOp> tiles;
  for (unsigned d = shared; d < around.size(); ++d) {
    ScopeOp s = around[d];
    if (!usesVariable(forms, d) || s.getMapping() == Mapping::unroll ||
        s.getMapping() == Mapping::vector)
      break;
    tiles.push_back(s);
  }
  if (tiles.empty())
    return;
  // An initialization that already shares a scope with an update of
  // the array (a depthwise convolution's row, zeroed and then summed
  // into) stays with it.
  for (auto s = init->getParentOfType<ScopeOp>(); s && s.getDepth() >= shared;
       s = s->getParentOfType<ScopeOp>()) {
    bool updated = false;
    s.walk([&](ComputeOp c) {
      updated |= c.getReduction() != Reduction::none &&
                 c.getOut().getArray() == init.getOut().getArray();
    });
    if (updated)
      return;
  }
  size_t before = env.getMoves().size();
  // The initialization alone in its scopes below the shared ones.
  unsigned initDepth = init->getParentOfType<ScopeOp>().getDepth();
  for (unsigned d = initDepth; d-- > shared;)
    if (!isolate(at.str(LocationKind::Scope), d)) {
      rollBackTo(before);
      return;
    }
  // Its scopes matched to the product's, outermost first: the scope of
  // the same output dimension, tiled so that its outer part steps like
  // the product's, brought up to the same depth.
  struct Level {
    int64_t size;
    Mapping mapping;
    unsigned dim;
    int64_t step;
  };
  SmallVector<Level> levels;
  for (ScopeOp t : tiles) {
    Level level{int64_t(t.getSize()), t.getMapping(), 0, 0};
    unsigned uses = 0;
    for (auto [dim, form] : llvm::enumerate(forms))
      if (int64_t c = form.coeff(t.getDepth())) {
        level.dim = dim;
        level.step = c;
        ++uses;
      }
    if (uses != 1)
      break;
    levels.push_back(level);
  }
  unsigned matched = 0;
  for (const Level &level : levels) {
    unsigned depth = shared + matched;
    ComputeOp op = findInitOp();
    SmallVector<LinearForm> in(op.getOut().getLinearForms());
    // The initialization's outermost scope at or below `depth` that
    // walks the dimension.
    ScopeOp z;
    for (unsigned d = depth; !z && d < in[level.dim].getNumDims(); ++d)
      if (in[level.dim].coeff(d))
        z = scopeAt(op, d);
    if (!z || z.getMapping() == Mapping::vector)
      break;
    int64_t e = in[level.dim].coeff(z.getDepth());
    bool alone = llvm::all_of(llvm::enumerate(in), [&](auto pair) {
      return pair.index() == level.dim || !pair.value().coeff(z.getDepth());
    });
    if (!alone || e <= 0 || level.step % e ||
        int64_t(z.getSize()) != level.size * (level.step / e))
      break;
    int64_t inner = level.step / e;
    unsigned zd = z.getDepth();
    if (inner > 1 && !apply(TileScopeOp::make(scopeLoc(op, zd), inner)))
      break;
    bool ok = true;
    for (unsigned d = zd; ok && d-- > depth;)
      ok = apply(SwapNestedScopesOp::make(scopeLoc(findInitOp(), d)));
    if (ok && level.mapping != scopeAt(findInitOp(), depth).getMapping())
      ok = level.mapping == Mapping::parallel &&
           apply(ParallelizeOp::make(scopeLoc(findInitOp(), depth)));
    if (!ok)
      break;
    ++matched;
  }
  // Joined level by level: the initialization's scope moved down among
  // its siblings until the product's follows it.
  unsigned joined = 0;
  for (; joined < matched; ++joined) {
    unsigned depth = shared + joined;
    ScopeOp z = scopeAt(findInitOp(), depth);
    ScopeOp t = scopeAt(*findOpAt(id), depth);
    if (!z || !t || z->getBlock() != t->getBlock() || !z->isBeforeInBlock(t))
      break;
    bool ok = true;
    while (ok && z->getNextNode() != t.getOperation()) {
      unsigned passed = 0;
      z->getNextNode()->walk([&](ComputeOp c) {
        passed += c.getOut().getArray().getValue() == at.name;
      });
      ok = apply(SwapSiblingOp::make(scopeLoc(findInitOp(), depth)));
      if (ok)
        at.ordinal += passed;
      z = scopeAt(findInitOp(), depth);
      t = scopeAt(*findOpAt(id), depth);
    }
    if (!ok || !apply(JoinScopesOp::make(scopeLoc(findInitOp(), depth))))
      break;
  }
  if (!joined) {
    rollBackTo(before);
    return;
  }
  // The initialization's own scopes left below: unrolled when short.
  // (By depth: each step replaces the kernel and its operations.)
  int64_t instances = 1;
  SmallVector<unsigned> rest;
  for (auto s = findInitOp()->getParentOfType<ScopeOp>();
       s && s.getDepth() >= shared + joined; s = s->getParentOfType<ScopeOp>())
    if (s.getMapping() == Mapping::seq) {
      rest.push_back(s.getDepth());
      instances *= s.getSize();
    }
  if (instances <= kMaxInitInstances)
    for (unsigned d : rest)
      (void)apply(UnrollOp::make(scopeLoc(findInitOp(), d)));
}

bool HeuristicRunner::tileRowsBelowK(StringRef id, unsigned r,
                                     int64_t rowsPerTile) {
  std::optional<Product> q = findProductAt(id);
  if (!q)
    return false;
  for (unsigned d = q->reduction.getDepth(); d-- > r;)
    if (!isolate(id, d))
      return false;
  // After the tile, the pair is at depth r + 1 and k one deeper than
  // now; each interchange sinks the pair by one, until it sits right
  // below k, where it is unrolled.
  unsigned kd = findProductAt(id)->reduction.getDepth() + 1;
  if (!apply(TileScopeOp::make(scopeLoc(*findOpAt(id), r), rowsPerTile)))
    return false;
  for (unsigned d = r + 1; d < kd; ++d)
    if (!apply(SwapNestedScopesOp::make(scopeLoc(*findOpAt(id), d))))
      return false;
  return apply(UnrollOp::make(scopeLoc(*findOpAt(id), kd)));
}

void HeuristicRunner::orderTile(StringRef id) {
  std::optional<Product> q = findProductAt(id);
  if (!q)
    return;
  // Found again after each interchange, which renumbers the variables.
  SmallVector<SmallVector<LinearForm>> loaded, broadcast;
  auto classify = [&] {
    loaded.clear();
    broadcast.clear();
    splitOperands(*findProductAt(id), loaded, broadcast);
  };
  classify();
  auto isW = [&](ScopeOp s) {
    return !usedBy(loaded, s.getDepth()) && usedBy(broadcast, s.getDepth());
  };
  SmallVector<ScopeOp> unrolled;
  for (Operation *s = q->op->getParentOp()->getParentOp();
       s != q->reduction.getOperation(); s = s->getParentOp())
    unrolled.push_back(cast<ScopeOp>(s));
  int64_t w = 1, x = 1;
  for (ScopeOp s : unrolled)
    (isW(s) ? w : x) *= s.getSize();
  if (w == 1 || x == 1 || w == x)
    return;
  bool wInside = w < x;
  // Bubble the inner group down, outermost first. (By depth: each
  // interchange replaces the kernel and its operations.)
  unsigned first = q->reduction.getDepth() + 1, count = unrolled.size();
  for (unsigned pass = 0; pass < count && steps < kMaxSteps; ++pass) {
    bool swapped = false;
    for (unsigned d = first; d + 1 < first + count; ++d) {
      ComputeOp op = *findOpAt(id);
      ScopeOp outer = scopeAt(op, d);
      auto inner = llvm::hasSingleElement(outer.getBodyBlock())
                       ? dyn_cast<ScopeOp>(outer.getBodyBlock().front())
                       : ScopeOp();
      if (!inner || isW(outer) != wInside || isW(inner) == wInside)
        continue;
      if (!apply(SwapNestedScopesOp::make(scopeLoc(op, d))))
        return;
      classify();
      swapped = true;
    }
    if (!swapped)
      return;
  }
}

void HeuristicRunner::raiseAboveReductions(StringRef id, unsigned d) {
  while (d > 0 && steps < kMaxSteps) {
    ComputeOp op = *findOpAt(id);
    Operation *tile = op;
    while (cast<ScopeOp>(tile->getParentOp()).getDepth() != d)
      tile = tile->getParentOp();
    auto above = dyn_cast<ScopeOp>(tile->getParentOp()->getParentOp());
    if (!above || above.getMapping() != Mapping::seq ||
        usesVariable(op.getOut().getLinearForms(), above.getDepth()))
      return;
    // What shares the scope with the tile (a convolution's peeled
    // columns) is split off first.
    unsigned up = above.getDepth();
    if (!llvm::hasSingleElement(above.getBodyBlock())) {
      size_t before = env.getMoves().size();
      if (!isolate(id, up)) {
        rollBackTo(before);
        return;
      }
    }
    if (!apply(SwapNestedScopesOp::make(scopeLoc(*findOpAt(id), up))))
      return;
    --d;
  }
}

void HeuristicRunner::packPanel(StringRef id) {
  std::optional<Product> q = findProductAt(id);
  if (!q || steps >= kMaxSteps)
    return;
  SmallVector<LinearForm> forms(q->op.getOut().getLinearForms());
  auto tiles = dyn_cast<ScopeOp>(q->reduction->getParentOp());
  auto rows = tiles ? dyn_cast<ScopeOp>(tiles->getParentOp()) : ScopeOp();
  if (!rows || tiles.getMapping() != Mapping::seq ||
      rows.getMapping() != Mapping::seq ||
      !llvm::hasSingleElement(rows.getBodyBlock()) ||
      !forms.back().coeff(tiles.getDepth()) ||
      forms.back().coeff(rows.getDepth()) ||
      !usesVariable(forms, rows.getDepth()))
    return;
  // The operand: read with k, without the rows.
  std::string array;
  for (Attribute input : q->op.getInputs()) {
    auto access = dyn_cast<AccessAttr>(input);
    if (!access)
      continue;
    SmallVector<LinearForm> in(access.getLinearForms());
    if (usesVariable(in, q->reduction.getDepth()) &&
        !usesVariable(in, rows.getDepth()) &&
        usesVariable(in, tiles.getDepth()))
      array = access.getArray().getValue().str();
  }
  if (array.empty())
    return;
  // An operand that stays near the core whole (relu_ffn's 112 x 112
  // weights, 49 KiB) gains nothing from panels, and their copies, made
  // again for every iteration of the scopes around the product, would
  // run in parallel regions of their own, thousands per call.
  if (arrayBytes(array) <= kCachedOperandBytes)
    return;
  // A short reduction (mm_k16's 16 steps for each output element, in
  // all the scopes that do not index it) makes a product bound by
  // writing its output, not by reading its operands: its row tiles stay
  // outermost, so that each thread writes whole rows of the output one
  // after the other. In the panel's order, column tiles outside the
  // rows, each register tile writes a strip of a few rows apart (6 x
  // 256 bytes, 96 KiB from one row to the next): 5-8 ms against 2.6 ms
  // for 4096 x 16 by 16 x 4096.
  if (visitsPerElement(q->op, forms) < kMinPanelReduction)
    return;
  // A panel that few rows read (the rows peeled off a product's tiles:
  // gemm's last 4 of 1024) would cost about as much to copy as they
  // take to multiply.
  int64_t rowsRead = 1;
  for (const LinearForm &form : forms)
    if (int64_t c = form.coeff(rows.getDepth()))
      rowsRead = std::max<int64_t>(rowsRead, c * rows.getSize());
  if (rowsRead < kMinPanelRows)
    return;
  if (blockRowsAndReduction(id, rows, tiles, q->reduction, array))
    return;
  unsigned r = rows.getDepth();
  size_t before = env.getMoves().size();
  bool ok = apply(SwapNestedScopesOp::make(scopeLoc(*findOpAt(id), r)));
  std::string name = ok ? addCopy(id, r + 1, array, "_panel") : "";
  ok &= !name.empty();
  if (ok)
    vectorizeCopy(name);
  // T's tiles not shared out evenly, or too few: parallel inside T,
  // where each panel gives the threads enough work (kMinParallelWork).
  std::optional<ComputeOp> op = findOpAt(id);
  if (ok && op && target.threads > 1) {
    ScopeOp outer = (*op)->getParentOfType<ScopeOp>();
    while (outer && outer.getDepth() > r)
      outer = outer->getParentOfType<ScopeOp>();
    bool anyParallel = false;
    for (ScopeOp s = outer; s; s = s->getParentOfType<ScopeOp>())
      anyParallel |= s.getMapping() == Mapping::parallel;
    ScopeOp inner = scopeAt(*op, r + 1);
    if (outer && !anyParallel && inner &&
        vectorInstances(inner) >= kMinParallelWork * target.threads &&
        !sharesOutEvenly(outer.getSize())) {
      ok = apply(ParallelizeOp::make(scopeLoc(*op, r + 1)));
      if (ok)
        (void)apply(ParallelizeOp::make(scopeLoc(writerOf(name), r + 1)));
    }
  }
  if (!ok)
    rollBackTo(before);
}

bool HeuristicRunner::blockRowsAndReduction(StringRef id, ScopeOp rows,
                                            ScopeOp tiles, ScopeOp reduction,
                                            StringRef array) {
  int64_t threads = target.threads;
  int64_t rowTiles = rows.getSize(), tileCount = tiles.getSize();
  int64_t k = reduction.getSize();
  if (threads < 2 || rows.getDepth() != 0 || sharesOutEvenly(tileCount) ||
      !sharesOutEvenly(rowTiles))
    return false;
  // Elements of the output that one tile of T and one tile of R span:
  // their variables' coefficients (a[{1}*4+.., {0}*64+..]: 64 and 4).
  std::optional<ComputeOp> op = findOpAt(id);
  if (!op)
    return false;
  SmallVector<LinearForm> forms(op->getOut().getLinearForms());
  int64_t width = forms.back().coeff(tiles.getDepth()), tileRows = 0;
  for (const LinearForm &form : forms)
    if (!tileRows && form.coeff(rows.getDepth()))
      tileRows = form.coeff(rows.getDepth());
  BufferOp buffer = bufferHolding(array);
  if (width <= 0 || tileRows <= 0 || !buffer)
    return false;
  int64_t bytes = elementBytes(buffer), kc = 1;
  while (2 * kc < k && 2 * kc * width * bytes <= kPanelSliceBytes)
    kc *= 2;
  while (kc > 1 && k % kc)
    kc /= 2;
  // A panel within an L1 cache (two slices) gains nothing from slices.
  if (kc < 8 || k * width * bytes <= 2 * kPanelSliceBytes ||
      rowTiles / threads * tileRows * kc * bytes > kCachedOperandBytes)
    return false;
  auto at = [&](unsigned d) { return scopeLoc(*findOpAt(id), d); };
  size_t before = env.getMoves().size();
  // B R' T K -> B R' T Ko Ki -> B R' Ko T Ki -> B Ko R' T Ki -> B Ko T R'
  // Ki.
  bool ok = apply(TileScopeOp::make(at(0), rowTiles / threads)) &&
            apply(ParallelizeOp::make(at(0))) &&
            apply(TileScopeOp::make(at(3), kc)) &&
            apply(SwapNestedScopesOp::make(at(2))) &&
            apply(SwapNestedScopesOp::make(at(1))) &&
            apply(SwapNestedScopesOp::make(at(2)));
  if (!ok) {
    rollBackTo(before);
    return false;
  }
  // Each thread reads its slices of the operand where they lie: copied
  // slice by slice, the whole operand is copied once per thread, which
  // costs more than the copy saves. Measured with 2 threads, 5-6 rounds
  // alternated (2026-11-29): swiglu 5.71-6.04 ms in place against
  // 5.77-6.39 copied; gemm_tail 9.0-9.3 us against 9.7-10.0; a 256 x
  // 4096 by 4096 x 448 product reading 448 of B's 1024 columns, whose
  // slice crowds 64 lines into each of 4 sets of the L1 cache,
  // 3.09-3.28 ms against 3.11-3.56.
  if (tileCount > 1)
    stageRowSlice(id);
  return true;
}

void HeuristicRunner::stageRowSlice(StringRef id) {
  std::optional<ComputeOp> op = findOpAt(id);
  if (!op)
    return;
  // B Ko T R' Ki: the operand read with R' and Ki, not T.
  ScopeOp ki = scopeAt(*op, 4), rows = scopeAt(*op, 3), tiles = scopeAt(*op, 2);
  if (!ki || !rows || !tiles)
    return;
  std::string row;
  SmallVector<LinearForm> forms;
  for (Attribute input : op->getInputs()) {
    auto access = dyn_cast<AccessAttr>(input);
    if (!access)
      continue;
    SmallVector<LinearForm> in(access.getLinearForms());
    StringRef array = access.getArray().getValue();
    if (!writerOf(array) && usesVariable(in, ki.getDepth()) &&
        usesVariable(in, rows.getDepth()) &&
        !usesVariable(in, tiles.getDepth())) {
      row = array.str();
      forms = in;
    }
  }
  if (row.empty() || maxLinesPerSet(*op, forms, bufferHolding(row),
                                    rows.getDepth()) <= kMaxLinesPerSet)
    return;
  std::string name = addCopy(id, tiles.getDepth(), row, "_slice");
  if (!name.empty())
    vectorizeCopy(name);
}

int64_t HeuristicRunner::maxLinesPerSet(ComputeOp op,
                                        ArrayRef<LinearForm> forms,
                                        BufferOp buffer, unsigned depth) {
  if (!buffer || forms.size() != buffer.getShape().size() ||
      llvm::any_of(buffer.getReuse(), [](int64_t r) { return r != 0; }))
    return 0;
  // The element strides of the buffer's dimensions.
  SmallVector<int64_t> strides(forms.size(), 1);
  for (unsigned d = forms.size(); d-- > 1;)
    strides[d - 1] = strides[d] * buffer.getShape()[d];
  // The flattened form: each scope's stride in elements.
  SmallVector<std::pair<int64_t, int64_t>> scopes; // (stride, size)
  int64_t base = 0, points = 1;
  for (unsigned d = 0; d < forms.size(); ++d)
    base += forms[d].constant * strides[d];
  for (ScopeOp s = op->getParentOfType<ScopeOp>(); s;
       s = s->getParentOfType<ScopeOp>()) {
    if (s.getDepth() < depth)
      break;
    int64_t stride = 0;
    for (unsigned d = 0; d < forms.size(); ++d)
      stride += forms[d].coeff(s.getDepth()) * strides[d];
    if (!stride)
      continue;
    scopes.push_back({stride, int64_t(s.getSize())});
    points *= s.getSize();
    if (points > (1 << 16))
      return 0;
  }
  int64_t bytes = elementBytes(buffer);
  llvm::DenseSet<int64_t> lines;
  SmallVector<int64_t> at(scopes.size(), 0);
  for (int64_t p = 0; p < points; ++p) {
    int64_t offset = base;
    for (auto [scope, i] : llvm::zip(scopes, at))
      offset += scope.first * i;
    lines.insert(offset * bytes / kLineBytes);
    for (unsigned i = 0; i < at.size() && ++at[i] == scopes[i].second; ++i)
      at[i] = 0;
  }
  int64_t perSet[kL1Sets] = {}, most = 0;
  for (int64_t line : lines)
    most = std::max(most, ++perSet[((line % kL1Sets) + kL1Sets) % kL1Sets]);
  return most;
}

std::string HeuristicRunner::addCopy(StringRef id, unsigned depth,
                                     StringRef array, StringRef suffix) {
  for (unsigned n = 0; n < 8; ++n) {
    std::string name = (array + suffix).str();
    if (n)
      name += std::to_string(n);
    std::optional<ComputeOp> op = findOpAt(id);
    if (op && apply(AddCopyOp::make(scopeLoc(*op, depth), array, name)))
      return name;
  }
  return {};
}

void HeuristicRunner::vectorizeCopy(StringRef name) {
  ComputeOp copy = writerOf(name);
  if (!copy)
    return;
  auto inner = cast<ScopeOp>(copy->getParentOp());
  int64_t width = target.vectorWidth, size = inner.getSize();
  unsigned d = inner.getDepth();
  if (size % width)
    return;
  if (size > width &&
      apply(TileScopeOp::make(scopeLoc(writerOf(name), d), width)))
    ++d;
  (void)apply(VectorizeOp::make(scopeLoc(writerOf(name), d)));
}

void HeuristicRunner::stageOperands(StringRef id) {
  std::optional<Product> q = findProductAt(id);
  if (!q || !q->reduction || steps >= kMaxSteps)
    return;
  auto rows = dyn_cast<ScopeOp>(q->reduction->getParentOp());
  auto tiles = rows ? dyn_cast<ScopeOp>(rows->getParentOp()) : ScopeOp();
  auto outer = tiles ? dyn_cast<ScopeOp>(tiles->getParentOp()) : ScopeOp();
  SmallVector<LinearForm> out(q->op.getOut().getLinearForms());
  if (!outer || rows.getMapping() != Mapping::seq ||
      tiles.getMapping() != Mapping::seq ||
      outer.getMapping() != Mapping::seq ||
      !out.back().coeff(tiles.getDepth()) ||
      !usesVariable(out, outer.getDepth()))
    return;
  unsigned k = q->reduction.getDepth(), t = tiles.getDepth();
  // (Each move replaces the kernel: the scopes found here are used
  // before the first one only.)
  int64_t tileCount = tiles.getSize();
  bool alone = llvm::hasSingleElement(outer.getBodyBlock());
  // The panel: an operand copied in T before the row tiles. The row
  // operand: read with k and S's variable, not T's.
  std::string panel, row;
  for (Attribute input : q->op.getInputs()) {
    auto access = dyn_cast<AccessAttr>(input);
    if (!access)
      continue;
    StringRef array = access.getArray().getValue();
    SmallVector<LinearForm> in(access.getLinearForms());
    ComputeOp writer = writerOf(array);
    if (writer && tiles->isProperAncestor(writer) && !rows->isAncestor(writer))
      panel = array.str();
    else if (!writer && usesVariable(in, k) && !usesVariable(in, t) &&
             usesVariable(in, outer.getDepth()))
      row = array.str();
  }
  int64_t staged = 0;
  if (!row.empty() && alone) {
    size_t before = env.getMoves().size();
    std::string name = addCopy(id, t, row, "_stage");
    staged = name.empty() ? 0 : arrayBytes(name);
    if (!name.empty() && staged <= kStagedBytes) {
      vectorizeCopy(name);
    } else {
      rollBackTo(before);
      staged = 0;
    }
  }
  if (panel.empty() || staged + arrayBytes(panel) * tileCount > kStagedBytes)
    return;
  size_t before = env.getMoves().size();
  bool ok = apply(AddDimOp::make(bufferLoc(panel), /*position=*/0, t)) &&
            apply(MaterializeDimsOp::make(bufferLoc(panel, 0))) &&
            apply(SplitScopeOp::make(scopeLoc(writerOf(panel), t))) &&
            apply(SwapNestedScopesOp::make(scopeLoc(writerOf(panel), t)));
  if (!ok)
    rollBackTo(before);
}

bool HeuristicRunner::unrollsAsWindow(ScopeOp k, ArrayRef<LinearForm> out,
                                      int64_t instances) {
  auto above = dyn_cast_or_null<ScopeOp>(k->getParentOp());
  return !usesVariable(out, k.getDepth()) && above &&
         int64_t(k.getSize()) <= kMaxWindow &&
         instances * int64_t(k.getSize()) <= kMaxWindowInstances &&
         above.getMapping() == Mapping::seq;
}

void HeuristicRunner::unrollWindow(StringRef id) {
  while (true) {
    std::optional<Product> q = findProductAt(id);
    if (!q)
      return;
    int64_t instances = 1;
    for (Operation *s = q->op->getParentOp()->getParentOp(); s != q->reduction;
         s = s->getParentOp())
      instances *= cast<ScopeOp>(s).getSize();
    ScopeOp k = q->reduction;
    SmallVector<LinearForm> out(q->op.getOut().getLinearForms());
    if (!unrollsAsWindow(k, out, instances) ||
        !llvm::hasSingleElement(
            cast<ScopeOp>(k->getParentOp()).getBodyBlock()) ||
        !apply(UnrollOp::make(scopeLoc(q->op, k.getDepth()))))
      return;
  }
}

std::optional<HeuristicRunner::Product>
HeuristicRunner::findNarrowProduct(ComputeOp op) {
  auto vector = dyn_cast<ScopeOp>(op->getParentOp());
  auto k = vector ? dyn_cast<ScopeOp>(vector->getParentOp()) : ScopeOp();
  if (!k || k.getMapping() != Mapping::seq)
    return std::nullopt;
  SmallVector<LinearForm> forms(op.getOut().getLinearForms());
  if (usesVariable(forms, k.getDepth()) ||
      forms.back().coeff(vector.getDepth()) != 1)
    return std::nullopt;
  return Product{op, dyn_cast<ScopeOp>(k->getParentOp()), k, ScopeOp()};
}

std::optional<HeuristicRunner::Product>
HeuristicRunner::findProductAt(StringRef id) {
  std::optional<ComputeOp> op = findOpAt(id);
  if (!op)
    return std::nullopt;
  if (std::optional<Product> narrow = findNarrowProduct(*op))
    return narrow;
  auto vector = dyn_cast<ScopeOp>((*op)->getParentOp());
  auto columns = vector ? dyn_cast<ScopeOp>(vector->getParentOp()) : ScopeOp();
  // Above the columns, unrolled scopes, then k.
  Operation *up = columns ? columns->getParentOp() : nullptr;
  while (auto s = dyn_cast_or_null<ScopeOp>(up)) {
    if (s.getMapping() != Mapping::unroll)
      break;
    up = s->getParentOp();
  }
  auto reduction = dyn_cast_or_null<ScopeOp>(up);
  if (!reduction)
    return std::nullopt;
  return Product{*op, dyn_cast<ScopeOp>(reduction->getParentOp()), reduction,
                 columns};
}

bool HeuristicRunner::isProduct(ComputeOp op) {
  if (op.getReduction() == Reduction::none)
    return false;
  SmallVector<LinearForm> forms(op.getOut().getLinearForms());
  unsigned indexed = 0;
  bool reduced = false;
  SmallVector<unsigned> columns;
  for (auto s = op->getParentOfType<ScopeOp>(); s;
       s = s->getParentOfType<ScopeOp>()) {
    bool used = usesVariable(forms, s.getDepth());
    indexed += used;
    reduced |= !used;
    if (forms.back().coeff(s.getDepth()))
      columns.push_back(s.getDepth());
  }
  bool reused = llvm::any_of(op.getInputs(), [&](Attribute input) {
    auto access = dyn_cast<AccessAttr>(input);
    if (!access)
      return false;
    SmallVector<LinearForm> in(access.getLinearForms());
    return llvm::none_of(columns,
                         [&](unsigned d) { return usesVariable(in, d); });
  });
  return reduced && indexed >= 2 && reused;
}

bool HeuristicRunner::hostsThreads(StringRef array, unsigned dim) {
  if (target.threads < 2)
    return false;
  // The first access to the array, and the variable of its index there.
  ScopeOp scope;
  bool found = false;
  forEachAccess(env.getKernel(), [&](ComputeOp op, AccessAttr access, bool) {
    if (found || access.getArray().getValue() != array ||
        access.getLinearForms().size() <= dim)
      return;
    found = true;
    const LinearForm &form = access.getLinearForms()[dim];
    for (unsigned d = 0; d < form.getNumDims(); ++d)
      if (form.coeff(d))
        scope = scopeAt(op, d);
  });
  // A scope that parallelizeBlocks splits gets slots per block anyway.
  if (!scope || int64_t(scope.getSize()) < target.threads ||
      splitsIntoBlocks(scope))
    return false;
  for (auto s = scope->getParentOfType<ScopeOp>(); s;
       s = s->getParentOfType<ScopeOp>())
    if (int64_t(s.getSize()) >= target.threads && !splitsReductionInside(s) &&
        (s.getMapping() == Mapping::parallel || !hasParallel(s)))
      return false;
  return true;
}

bool HeuristicRunner::vectorsRunAlong(StringRef array) {
  bool found = false;
  env.getKernel().walk([&](ComputeOp op) {
    auto scope = dyn_cast<ScopeOp>(op->getParentOp());
    if (found || !scope || !onlyOperations(scope))
      return;
    auto along = [&](Attribute attr) {
      auto access = dyn_cast<AccessAttr>(attr);
      return access && access.getArray().getValue() == array &&
             !access.getLinearForms().empty() &&
             access.getLinearForms().back().coeff(scope.getDepth()) == 1;
    };
    found = along(op.getOut()) || llvm::any_of(op.getInputs(), along);
  });
  return found;
}
