#include "automata/any_order_states.h"

#include <algorithm>
#include <climits>
#include <cstring>

#include "xg2/errors.h"

namespace xg2 {

AnyOrderStates::~AnyOrderStates() {
  if (!chunks_) return;
  for (int i = 0; i < kMaxChunks; ++i) delete[] chunks_[i].load(std::memory_order_relaxed);
}

void AnyOrderStates::Prepare(Node* node) {
  Node& n = *node;
  n.num_once = n.spec.num_once();
  n.words = std::max(1, (n.num_once + 63) / 64);
  // Beyond this count nothing changes: min_count is met and max_count (if any) is the edge.
  int64_t cap = n.spec.max_count >= 0 ? n.spec.max_count : std::max<int64_t>(n.spec.min_count, 1);
  n.count_cap = static_cast<int32_t>(std::min<int64_t>(std::max<int64_t>(cap, 1), INT32_MAX / 2));
  n.awaited_bits = 0;
  n.productive_once.assign(n.words, 0);
  n.num_productive_once = 0;
  n.repeatable = false;
  n.presence.clear();
  for (const AnyOrderPresenceRule& r : n.spec.presence) {
    Node::PresenceMasks pm{r.member >> 6, 1ull << (r.member & 63), {}};
    for (const auto& alt : r.any_of) {
      std::vector<uint64_t> mask(n.words, 0);
      for (int32_t m : alt) mask[m >> 6] |= 1ull << (m & 63);
      pm.any_of.push_back(std::move(mask));
    }
    n.presence.push_back(std::move(pm));
  }
  for (int32_t i = 0; i < static_cast<int32_t>(n.first.size()); ++i) {
    if (n.first[i] >= 0 && i < n.num_once) {
      n.productive_once[i >> 6] |= 1ull << (i & 63);
      ++n.num_productive_once;
    }
    if (n.first[i] >= 0 && i >= n.num_once) n.repeatable = true;
    for (RuleId r : {n.first[i], n.rest[i]}) {
      if (r >= 0) n.awaited_bits |= 1ull << (r & 63);
    }
  }
}

bool AnyOrderStates::StartLive(const Node& n) {
  if (n.presence.empty()) return Live(n, Facts{0, n.spec.num_required, n.num_productive_once});
  return LiveAfter(n, Facts{0, n.spec.num_required, n.num_productive_once}, nullptr, -1);
}

void AnyOrderStates::Init(std::vector<Node> nodes, int32_t base, int32_t num_rules) {
  nodes_ = std::move(nodes);
  base_ = base;
  node_of_rule_.assign(num_rules, -1);
  member_of_rule_.assign(num_rules, Member());
  int64_t next = base;
  for (size_t k = 0; k < nodes_.size(); ++k) {
    Node& n = nodes_[k];
    Prepare(&n);
    n.start_state = static_cast<int32_t>(next++);
    n.any_state = static_cast<int32_t>(next++);
    node_of_rule_[n.rule] = static_cast<int32_t>(k);
    for (int32_t i = 0; i < static_cast<int32_t>(n.first.size()); ++i) {
      for (int side = 0; side < 2; ++side) {
        RuleId r = side == 0 ? n.first[i] : n.rest[i];
        if (r < 0) continue;
        member_of_rule_[r] = Member{static_cast<int32_t>(k), i, side == 1};
      }
    }
  }
  if (next > INT32_MAX / 2) throw Error(ErrorKind::kLimitExceeded, "too many automaton states");
  made_base_ = static_cast<int32_t>(next);
  chunks_.reset(new std::atomic<Entry*>[kMaxChunks]);
  for (int i = 0; i < kMaxChunks; ++i) chunks_[i].store(nullptr, std::memory_order_relaxed);
}

AnyOrderStates::Facts AnyOrderStates::FactsOf(const Node& n, int32_t v) const {
  if (v == n.start_state) return Facts{0, n.spec.num_required, n.num_productive_once};
  const Entry& e = EntryOf(v);
  Facts f{e.count, n.spec.num_required, n.num_productive_once};
  for (int32_t w = 0; w < n.words; ++w) {
    uint64_t required = 0;
    int32_t lo = w * 64;
    if (n.spec.num_required > lo) {
      int32_t k = std::min(64, n.spec.num_required - lo);
      required = k == 64 ? ~0ull : (1ull << k) - 1;
    }
    f.missing -= __builtin_popcountll(e.bits[w] & required);
    f.unseen -= __builtin_popcountll(e.bits[w] & n.productive_once[w]);
  }
  return f;
}

bool AnyOrderStates::IsFinal(int32_t v) const {
  const Node& n = NodeOf(v);
  if (v == n.any_state) return true;
  if (v == n.start_state) return n.spec.num_required == 0 && n.spec.min_count == 0;
  const Entry& e = EntryOf(v);
  if (e.count < n.spec.min_count) return false;
  // The required members are the first bits.
  int32_t full = n.spec.num_required >> 6;
  for (int32_t w = 0; w < full; ++w) {
    if (e.bits[w] != ~0ull) return false;
  }
  int32_t tail = n.spec.num_required & 63;
  if (tail != 0) {
    uint64_t need = (1ull << tail) - 1;
    if ((e.bits[full] & need) != need) return false;
  }
  return PresenceHolds(n, e.bits.get());
}

namespace {

bool SubsetOf(const std::vector<uint64_t>& a, const uint64_t* b) {
  for (size_t w = 0; w < a.size(); ++w) {
    if (a[w] & ~b[w]) return false;
  }
  return true;
}

}  // namespace

bool AnyOrderStates::PresenceHolds(const Node& n, const uint64_t* seen) {
  for (const auto& r : n.presence) {
    if (!(seen[r.word] & r.bit)) continue;
    if (std::none_of(r.any_of.begin(), r.any_of.end(), [&](const auto& alt) { return SubsetOf(alt, seen); }))
      return false;
  }
  return true;
}

bool AnyOrderStates::PresenceLive(const Node& n, const uint64_t* seen, int64_t count, uint64_t* reach) {
  for (int32_t w = 0; w < n.words; ++w) reach[w] = n.productive_once[w] | seen[w];
  for (bool changed = true; changed;) {
    changed = false;
    for (const auto& r : n.presence) {
      if (!(reach[r.word] & r.bit)) continue;
      if (std::any_of(r.any_of.begin(), r.any_of.end(), [&](const auto& alt) { return SubsetOf(alt, reach); }))
        continue;
      if (seen[r.word] & r.bit) return false;
      reach[r.word] &= ~r.bit;
      changed = true;
    }
  }
  int64_t added = 0;
  for (int32_t i = 0; i < n.num_once; ++i) {
    const bool in_reach = reach[i >> 6] >> (i & 63) & 1;
    if (i < n.spec.num_required && !in_reach) return false;
    added += in_reach && !(seen[i >> 6] >> (i & 63) & 1);
  }
  return n.repeatable || count + added >= n.spec.min_count;
}

bool AnyOrderStates::LiveAfter(const Node& n, const Facts& f, const uint64_t* bits, int32_t i) {
  if (n.presence.empty()) return Live(n, After(n, f, i));
  // Called per candidate member while the parser predicts: the two sets live on the stack
  // for objects of up to 256 once-only members.
  constexpr int32_t kInlineWords = 4;
  uint64_t inline_words[2 * kInlineWords];
  std::vector<uint64_t> heap_words;
  uint64_t* seen = inline_words;
  if (n.words > kInlineWords) {
    heap_words.resize(2 * static_cast<size_t>(n.words));
    seen = heap_words.data();
  }
  uint64_t* reach = seen + n.words;
  std::fill(seen, seen + n.words, 0);
  if (bits != nullptr) std::copy(bits, bits + n.words, seen);
  if (i >= 0 && i < n.num_once) seen[i >> 6] |= 1ull << (i & 63);
  return PresenceLive(n, seen, f.count + (i >= 0 ? 1 : 0), reach);
}

int32_t AnyOrderStates::Next(int32_t v, RuleId rule) const {
  if (rule < 0 || rule >= static_cast<RuleId>(member_of_rule_.size())) return -1;
  const Member m = member_of_rule_[rule];
  const int32_t node = NodeIndex(v);
  if (m.node != node) return -1;
  const Node& n = nodes_[node];
  if (v == n.any_state) return v;
  std::vector<uint64_t> bits(n.words, 0);
  int32_t count = 0;
  if (v == n.start_state) {
    if (m.rest || n.spec.max_count == 0) return -1;
  } else {
    if (!m.rest) return -1;
    const Entry& e = EntryOf(v);
    if (n.spec.max_count >= 0 && e.count >= n.spec.max_count) return -1;
    std::memcpy(bits.data(), e.bits.get(), sizeof(uint64_t) * n.words);
    count = e.count;
  }
  if (m.index < n.num_once) {
    uint64_t bit = 1ull << (m.index & 63);
    if (bits[m.index >> 6] & bit) return -1;
    bits[m.index >> 6] |= bit;
  }
  if (!LiveAfter(n, FactsOf(n, v), v == n.start_state ? nullptr : EntryOf(v).bits.get(), m.index)) return -1;
  return Intern(node, std::min(count + 1, n.count_cap), bits.data());
}

int32_t AnyOrderStates::Intern(int32_t node, int32_t count, const uint64_t* bits) const {
  const int32_t words = nodes_[node].words;
  std::string key(8 + 8 * static_cast<size_t>(words), '\0');
  std::memcpy(&key[0], &node, 4);
  std::memcpy(&key[4], &count, 4);
  std::memcpy(&key[8], bits, 8 * static_cast<size_t>(words));
  std::lock_guard<std::mutex> lock(mu_);
  auto it = index_.find(key);
  if (it != index_.end()) return it->second;
  const int32_t k = num_made_;
  if (k >= (kMaxChunks << kChunkBits) || static_cast<int64_t>(made_base_) + k >= INT32_MAX) {
    throw Error(ErrorKind::kLimitExceeded, "too many any-order object states (" + std::to_string(k) + ")");
  }
  Entry* chunk = chunks_[k >> kChunkBits].load(std::memory_order_relaxed);
  if (chunk == nullptr) {
    chunk = new Entry[1u << kChunkBits];
    chunks_[k >> kChunkBits].store(chunk, std::memory_order_release);
  }
  Entry& e = chunk[k & ((1u << kChunkBits) - 1)];
  e.node = node;
  e.count = count;
  e.bits.reset(new uint64_t[words]);
  std::memcpy(e.bits.get(), bits, 8 * static_cast<size_t>(words));
  ++num_made_;
  const int32_t id = made_base_ + k;
  index_.emplace(std::move(key), id);
  return id;
}

int64_t AnyOrderStates::num_made() const {
  std::lock_guard<std::mutex> lock(mu_);
  return num_made_;
}

size_t AnyOrderStates::MemoryBytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t bytes = nodes_.size() * sizeof(Node) + member_of_rule_.size() * sizeof(Member);
  for (const Node& n : nodes_) {
    bytes += (n.first.size() + n.rest.size()) * sizeof(RuleId) + n.productive_once.size() * sizeof(uint64_t);
    for (const auto& r : n.presence) bytes += sizeof(r) + r.any_of.size() * n.words * sizeof(uint64_t);
    for (const auto& r : n.spec.presence) {
      bytes += sizeof(r);
      for (const auto& alt : r.any_of) bytes += sizeof(alt) + alt.size() * sizeof(int32_t);
    }
  }
  bytes += static_cast<size_t>((num_made_ >> kChunkBits) + 1) * (sizeof(Entry) << kChunkBits);
  for (const auto& kv : index_) bytes += kv.first.size() * 2 + 48;
  return bytes;
}

}  // namespace xg2
