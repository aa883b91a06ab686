//===- SearchPass.td - pd-search: tuning as a pass ---------*- tablegen -*-===//
//
// Apart from Passes.td: pd-search JIT-compiles and times candidates, so it
// lives in the tuning library, which the dialect plugin does not link.
//
//===----------------------------------------------------------------------===//

#ifndef PERFDOJO_SEARCH_TUNING_SEARCHPASS_TD
#define PERFDOJO_SEARCH_TUNING_SEARCHPASS_TD

include "mlir/Pass/PassBase.td"

def SearchPass : Pass<"pd-search", "::mlir::ModuleOp"> {
  let summary = "Search for the fastest program computing each kernel (as "
                "pd-tune) and put it in the kernel's place";
  let description = [{
    Runs a search strategy of `pd-tune` on every `perfdojo.kernel` of the
    module: candidates are compiled for this CPU, run on seeded inputs,
    checked against the kernel's own outputs (within `tolerance`) and
    timed. The best program found replaces the kernel, its moves recorded
    in the kernel's history (so `--pd-undo` and replays work as after
    `--pd-apply`), and a remark summarizes the search. With `db`, results
    are read from and written to a tuning database, keyed by the kernel,
    this CPU and the toolchain. An unknown strategy, graph or start, a
    database that does not open, or a best sequence that does not replay
    fails the pass. Strategy `rl` plays a policy trained by `pd-train`
    (`policy=FILE`; tools that do not link the policy library, such as the
    dialect plugin, refuse it).

    ```sh
    pd-opt k.mlir --pd-search="strategy=anneal budget=200 threads=4"
    # remark: pd-search anneal: 200 evaluations, 3.1 ms -> 0.42 ms (7 moves)
    ```
  }];
  let options = [
    Option<"strategy", "strategy", "std::string", "\"anneal\"",
           "naive, greedy, expert, random, anneal or rl">,
    Option<"policy", "policy", "std::string", "\"\"",
           "rl: the policy file pd-train wrote">,
    Option<"horizon", "horizon", "unsigned", "8",
           "rl: moves of the greedy rollout at most">,
    Option<"explore", "explore", "double", "0.25",
           "rl: share of random expansions after the rollout (0 to 1)">,
    Option<"adaptiveExplore", "adaptive-explore", "bool", "true",
           "rl: outside that share, the policy's best, its best place of a "
           "random move or a random draw, by how often each has paid on "
           "this kernel (false: the policy's best)">,
    Option<"policyRank", "policy-rank", "std::string", "\"gain\"",
           "rl: the sampler's best next program by the policy's gain head "
           "(gain) or its Q-values (value)">,
    Option<"policyUpdates", "policy-updates", "unsigned", "0",
           "rl: gradient steps on the search's own measurements after each "
           "(0: the policy as trained)">,
    Option<"graph", "graph", "std::string", "\"edges\"",
           "edges or sequences">,
    Option<"startFrom", "start-from", "std::string", "\"expert\"",
           "heuristic random and anneal start from">,
    Option<"budget", "budget", "unsigned", "100", "candidates to evaluate">,
    Option<"timeBudget", "time-budget", "double", "0",
           "seconds (0: no limit)">,
    Option<"threads", "threads", "unsigned",
           "std::max(1u, std::thread::hardware_concurrency())",
           "threads of parallel scopes">,
    Option<"repetitions", "repetitions", "unsigned", "3",
           "timed runs per candidate">,
    Option<"tolerance", "tolerance", "double", "2e-3",
           "accepted difference from the kernel's outputs">,
    Option<"seed", "seed", "uint64_t", "1", "seed of the search">,
    Option<"db", "db", "std::string", "\"\"",
           "tuning database (none if empty)">,
    Option<"vectorWidth", "vector-width", "int64_t", "0",
           "CPU vector lanes the heuristics write for: 16, 8 or 4 (0: this "
           "CPU's)">,
    Option<"allowSlower", "allow-slower", "bool", "false",
           "a heuristic's program even when it is slower than the kernel">
  ];
}

#endif // PERFDOJO_SEARCH_TUNING_SEARCHPASS_TD
