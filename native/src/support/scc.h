// Strongly connected components of a directed graph (Tarjan, iterative: deep rule graphs must
// not overflow the native stack).
#pragma once

#include <cstdint>
#include <vector>

namespace xg2 {

// Components of the graph with adjacency lists `adj`, in reverse topological order of the
// condensation: every component comes after the components it has edges to (callees first).
std::vector<std::vector<int32_t>> StronglyConnectedComponents(const std::vector<std::vector<int32_t>>& adj);

}  // namespace xg2
