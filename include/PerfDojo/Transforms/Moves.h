//===- Moves.h - The move catalogue as free functions ------------*- C++ -*-===//
//
// Every move is a pair of free functions: `canX` is the pure legality check
// (failure and a reason when it refuses) and `x` applies the move through the
// rewriter, assuming the check passed. The Move registry, the passes, the
// search and the bindings only call these.
//
//===----------------------------------------------------------------------===//

#ifndef PERFDOJO_TRANSFORMS_MOVES_H
#define PERFDOJO_TRANSFORMS_MOVES_H

#include "PerfDojo/Dialect/PerfDojo/PerfDojo.h"
#include "mlir/IR/PatternMatch.h"
#include <string>

namespace mlir {
namespace perfdojo {

//===- Fusion and fission -------------------------------------------------===//

/// Fuses `first` with the scope right after it (same size and mapping) into
/// one scope whose body runs the first body, then the second.
LogicalResult canJoinScopes(ScopeOp first, std::string &reason);
void joinScopes(RewriterBase &rewriter, ScopeOp first);

/// Splits `scope` after its child that holds `op`: the children up to that
/// one stay, the rest move to a new scope of the same size right after.
LogicalResult canSplitScope(ScopeOp scope, ComputeOp op, std::string &reason);
ScopeOp splitScope(RewriterBase &rewriter, ScopeOp scope, ComputeOp op);

//===- Reordering ---------------------------------------------------------===//

/// Interchanges `outer` with the only scope in its body.
LogicalResult canSwapNestedScopes(ScopeOp outer, std::string &reason);
void swapNestedScopes(RewriterBase &rewriter, ScopeOp outer);

/// Exchanges `first` (a scope or an operation) with its next sibling.
LogicalResult canSwapWithNext(Operation *first, std::string &reason);
void swapWithNext(RewriterBase &rewriter, Operation *first);

//===- Tiling -------------------------------------------------------------===//

/// Splits a scope of size N into N/tile scopes of `tile` nested inside;
/// `tile` must divide N. Index {d} becomes {d}*tile+{d+1}.
LogicalResult canTileScope(ScopeOp scope, int64_t tile, std::string &reason);
ScopeOp tileScope(RewriterBase &rewriter, ScopeOp scope, int64_t tile);

/// Tiling's inverse: merges `outer` with the only scope in its body when
/// every index uses them as {d}*inner+{d+1}.
LogicalResult canMergeScopes(ScopeOp outer, std::string &reason);
void mergeScopes(RewriterBase &rewriter, ScopeOp outer);

/// Splits a scope of size N into one of its first `count` iterations and
/// one of the other N-count, run right after it (`{d}` becomes
/// `{d}+count` there). The order of every instance is unchanged.
LogicalResult canPeelScope(ScopeOp scope, int64_t count, std::string &reason);
ScopeOp peelScope(RewriterBase &rewriter, ScopeOp scope, int64_t count);
/// The counts worth listing: for each power-of-two tile up to 64 that does
/// not divide the size, its largest multiple below the size; and half the
/// size.
SmallVector<int64_t> getPeelChoices(ScopeOp scope);

/// Peeling's inverse: joins `scope` with the next sibling scope when that
/// one's body is this one's with `{d}` shifted by this scope's size.
LogicalResult canUnpeelScope(ScopeOp scope, std::string &reason);
void unpeelScope(RewriterBase &rewriter, ScopeOp scope);

//===- Mappings -----------------------------------------------------------===//

/// Gives a sequential `scope` the mapping `mapping` (unroll, parallel,
/// vector, grid, block or warp).
LogicalResult canSetMapping(ScopeOp scope, Mapping mapping,
                            std::string &reason);
/// Makes a mapped scope sequential again.
LogicalResult canUnsetMapping(ScopeOp scope, std::string &reason);
void setMapping(RewriterBase &rewriter, ScopeOp scope, Mapping mapping);

//===- Buffers ------------------------------------------------------------===//

/// Stores only one element of dimension `dim` of a temporary (`:1`), or
/// materializes it again. Both are legal when every access indexes the
/// dimension by the variable `{e}` of one sequential or unrolled scope S that
/// encloses all accesses to the buffer, and no element is shared between two
/// executions of S.
LogicalResult canReuseDim(BufferOp buffer, unsigned dim, bool reuse,
                          std::string &reason);
void reuseDim(RewriterBase &rewriter, BufferOp buffer, unsigned dim,
              bool reuse);

/// Moves a temporary to another storage location.
LogicalResult canSetLocation(BufferOp buffer, BufferLocation location,
                             std::string &reason);
void setLocation(RewriterBase &rewriter, BufferOp buffer,
                 BufferLocation location);

/// Exchanges dimensions `dim` and `dim+1` of a temporary's layout, rewriting
/// every access.
LogicalResult canPermuteDims(BufferOp buffer, unsigned dim,
                             std::string &reason);
void permuteDims(RewriterBase &rewriter, BufferOp buffer, unsigned dim);

/// Grows dimension `dim` of a temporary by `amount` unused elements
/// (`grow`), or shrinks it by `amount` when no access reaches them.
LogicalResult canPadDim(BufferOp buffer, unsigned dim, int64_t amount,
                        bool grow, std::string &reason);
void padDim(RewriterBase &rewriter, BufferOp buffer, unsigned dim,
            int64_t amount, bool grow);
/// Splits dimension `dim` of a temporary (N elements) into two of N/inner
/// and inner, index i becoming (i div inner, i mod inner): legal when the
/// dimension is not reused and every access's index of it is
/// inner * P + Q with Q within 0 .. inner-1 over its scopes' ranges.
LogicalResult canSplitDim(BufferOp buffer, unsigned dim, int64_t inner,
                          std::string &reason);
void splitDim(RewriterBase &rewriter, BufferOp buffer, unsigned dim,
              int64_t inner);
/// The inner sizes split_dim offers at `dim`: the coefficients of the
/// accesses' indices there that divide the dimension (a tile's stride).
SmallVector<int64_t> getSplitDimSizes(BufferOp buffer, unsigned dim);
/// Joins dimensions `dim` and `dim+1` of a temporary (A and B elements)
/// into one of A*B indexed B * i + j; legal when neither is reused.
LogicalResult canJoinDims(BufferOp buffer, unsigned dim, std::string &reason);
void joinDims(RewriterBase &rewriter, BufferOp buffer, unsigned dim);
/// Inserts at `position` a dimension as large as the scope at `depth` that
/// encloses every access to the buffer, indexed by `{depth}` and stored as
/// one element (`:1`): the storage does not change.
LogicalResult canAddDim(BufferOp buffer, unsigned position, unsigned depth,
                        std::string &reason);
void addDim(RewriterBase &rewriter, BufferOp buffer, unsigned position,
            unsigned depth);
/// The scope depths whose scope encloses every access to the buffer.
SmallVector<unsigned> getCommonScopeDepths(BufferOp buffer);

/// Removes dimension `dim` of a temporary when it stores one element (its
/// size or its reuse factor is 1): every index of it reads the same slot.
LogicalResult canRemoveDim(BufferOp buffer, unsigned dim, std::string &reason);
void removeDim(RewriterBase &rewriter, BufferOp buffer, unsigned dim);

/// How many trailing elements of dimension `dim` no access reaches.
int64_t getUnusedTail(BufferOp buffer, unsigned dim);

//===- Sharing storage ---------------------------------------------------===//

/// Stores temporary `array` (alone in a buffer of its name) in `buffer` too,
/// deleting its own buffer. Legal when both are temporaries of the same
/// type, shape, reuse and location, and every top-level scope touching one
/// comes before every top-level scope touching the other.
LogicalResult canReuseBuffer(BufferOp buffer, StringRef array,
                             std::string &reason);
void reuseBuffer(RewriterBase &rewriter, BufferOp buffer, StringRef array);
/// The temporaries that are alone in their buffer, other than `buffer`.
SmallVector<std::string> getReuseBufferCandidates(BufferOp buffer);

/// reuse_buffer's inverse: gives `array` its own buffer again, declared
/// right after `buffer`. Legal when the lifetimes are disjoint as above and
/// the later arrays overwrite the whole buffer before reading it.
LogicalResult canSplitBuffer(BufferOp buffer, StringRef array,
                             std::string &reason);
void splitBuffer(RewriterBase &rewriter, BufferOp buffer, StringRef array);

//===- Copies -------------------------------------------------------------===//

/// Inserts right before `scope` a nest copying the tile of `array` that the
/// scope reads into a new temporary `name`, and makes the scope read the
/// copy. Legal when nothing in the scope writes the array's buffer, every
/// read shares one position outside the scope, and no scope around it is
/// concurrent; an array that is not an input must be read as a whole box.
LogicalResult canAddCopy(ScopeOp scope, StringRef array, StringRef name,
                         std::string &reason);
void addCopy(RewriterBase &rewriter, ScopeOp scope, StringRef array,
             StringRef name);
/// The arrays `scope` reads, in program order of their first read.
SmallVector<std::string> getCopyableArrays(ScopeOp scope);
/// `array` + "_c", numbered when taken.
std::string getFreshCopyName(KernelOp kernel, StringRef array);

/// add_copy's inverse: `buffer` is written by one copy nest of a source
/// array, read only right after it; the readers read the source again.
LogicalResult canRemoveCopy(BufferOp buffer, std::string &reason);
void removeCopy(RewriterBase &rewriter, BufferOp buffer);

/// Makes the copy `buffer[..] = array[s]` compute the element instead, as
/// the one element-wise operation writing `array` does, from its operands
/// at s. Legal when that operation writes every element of `array` once,
/// in a nest before the copy's, and nothing in its nest, the copy's or any
/// between writes a buffer it reads.
LogicalResult canRecompute(BufferOp buffer, std::string &reason);
void recompute(RewriterBase &rewriter, BufferOp buffer);

/// recompute's inverse: the operation writing `buffer`, which computes an
/// element of `array` as its writer does, copies the element instead.
LogicalResult canReload(BufferOp buffer, StringRef array, std::string &reason);
void reload(RewriterBase &rewriter, BufferOp buffer, StringRef array);
/// The arrays that operations of the kind writing `buffer` write.
SmallVector<std::string> getReloadCandidates(BufferOp buffer);

//===- Reductions ---------------------------------------------------------===//

/// Gives each iteration of `scope` S (K iterations at depth d) its own
/// partial result of the reduction `op`, `out[F] op= expr`, alone in S:
/// a new temporary `name` of out's shape and K, set to the identity of
/// `op` by a new scope of K right before S; `op` updates `name[F,{d}]`
/// instead; a new scope of K right after S combines the partials into
/// `out[F]`. Legal when S and the scopes between it and `op` are
/// sequential or unrolled, F uses only the scopes around S, and `op` reads
/// nothing of out's buffer. The updates are reassociated.
LogicalResult canSplitReduction(ScopeOp scope, ComputeOp op, StringRef name,
                                std::string &reason);
void splitReduction(RewriterBase &rewriter, ScopeOp scope, ComputeOp op,
                    StringRef name);
/// `out` + "_part", numbered from 2 when taken.
std::string getFreshPartialName(KernelOp kernel, StringRef out);

/// split_reduction's inverse: `buffer` holds the partial results of a
/// split reduction, accessed only by its three consecutive sibling scopes
/// (initialization, partial reduction, combine); the reduction updates the
/// combined element again, and the other two scopes and the buffer go.
LogicalResult canJoinReduction(BufferOp buffer, std::string &reason);
void joinReduction(RewriterBase &rewriter, BufferOp buffer);

//===- Names --------------------------------------------------------------===//

/// True if a buffer or an array of `kernel` is named `name`.
bool isNameTaken(KernelOp kernel, StringRef name);

} // namespace perfdojo
} // namespace mlir

#endif // PERFDOJO_TRANSFORMS_MOVES_H
