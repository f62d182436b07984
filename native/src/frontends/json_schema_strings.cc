// Strings of the JSON Schema front end: JSON-encoded characters with length bounds counted in
// decoded characters, literal strings with every escape spelling, key exclusion, formats and
// the mapping of regex expressions (over decoded text) onto JSON string content.
#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <unordered_map>

#include "automata/byte_dfa_ops.h"
#include "automata/word_set_dfa.h"
#include "frontends/json_schema.h"
#include "frontends/json_schema_internal.h"
#include "frontends/schema_automaton_cache.h"
#include "support/utf8.h"
#include "xg2/errors.h"

namespace xg2::jsonschema {

ExprId Lit(Grammar* g, const std::string& bytes) { return bytes.empty() ? g->AddEmpty() : g->AddBytes(bytes); }
ExprId Cls(Grammar* g, std::vector<CodepointRange> ranges, bool negated) {
  return g->AddCharClass(NormalizeRanges(std::move(ranges)), negated);
}
ExprId Opt(Grammar* g, ExprId e) { return g->AddRepeat(e, 0, 1); }

namespace {

ExprId Hex(Grammar* g) { return Cls(g, {{'0', '9'}, {'A', 'F'}, {'a', 'f'}}); }
ExprId HexN(Grammar* g, int n) { return g->AddRepeat(Hex(g), n, n); }

// Hex digits by value, in either letter case.
constexpr char kHexLower[] = "0123456789abcdef";
constexpr char kHexUpper[] = "0123456789ABCDEF";

// One hex digit equal to v (either letter case).
ExprId HexDigitIs(Grammar* g, int v) {
  if (v < 10) return Lit(g, std::string(1, kHexLower[v]));
  return Cls(g, {{uint32_t(kHexLower[v]), uint32_t(kHexLower[v])}, {uint32_t(kHexUpper[v]), uint32_t(kHexUpper[v])}});
}

// One hex digit in [lo, hi].
ExprId HexDigitRange(Grammar* g, int lo, int hi) {
  std::vector<CodepointRange> r;
  int dlo = std::max(lo, 0), dhi = std::min(hi, 9);
  if (dlo <= dhi) r.push_back({uint32_t('0' + dlo), uint32_t('0' + dhi)});
  int llo = std::max(lo, 10), lhi = std::min(hi, 15);
  if (llo <= lhi) {
    r.push_back({uint32_t('a' + llo - 10), uint32_t('a' + lhi - 10)});
    r.push_back({uint32_t('A' + llo - 10), uint32_t('A' + lhi - 10)});
  }
  return Cls(g, r);
}

// Exactly `width` hex digits whose value is in [lo, hi].
ExprId HexFixedRange(Grammar* g, uint32_t lo, uint32_t hi, int width) {
  if (width == 0) return g->AddEmpty();
  uint32_t p = 1u << (4 * (width - 1));
  uint32_t dlo = lo / p, dhi = hi / p, rlo = lo % p, rhi = hi % p;
  if (dlo == dhi) return g->AddSequence({HexDigitIs(g, dlo), HexFixedRange(g, rlo, rhi, width - 1)});
  std::vector<ExprId> alts;
  uint32_t mlo = dlo + 1, mhi = dhi - 1;
  if (rlo == 0) {
    mlo = dlo;
  } else {
    alts.push_back(g->AddSequence({HexDigitIs(g, dlo), HexFixedRange(g, rlo, p - 1, width - 1)}));
  }
  if (rhi == p - 1) mhi = dhi;
  if (mlo <= mhi) alts.push_back(g->AddSequence({HexDigitRange(g, mlo, mhi), HexN(g, width - 1)}));
  if (rhi != p - 1) alts.push_back(g->AddSequence({HexDigitIs(g, dhi), HexFixedRange(g, 0, rhi, width - 1)}));
  return alts.size() == 1 ? alts[0] : g->AddChoice(alts);
}

// Code points that may appear unescaped in a JSON string.
const std::vector<CodepointRange> kRawAllowed = {{0x20, 0x21}, {0x23, 0x5B}, {0x5D, 0xD7FF}, {0xE000, 0x10FFFF}};

// The code points with a short escape (ShortEscape).
constexpr uint32_t kShortEscaped[] = {'"', '\\', '/', '\b', '\f', '\n', '\r', '\t'};

const char* ShortEscape(uint32_t cp) {
  switch (cp) {
    case '"': return "\\\"";
    case '\\': return "\\\\";
    case '/': return "\\/";
    case '\b': return "\\b";
    case '\f': return "\\f";
    case '\n': return "\\n";
    case '\r': return "\\r";
    case '\t': return "\\t";
  }
  return nullptr;
}

// One hex digit, either letter case, of the digit values set in `digits` (bit v: value v).
ExprId HexDigitSet(Grammar* g, uint32_t digits) {
  std::vector<CodepointRange> r;
  for (int v = 0; v < 16; ++v) {
    if (!(digits >> v & 1)) continue;
    r.push_back({uint32_t(kHexLower[v]), uint32_t(kHexLower[v])});
    if (v >= 10) r.push_back({uint32_t(kHexUpper[v]), uint32_t(kHexUpper[v])});
  }
  if (r.size() == 1) return Lit(g, std::string(1, char(r[0].lo)));
  return Cls(g, std::move(r));
}

// Exactly `width` hex digits whose value is in one of `values` (sorted, disjoint, each
// below 16^width), as one digit tree: the first digits whose remaining values are alike
// share a branch. One tree for a whole character class: an alternative per range (the
// nine of an e-mail atext class) repeated "\u" and the digit prefixes common to them.
ExprId HexValueTree(Grammar* g, const std::vector<CodepointRange>& values, int width) {
  if (width == 0) return g->AddEmpty();
  const uint32_t p = 1u << (4 * (width - 1));
  if (values.size() == 1 && values[0].lo == 0 && values[0].hi == 16 * p - 1) return HexN(g, width);
  // Values under each first digit, shifted below p; digits with equal remainders grouped.
  std::vector<std::pair<std::vector<CodepointRange>, uint32_t>> groups;  // remainder, digit set
  for (uint32_t d = 0; d < 16; ++d) {
    std::vector<CodepointRange> rest;
    const uint32_t base = d * p;
    for (const auto& r : values) {
      const uint32_t lo = std::max(r.lo, base), hi = std::min(r.hi, base + p - 1);
      if (lo <= hi) rest.push_back({lo - base, hi - base});
    }
    if (rest.empty()) continue;
    auto same = std::find_if(groups.begin(), groups.end(), [&](const auto& gr) {
      return gr.first.size() == rest.size() &&
             std::equal(rest.begin(), rest.end(), gr.first.begin(),
                        [](const CodepointRange& x, const CodepointRange& y) { return x.lo == y.lo && x.hi == y.hi; });
    });
    if (same != groups.end()) {
      same->second |= 1u << d;
    } else {
      groups.emplace_back(std::move(rest), 1u << d);
    }
  }
  std::vector<ExprId> alts;
  for (const auto& [rest, digits] : groups)
    alts.push_back(g->AddSequence({HexDigitSet(g, digits), HexValueTree(g, rest, width - 1)}));
  return alts.size() == 1 ? alts[0] : g->AddChoice(alts);
}

// "\u" escapes of the BMP code points of `ranges` (sorted, merged, no surrogates): one
// "\u" and one digit tree for the whole class.
void AddBmpEscapes(Grammar* g, const std::vector<CodepointRange>& ranges, std::vector<ExprId>* alts) {
  std::vector<CodepointRange> bmp;
  for (const auto& r : ranges) {
    if (r.lo > 0xFFFF) break;
    bmp.push_back({r.lo, std::min<uint32_t>(r.hi, 0xFFFF)});
  }
  if (!bmp.empty()) alts->push_back(g->AddSequence({Lit(g, "\\u"), HexValueTree(g, bmp, 4)}));
}

// "\u" surrogate-pair escapes of the code points above U+FFFF in [lo, hi].
void AddSurrogatePairEscapes(Grammar* g, uint32_t lo, uint32_t hi, std::vector<ExprId>* alts) {
  if (hi >= 0x10000) {
    uint32_t a = std::max<uint32_t>(lo, 0x10000);
    uint32_t ha = 0xD800 + ((a - 0x10000) >> 10), hb = 0xD800 + ((hi - 0x10000) >> 10);
    uint32_t la = 0xDC00 + ((a - 0x10000) & 0x3FF), lb = 0xDC00 + ((hi - 0x10000) & 0x3FF);
    auto pair = [&](uint32_t h0, uint32_t h1, uint32_t l0, uint32_t l1) {
      alts->push_back(
          g->AddSequence({Lit(g, "\\u"), HexFixedRange(g, h0, h1, 4), Lit(g, "\\u"), HexFixedRange(g, l0, l1, 4)}));
    };
    if (ha == hb) {
      pair(ha, ha, la, lb);
    } else {
      pair(ha, ha, la, 0xDFFF);
      if (hb - ha >= 2) pair(ha + 1, hb - 1, 0xDC00, 0xDFFF);
      pair(hb, hb, 0xDC00, lb);
    }
  }
}

// The code points whose "\u" escapes an undeclared key leaves out (see JsonStringNotIn).
constexpr CodepointRange kKeyUnescaped = {0x20, 0x7F};

// `ranges` (sorted, merged) without kKeyUnescaped.
std::vector<CodepointRange> WithoutKeyUnescaped(const std::vector<CodepointRange>& ranges) {
  std::vector<CodepointRange> out;
  for (const auto& r : ranges) {
    if (r.lo < kKeyUnescaped.lo) out.push_back({r.lo, std::min(r.hi, kKeyUnescaped.lo - 1)});
    if (r.hi > kKeyUnescaped.hi) out.push_back({std::max(r.lo, kKeyUnescaped.hi + 1), r.hi});
  }
  return out;
}

// Every JSON encoding of the code points in `ranges` (sorted, merged, no surrogates); with
// key_spelling, none that "\u"-escapes a code point of kKeyUnescaped.
ExprId EncodedClass(Grammar* g, const std::vector<CodepointRange>& ranges, bool key_spelling = false) {
  std::vector<CodepointRange> raw;
  std::vector<ExprId> alts;
  for (const auto& r : ranges) {
    for (const auto& a : kRawAllowed) {
      uint32_t lo = std::max(r.lo, a.lo), hi = std::min(r.hi, a.hi);
      if (lo <= hi) raw.push_back({lo, hi});
    }
    for (uint32_t c : kShortEscaped) {
      if (c >= r.lo && c <= r.hi) alts.push_back(Lit(g, ShortEscape(c)));
    }
    AddSurrogatePairEscapes(g, r.lo, r.hi, &alts);
  }
  AddBmpEscapes(g, key_spelling ? WithoutKeyUnescaped(ranges) : ranges, &alts);
  if (!raw.empty()) alts.insert(alts.begin(), Cls(g, raw));
  if (alts.empty()) return g->AddChoice({});
  return alts.size() == 1 ? alts[0] : g->AddChoice(alts);
}

std::vector<CodepointRange> Complement(const std::vector<CodepointRange>& ranges) {
  std::vector<CodepointRange> out;
  uint32_t next = 0;
  for (const auto& r : ranges) {
    if (r.lo > next) out.push_back({next, r.lo - 1});
    next = r.hi + 1;
  }
  if (next <= 0x10FFFF) out.push_back({next, 0x10FFFF});
  return out;
}

std::vector<CodepointRange> WithoutSurrogates(const std::vector<CodepointRange>& ranges) {
  std::vector<CodepointRange> out;
  for (const auto& r : ranges) {
    if (r.hi < 0xD800 || r.lo > 0xDFFF) {
      out.push_back(r);
      continue;
    }
    if (r.lo < 0xD800) out.push_back({r.lo, 0xD7FF});
    if (r.hi > 0xDFFF) out.push_back({0xE000, r.hi});
  }
  return out;
}

std::vector<uint32_t> DecodeUtf8(const std::string& s, bool* ok) {
  std::vector<uint32_t> cps;
  *ok = true;
  for (size_t i = 0; i < s.size();) {
    unsigned char c = s[i];
    int n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size()) {
      *ok = false;
      return cps;
    }
    uint32_t cp = n == 1 ? c : n == 2 ? (c & 0x1F) : n == 3 ? (c & 0x0F) : (c & 0x07);
    for (int k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    cps.push_back(cp);
    i += n;
  }
  return cps;
}

ExprId EncodedCodepoint(Grammar* g, uint32_t cp) { return EncodedClass(g, {{cp, cp}}); }

}  // namespace

ExprId JsonCharExpr(Grammar* g) {
  ExprId raw = Cls(g, {{0, 0x1F}, {'"', '"'}, {'\\', '\\'}}, true);
  ExprId nonsurrogate =
      g->AddChoice({g->AddSequence({Cls(g, {{'0', '9'}, {'a', 'c'}, {'A', 'C'}, {'e', 'f'}, {'E', 'F'}}), HexN(g, 3)}),
                    g->AddSequence({Cls(g, {{'d', 'd'}, {'D', 'D'}}), Cls(g, {{'0', '7'}}), HexN(g, 2)})});
  ExprId pair =
      g->AddSequence({Cls(g, {{'d', 'd'}, {'D', 'D'}}), Cls(g, {{'8', '9'}, {'a', 'b'}, {'A', 'B'}}), HexN(g, 2),
                      Lit(g, "\\u"), Cls(g, {{'d', 'd'}, {'D', 'D'}}), Cls(g, {{'c', 'f'}, {'C', 'F'}}), HexN(g, 2)});
  ExprId esc = g->AddSequence(
      {Lit(g, "\\"),
       g->AddChoice(
           {Cls(g, {{'"', '"'}, {'\\', '\\'}, {'/', '/'}, {'b', 'b'}, {'f', 'f'}, {'n', 'n'}, {'r', 'r'}, {'t', 't'}}),
            g->AddSequence({Lit(g, "u"), g->AddChoice({nonsurrogate, pair})})})});
  return g->AddChoice({raw, esc});
}

ExprId JsonKeyCharExpr(Grammar* g) { return EncodedClass(g, {{0, 0xD7FF}, {0xE000, 0x10FFFF}}, /*key_spelling=*/true); }

ExprId JsonStringExpr(Grammar* g, int64_t min_len, int64_t max_len, ExprId json_char) {
  if (json_char == kNoExpr) json_char = JsonCharExpr(g);
  return g->AddSequence({Lit(g, "\""), g->AddRepeat(json_char, min_len, max_len), Lit(g, "\"")});
}

ExprId JsonStringContentLiteral(Grammar* g, const std::string& text) {
  bool ok;
  std::vector<uint32_t> cps = DecodeUtf8(text, &ok);
  if (!ok) return Lit(g, text);
  std::vector<ExprId> parts;
  std::string plain;
  for (uint32_t cp : cps) {
    if (cp >= 0x20 && cp < 0x7F && cp != '"' && cp != '\\' && cp != '/') {
      plain += static_cast<char>(cp);
      continue;
    }
    if (!plain.empty()) parts.push_back(Lit(g, plain));
    plain.clear();
    parts.push_back(EncodedCodepoint(g, cp));
  }
  if (!plain.empty()) parts.push_back(Lit(g, plain));
  if (parts.empty()) return g->AddEmpty();
  return parts.size() == 1 ? parts[0] : g->AddSequence(parts);
}

namespace {

struct TrieNode {
  bool terminal = false;
  std::map<uint32_t, int> children;
};

// Whether JSON writes `cp` raw inside a string.
bool KeyCharRaw(uint32_t cp) {
  for (const auto& a : kRawAllowed)
    if (cp >= a.lo && cp <= a.hi) return true;
  return false;
}

// Whether KeyCharByteSpellings(cp) is the one byte cp (most characters of most names).
bool KeyCharIsOneByte(uint32_t cp) { return cp < 0x80 && KeyCharRaw(cp) && !ShortEscape(cp); }

// Appends "\u" and the four hex digits of `unit` (either case for a letter digit).
void AppendUnitEscape(uint32_t unit, WordSetDfaBuilder::Spelling* s) {
  s->push_back({static_cast<uint8_t>('\\')});
  s->push_back({static_cast<uint8_t>('u')});
  for (int shift = 12; shift >= 0; shift -= 4) {
    const int v = (unit >> shift) & 15;
    if (v < 10)
      s->push_back({static_cast<uint8_t>(kHexLower[v])});
    else
      s->push_back({static_cast<uint8_t>(kHexUpper[v]), static_cast<uint8_t>(kHexLower[v])});
  }
}

// The spellings of `cp` inside an undeclared key (JsonStringNotIn): raw when allowed, the
// short escape if any, and "\u" with four hex digits (either case; a surrogate pair above
// U+FFFF) outside kKeyUnescaped. As bytes, per position the bytes taken there.
std::vector<WordSetDfaBuilder::Spelling> KeyCharByteSpellings(uint32_t cp) {
  std::vector<WordSetDfaBuilder::Spelling> out;
  auto bytes_of = [](const std::string& text) {
    WordSetDfaBuilder::Spelling s;
    for (char c : text) s.push_back({static_cast<uint8_t>(c)});
    return s;
  };
  if (KeyCharRaw(cp)) {
    std::string enc;
    AppendUtf8(cp, &enc);
    out.push_back(bytes_of(enc));
  }
  if (const char* e = ShortEscape(cp)) out.push_back(bytes_of(e));
  if (cp < kKeyUnescaped.lo || cp > kKeyUnescaped.hi) {
    WordSetDfaBuilder::Spelling u;
    if (cp < 0x10000) {
      AppendUnitEscape(cp, &u);
    } else {
      AppendUnitEscape(0xD800 + ((cp - 0x10000) >> 10), &u);
      AppendUnitEscape(0xDC00 + ((cp - 0x10000) & 0x3FF), &u);
    }
    out.push_back(std::move(u));
  }
  return out;
}

// The same spellings as an expression (the trie form of a key exclusion too large for one
// automaton): runs of one-byte positions as literals, a position of several bytes as a class.
ExprId KeyCharSpellings(Grammar* g, uint32_t cp) {
  std::vector<ExprId> alts;
  for (const WordSetDfaBuilder::Spelling& s : KeyCharByteSpellings(cp)) {
    std::vector<ExprId> parts;
    std::string run;
    for (const std::vector<uint8_t>& bytes : s) {
      if (bytes.size() == 1) {
        run.push_back(static_cast<char>(bytes[0]));
        continue;
      }
      if (!run.empty()) parts.push_back(Lit(g, run)), run.clear();
      std::vector<CodepointRange> ranges;
      for (uint8_t b : bytes) ranges.push_back({b, b});
      parts.push_back(Cls(g, std::move(ranges)));
    }
    if (!run.empty()) parts.push_back(Lit(g, run));
    alts.push_back(parts.size() == 1 ? parts[0] : g->AddSequence(parts));
  }
  return alts.size() == 1 ? alts[0] : g->AddChoice(alts);
}

// The characters no excluded key continues with at a trie node whose continuations `taken`
// are all in kKeyUnescaped (the usual node): raw, short escapes, and `escapes` (every "\u"
// escape an undeclared key writes, built once).
ExprId DivergeAtAsciiNode(Grammar* g, const std::vector<CodepointRange>& allowed, const std::set<uint32_t>& taken,
                          ExprId escapes) {
  std::vector<CodepointRange> raw;
  for (const auto& r : allowed) {
    for (const auto& a : kRawAllowed) {
      const uint32_t lo = std::max(r.lo, a.lo), hi = std::min(r.hi, a.hi);
      if (lo <= hi) raw.push_back({lo, hi});
    }
  }
  std::vector<CodepointRange> short_letters;
  for (uint32_t cp : kShortEscaped) {
    const uint32_t letter = static_cast<uint8_t>(ShortEscape(cp)[1]);
    if (!taken.count(cp)) short_letters.push_back({letter, letter});
  }
  std::vector<ExprId> alts{escapes};
  if (!raw.empty()) alts.push_back(Cls(g, raw));
  if (!short_letters.empty()) alts.push_back(g->AddSequence({Lit(g, "\\"), Cls(g, short_letters)}));
  return g->AddChoice(alts);
}

// Key content that is not any excluded key below trie node n, in the spellings of an
// undeclared key (KeyCharByteSpellings): a character no excluded key continues with diverges.
// `escapes`: as for DivergeAtAsciiNode.
ExprId TrieExclusion(Grammar* g, const std::vector<TrieNode>& nodes, int n, ExprId rest, ExprId escapes) {
  const TrieNode& t = nodes[n];
  std::vector<ExprId> alts;
  std::set<uint32_t> taken;
  std::vector<CodepointRange> taken_ranges;
  bool ascii = true;
  for (const auto& kv : t.children) {
    taken.insert(kv.first);
    taken_ranges.push_back({kv.first, kv.first});
    ascii = ascii && kv.first >= kKeyUnescaped.lo && kv.first <= kKeyUnescaped.hi;
  }
  std::vector<CodepointRange> allowed = WithoutSurrogates(Complement(NormalizeRanges(taken_ranges)));
  const ExprId diverge = ascii ? DivergeAtAsciiNode(g, allowed, taken, escapes)
                               : EncodedClass(g, allowed, /*key_spelling=*/true);  // exact, per code point
  alts.push_back(g->AddSequence({diverge, rest}));
  for (const auto& kv : t.children)
    alts.push_back(g->AddSequence({KeyCharSpellings(g, kv.first), TrieExclusion(g, nodes, kv.second, rest, escapes)}));
  if (!t.terminal) alts.push_back(g->AddEmpty());
  return g->AddChoice(alts);
}

}  // namespace

// Above this many states the key exclusion falls back to the expression form.
constexpr int64_t kMaxKeyDfaStates = 20000;

ExprId JsonStringNotIn(Grammar* g, const std::vector<std::string>& excluded, const std::function<ExprId()>& rest) {
  // As one automaton when it stays small: the string contents minus the excluded spellings,
  // built by a DFA product. The expression form below puts a complement character class at
  // every trie node, whose UTF-8 automata made many-property objects slow to compile.
  std::vector<std::string> names = excluded;
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  std::string cache_key;
  for (const auto& n : names) {
    cache_key += std::to_string(n.size());
    cache_key.push_back(':');
    cache_key += n;
  }
  std::shared_ptr<const ByteDfaSpec> kept = SchemaAutomatonCache::KeyExclusions().Find(cache_key);
  if (!kept) {
    try {
      // The excluded spellings as one trie merged into its minimal automaton: linear in the
      // names, where a subset construction of their union took most of a large schema's
      // conversion (an object of a hundred properties).
      WordSetDfaBuilder spelled;
      for (const auto& key : names) {
        bool ok;
        int32_t node = spelled.root();
        for (uint32_t cp : DecodeUtf8(key, &ok)) {
          node = KeyCharIsOneByte(cp) ? spelled.AddByteLetter(node, static_cast<uint8_t>(cp))
                                      : spelled.AddLetter(node, cp, KeyCharByteSpellings(cp));
        }
        spelled.SetFinal(node);
      }
      static const ByteDfaSpec kContents = [] {
        Grammar u;
        return ByteDfaOfExpr(u, u.AddRepeat(JsonKeyCharExpr(&u), 0, kUnbounded), kMaxKeyDfaStates);
      }();
      ByteDfaProduct product = ProductWithParts(kContents, {spelled.Minimal(kMaxKeyDfaStates)}, kMaxKeyDfaStates);
      kept = std::make_shared<const ByteDfaSpec>(
          TrimAndMinimize(SelectByParts(std::move(product), 1, 0), /*minimize=*/false));
      SchemaAutomatonCache::KeyExclusions().Insert(cache_key, kept);
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::kLimitExceeded) throw;
    }
  }
  if (kept) return g->AddSequence({Lit(g, "\""), g->AddByteDfa(kept), Lit(g, "\"")});
  // Too large for one automaton: the expression form over a trie of the names.
  std::vector<TrieNode> nodes(1);
  for (const auto& key : excluded) {
    bool ok;
    std::vector<uint32_t> cps = DecodeUtf8(key, &ok);
    int n = 0;
    for (uint32_t cp : cps) {
      auto it = nodes[n].children.find(cp);
      if (it == nodes[n].children.end()) {
        nodes.emplace_back();
        int child = static_cast<int>(nodes.size()) - 1;
        nodes[n].children[cp] = child;
        n = child;
      } else {
        n = it->second;
      }
    }
    nodes[n].terminal = true;
  }
  // Every "\u" escape of a key character (JsonKeyCharExpr's escapes: the code points outside
  // kKeyUnescaped, which an ASCII node's continuations never are), as one rule every node
  // refers to.
  std::vector<ExprId> escapes;
  AddSurrogatePairEscapes(g, 0x10000, 0x10FFFF, &escapes);
  AddBmpEscapes(g, WithoutKeyUnescaped({{0, 0xD7FF}, {0xE000, 0xFFFF}}), &escapes);
  const RuleId escape_rule = g->DeclareRule("json_key_escape");
  g->SetRuleBody(escape_rule, g->AddChoice(escapes));
  return g->AddSequence({Lit(g, "\""), TrieExclusion(g, nodes, 0, rest(), g->AddRuleRef(escape_rule)), Lit(g, "\"")});
}

// ---------------------------------------------------------------------------- formats

namespace {

ExprId D(Grammar* g, int n) { return g->AddRepeat(Cls(g, {{'0', '9'}}), n, n); }
ExprId Range2(Grammar* g, int lo, int hi) { return FixedWidthRange(g, lo, hi, 2); }

// RFC 3339 full-date with the calendar: 31, 30 or 28 days per month, and 02-29 only in leap
// years (divisible by 4, centuries only when divisible by 400), as a validator checks it.
ExprId DateExpr(Grammar* g) {
  auto choice = [&](std::initializer_list<const char*> items) {
    std::vector<ExprId> alts;
    for (const char* s : items) alts.push_back(Lit(g, s));
    return g->AddChoice(std::move(alts));
  };
  ExprId even = Cls(g, {{'0', '0'}, {'2', '2'}, {'4', '4'}, {'6', '6'}, {'8', '8'}});
  ExprId odd = Cls(g, {{'1', '1'}, {'3', '3'}, {'5', '5'}, {'7', '7'}, {'9', '9'}});
  // Two digits divisible by 4: an even tens digit with 0/4/8, an odd one with 2/6.
  auto div4 = [&](bool allow_00) {
    std::vector<ExprId> alts{g->AddSequence({even, Cls(g, {{'4', '4'}, {'8', '8'}})}),
                             g->AddSequence({odd, Cls(g, {{'2', '2'}, {'6', '6'}})})};
    alts.push_back(
        g->AddSequence({allow_00 ? even : Cls(g, {{'2', '2'}, {'4', '4'}, {'6', '6'}, {'8', '8'}}), Lit(g, "0")}));
    return g->AddChoice(std::move(alts));
  };
  ExprId leap_year = g->AddChoice({g->AddSequence({D(g, 2), div4(false)}), g->AddSequence({div4(true), Lit(g, "00")})});
  ExprId month_day =
      g->AddChoice({g->AddSequence({choice({"01", "03", "05", "07", "08", "10", "12"}), Lit(g, "-"), Range2(g, 1, 31)}),
                    g->AddSequence({choice({"04", "06", "09", "11"}), Lit(g, "-"), Range2(g, 1, 30)}),
                    g->AddSequence({Lit(g, "02-"), Range2(g, 1, 28)})});
  return g->AddChoice(
      {g->AddSequence({D(g, 4), Lit(g, "-"), month_day}), g->AddSequence({leap_year, Lit(g, "-02-29")})});
}

ExprId TimeExpr(Grammar* g) {
  ExprId offset = g->AddChoice(
      {Cls(g, {{'Z', 'Z'}, {'z', 'z'}}),
       g->AddSequence({Cls(g, {{'+', '+'}, {'-', '-'}}), Range2(g, 0, 23), Lit(g, ":"), Range2(g, 0, 59)})});
  return g->AddSequence({Range2(g, 0, 23), Lit(g, ":"), Range2(g, 0, 59), Lit(g, ":"), Range2(g, 0, 60),
                         Opt(g, g->AddSequence({Lit(g, "."), g->AddRepeat(Cls(g, {{'0', '9'}}), 1, kUnbounded)})),
                         offset});
}

ExprId DurationExpr(Grammar* g) {
  auto n = [&](const char* unit) {
    return g->AddSequence({g->AddRepeat(Cls(g, {{'0', '9'}}), 1, kUnbounded), Lit(g, unit)});
  };
  // RFC 3339 appendix A: each unit may be followed only by the next one (P1Y2M3D, not P1Y3D).
  auto then = [&](const char* unit, ExprId next) { return g->AddSequence({n(unit), Opt(g, next)}); };
  ExprId minute = then("M", n("S"));
  ExprId time = g->AddSequence({Lit(g, "T"), g->AddChoice({then("H", minute), minute, n("S")})});
  ExprId month = then("M", n("D"));
  ExprId date = g->AddChoice({then("Y", month), month, n("D")});
  return g->AddSequence({Lit(g, "P"), g->AddChoice({g->AddSequence({date, Opt(g, time)}), time, n("W")})});
}

ExprId HostnameExpr(Grammar* g, bool idn) {
  std::vector<CodepointRange> an{{'0', '9'}, {'A', 'Z'}, {'a', 'z'}};
  if (idn) an.push_back({0x80, 0x10FFFF});
  std::vector<CodepointRange> anh = an;
  anh.push_back({'-', '-'});
  ExprId label = g->AddSequence({Cls(g, an), Opt(g, g->AddSequence({g->AddRepeat(Cls(g, anh), 0, 61), Cls(g, an)}))});
  ExprId label2 = g->AddSequence({Cls(g, an), Opt(g, g->AddSequence({g->AddRepeat(Cls(g, anh), 0, 61), Cls(g, an)}))});
  return g->AddSequence({label, g->AddRepeat(g->AddSequence({Lit(g, "."), label2}), 0, kUnbounded)});
}

ExprId Ipv4Expr(Grammar* g) {
  auto octet = [&]() {
    return g->AddChoice({FixedWidthRange(g, 0, 9, 1), FixedWidthRange(g, 10, 99, 2), FixedWidthRange(g, 100, 255, 3)});
  };
  return g->AddSequence({octet(), Lit(g, "."), octet(), Lit(g, "."), octet(), Lit(g, "."), octet()});
}

ExprId Ipv6Expr(Grammar* g) {
  auto h16 = [&]() { return g->AddRepeat(Hex(g), 1, 4); };
  auto h16c = [&](int n) { return g->AddRepeat(g->AddSequence({h16(), Lit(g, ":")}), n, n); };
  auto ls32 = [&]() { return g->AddChoice({g->AddSequence({h16(), Lit(g, ":"), h16()}), Ipv4Expr(g)}); };
  // [ *k( h16 ":" ) h16 ]
  auto pre = [&](int k) {
    if (k < 0) return g->AddEmpty();
    return Opt(g, g->AddSequence({g->AddRepeat(g->AddSequence({h16(), Lit(g, ":")}), 0, k), h16()}));
  };
  std::vector<ExprId> alts;
  alts.push_back(g->AddSequence({h16c(6), ls32()}));
  alts.push_back(g->AddSequence({Lit(g, "::"), h16c(5), ls32()}));
  alts.push_back(g->AddSequence({pre(0), Lit(g, "::"), h16c(4), ls32()}));
  alts.push_back(g->AddSequence({pre(1), Lit(g, "::"), h16c(3), ls32()}));
  alts.push_back(g->AddSequence({pre(2), Lit(g, "::"), h16c(2), ls32()}));
  alts.push_back(g->AddSequence({pre(3), Lit(g, "::"), h16c(1), ls32()}));
  alts.push_back(g->AddSequence({pre(4), Lit(g, "::"), ls32()}));
  alts.push_back(g->AddSequence({pre(5), Lit(g, "::"), h16()}));
  alts.push_back(g->AddSequence({pre(6), Lit(g, "::")}));
  return g->AddChoice(alts);
}

// RFC 3986 URI / URI-reference, or with iri RFC 3987 IRI / IRI-reference (ucschar in the
// unreserved characters, iprivate in the query), over the decoded text.
ExprId UriExpr(Grammar* g, bool iri, bool reference) {
  const std::vector<CodepointRange> hex{{'0', '9'}, {'A', 'F'}, {'a', 'f'}};
  const std::vector<CodepointRange> ascii_unreserved{{'-', '.'}, {'0', '9'}, {'A', 'Z'},
                                                     {'_', '_'}, {'a', 'z'}, {'~', '~'}};
  std::vector<CodepointRange> unreserved = ascii_unreserved;
  if (iri) {
    for (CodepointRange r : {CodepointRange{0xA0, 0xD7FF}, {0xF900, 0xFDCF}, {0xFDF0, 0xFFEF}, {0xE1000, 0xEFFFD}})
      unreserved.push_back(r);
    for (uint32_t plane = 1; plane <= 13; ++plane) unreserved.push_back({plane << 16, (plane << 16) + 0xFFFD});
  }
  const std::vector<CodepointRange> sub_delims{{'!', '!'}, {'$', '$'}, {'&', ','}, {';', ';'}, {'=', '='}};
  auto char_set = [&](std::vector<CodepointRange> extra) {  // unreserved / sub-delims / extra
    extra.insert(extra.end(), unreserved.begin(), unreserved.end());
    extra.insert(extra.end(), sub_delims.begin(), sub_delims.end());
    return NormalizeRanges(std::move(extra));
  };
  auto chars = [&](std::vector<CodepointRange> extra) {  // ... or pct-encoded
    return g->AddChoice({Cls(g, char_set(std::move(extra))), g->AddSequence({Lit(g, "%"), Cls(g, hex), Cls(g, hex)})});
  };
  auto star = [&](ExprId e) { return g->AddRepeat(e, 0, kUnbounded); };
  ExprId pchar = chars({{':', ':'}, {'@', '@'}});
  ExprId segment = star(pchar);
  ExprId segment_nz = g->AddRepeat(pchar, 1, kUnbounded);
  ExprId slash_segments = star(g->AddSequence({Lit(g, "/"), segment}));  // path-abempty
  // RFC 3987 keeps IP literals ASCII: IPvFuture takes unreserved, not iunreserved.
  std::vector<CodepointRange> ip_future_chars = ascii_unreserved;
  ip_future_chars.insert(ip_future_chars.end(), sub_delims.begin(), sub_delims.end());
  ip_future_chars.push_back({':', ':'});
  ip_future_chars = NormalizeRanges(std::move(ip_future_chars));
  ExprId ip_future = g->AddSequence({Cls(g, {{'V', 'V'}, {'v', 'v'}}),  // ABNF strings ignore case
                                     g->AddRepeat(Cls(g, hex), 1, kUnbounded), Lit(g, "."),
                                     g->AddRepeat(Cls(g, ip_future_chars), 1, kUnbounded)});
  ExprId host = g->AddChoice({g->AddSequence({Lit(g, "["), g->AddChoice({Ipv6Expr(g), ip_future}), Lit(g, "]")}),
                              Ipv4Expr(g), star(chars({}))});
  ExprId authority = g->AddSequence({Opt(g, g->AddSequence({star(chars({{':', ':'}})), Lit(g, "@")})), host,
                                     Opt(g, g->AddSequence({Lit(g, ":"), star(Cls(g, {{'0', '9'}}))}))});
  ExprId path_absolute = g->AddSequence({Lit(g, "/"), Opt(g, g->AddSequence({segment_nz, slash_segments}))});
  // hier-part (path-rootless first) or relative-part (path-noscheme first: no ':' before a '/').
  auto hier = [&](ExprId first) {
    return g->AddChoice({g->AddSequence({Lit(g, "//"), authority, slash_segments}), path_absolute,
                         g->AddSequence({first, slash_segments}), g->AddEmpty()});
  };
  ExprId query_char = g->AddChoice({pchar, Cls(g, {{'/', '/'}, {'?', '?'}})});
  ExprId query_body =
      iri ? g->AddChoice({query_char, Cls(g, {{0xE000, 0xF8FF}, {0xF0000, 0xFFFFD}, {0x100000, 0x10FFFD}})})
          : query_char;
  auto tail = [&] {
    return g->AddSequence({Opt(g, g->AddSequence({Lit(g, "?"), star(query_body)})),
                           Opt(g, g->AddSequence({Lit(g, "#"), star(query_char)}))});
  };
  ExprId scheme = g->AddSequence(
      {Cls(g, {{'A', 'Z'}, {'a', 'z'}}), star(Cls(g, {{'A', 'Z'}, {'a', 'z'}, {'0', '9'}, {'+', '+'}, {'-', '.'}}))});
  ExprId absolute = g->AddSequence({scheme, Lit(g, ":"), hier(segment_nz), tail()});
  if (!reference) return absolute;
  ExprId segment_nz_nc = g->AddRepeat(chars({{'@', '@'}}), 1, kUnbounded);
  return g->AddChoice({absolute, g->AddSequence({hier(segment_nz_nc), tail()})});
}

}  // namespace

namespace {

// RFC 6570 (section 2): literals (any character but controls, space and "'%<>\\^`{|}, or a
// pct-encoded octet) and expressions "{" [operator] varspec *("," varspec) "}", where a
// varname is varchars (ALPHA / DIGIT / "_" / pct-encoded) joined by single dots and a prefix
// is 1-9999.
ExprId UriTemplateExpr(Grammar* g) {
  const std::vector<CodepointRange> hex{{'0', '9'}, {'A', 'F'}, {'a', 'f'}};
  ExprId pct = g->AddSequence({Lit(g, "%"), Cls(g, hex), Cls(g, hex)});
  std::vector<CodepointRange> literal{{0x21, 0x21},   {0x23, 0x24},     {0x26, 0x26},    {0x28, 0x3B}, {0x3D, 0x3D},
                                      {0x3F, 0x5B},   {0x5D, 0x5D},     {0x5F, 0x5F},    {0x61, 0x7A}, {0x7E, 0x7E},
                                      {0xA0, 0xD7FF}, {0xE000, 0xFDCF}, {0xFDF0, 0xFFEF}};
  // ucschar and iprivate above the BMP: every plane but its last two code points.
  for (uint32_t plane = 1; plane <= 16; ++plane) literal.push_back({plane << 16, (plane << 16) + 0xFFFD});
  ExprId varchar = g->AddChoice({Cls(g, {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}}), pct});
  ExprId varname =
      g->AddSequence({varchar, g->AddRepeat(g->AddSequence({Opt(g, Lit(g, ".")), varchar}), 0, kUnbounded)});
  ExprId prefix = g->AddSequence({Lit(g, ":"), Cls(g, {{'1', '9'}}), g->AddRepeat(Cls(g, {{'0', '9'}}), 0, 3)});
  ExprId varspec = g->AddSequence({varname, Opt(g, g->AddChoice({prefix, Lit(g, "*")}))});
  ExprId op = Opt(g, Cls(g, {{'+', '+'},
                             {'#', '#'},
                             {'.', '.'},
                             {'/', '/'},
                             {';', ';'},
                             {'?', '?'},
                             {'&', '&'},
                             {'=', '='},
                             {',', ','},
                             {'!', '!'},
                             {'@', '@'},
                             {'|', '|'}}));
  ExprId expr = g->AddSequence(
      {Lit(g, "{"), op, varspec, g->AddRepeat(g->AddSequence({Lit(g, ","), varspec}), 0, kUnbounded), Lit(g, "}")});
  return g->AddRepeat(g->AddChoice({Cls(g, literal), pct, expr}), 0, kUnbounded);
}

}  // namespace

// The decoded text of a string in format f (a regex-like expression over code points), or
// kNoExpr for a format that has no expression here.
ExprId FormatDecodedExpr(Grammar* g, const std::string& f) {
  if (f == "date") return DateExpr(g);
  if (f == "time") return TimeExpr(g);
  // RFC 3339 section 5.6: T or t (its note allows a space; validators and JSONSchemaBench do not).
  if (f == "date-time") return g->AddSequence({DateExpr(g), Cls(g, {{'T', 'T'}, {'t', 't'}}), TimeExpr(g)});
  if (f == "duration") return DurationExpr(g);
  if (f == "uuid") {
    return g->AddSequence({HexN(g, 8), Lit(g, "-"), HexN(g, 4), Lit(g, "-"), HexN(g, 4), Lit(g, "-"), HexN(g, 4),
                           Lit(g, "-"), HexN(g, 12)});
  }
  if (f == "ipv4") return Ipv4Expr(g);
  if (f == "ipv6") return Ipv6Expr(g);
  if (f == "hostname") return HostnameExpr(g, false);
  if (f == "idn-hostname") return HostnameExpr(g, true);
  if (f == "email" || f == "idn-email") {
    std::vector<CodepointRange> atext{{'!', '!'}, {'#', '\''}, {'*', '+'}, {'-', '-'}, {'/', '9'},
                                      {'=', '='}, {'?', '?'},  {'A', 'Z'}, {'^', '~'}};
    if (f == "idn-email") atext.push_back({0x80, 0x10FFFF});
    ExprId word = g->AddRepeat(Cls(g, atext), 1, kUnbounded);
    ExprId dot_string = g->AddSequence(
        {word, g->AddRepeat(g->AddSequence({Lit(g, "."), g->AddRepeat(Cls(g, atext), 1, kUnbounded)}), 0, kUnbounded)});
    // RFC 5321 Quoted-string: qtextSMTP (printable ASCII but '"' and '\\'; RFC 6531 adds
    // non-ASCII for idn-email) or a quoted pair.
    std::vector<CodepointRange> qtext{{' ', '!'}, {'#', '['}, {']', '~'}};
    if (f == "idn-email") qtext.push_back({0x80, 0x10FFFF});
    ExprId quoted = g->AddSequence(
        {Lit(g, "\""),
         g->AddRepeat(g->AddChoice({Cls(g, qtext), g->AddSequence({Lit(g, "\\"), Cls(g, {{' ', '~'}})})}), 0,
                      kUnbounded),
         Lit(g, "\"")});
    ExprId local = g->AddChoice({dot_string, quoted});
    ExprId domain =
        g->AddChoice({HostnameExpr(g, f == "idn-email"), g->AddSequence({Lit(g, "["), Ipv4Expr(g), Lit(g, "]")}),
                      g->AddSequence({Lit(g, "[IPv6:"), Ipv6Expr(g), Lit(g, "]")})});
    return g->AddSequence({local, Lit(g, "@"), domain});
  }
  if (f == "uri" || f == "iri" || f == "uri-reference" || f == "iri-reference")
    return UriExpr(g, f[0] == 'i', f.size() > 4);
  if (f == "uri-template") return UriTemplateExpr(g);
  if (f == "json-pointer" || f == "relative-json-pointer") {
    // RFC 6901 over the decoded string: "/" and "~" only as separators and ~0 / ~1.
    ExprId ch =
        g->AddChoice({Cls(g, {{'/', '/'}, {'~', '~'}}, true), g->AddSequence({Lit(g, "~"), Cls(g, {{'0', '1'}})})});
    ExprId ptr = g->AddRepeat(g->AddSequence({Lit(g, "/"), g->AddRepeat(ch, 0, kUnbounded)}), 0, kUnbounded);
    if (f == "json-pointer") return ptr;
    ExprId num = g->AddChoice(
        {Lit(g, "0"), g->AddSequence({Cls(g, {{'1', '9'}}), g->AddRepeat(Cls(g, {{'0', '9'}}), 0, kUnbounded)})});
    return g->AddSequence({num, g->AddChoice({Lit(g, "#"), ptr})});
  }
  return kNoExpr;
}

bool IsAssertedFormat(const std::string& f) {
  static const std::set<std::string> kAsserted = {
      "date", "time",          "date-time",     "duration",     "uuid",         "ipv4",
      "ipv6", "hostname",      "idn-hostname",  "email",        "idn-email",    "uri",
      "iri",  "uri-reference", "iri-reference", "uri-template", "json-pointer", "relative-json-pointer",
      "regex"};
  return kAsserted.count(f) > 0;
}

namespace {

// The minimal DFAs of the formats' JSON-string content, process-wide. A format's automaton
// depends on the format alone (not on the schema, the options or a tokenizer), and building
// one was most of a compile that uses it: the e-mail format's, with an IPv6 literal and every
// escape spelling of each character, is about 2,000 states before minimisation and was built
// again in every compile (the rule DFA cache is emptied with the cross-grammar cache). Only
// asserted formats with an expression are stored, so the cache is bounded by that list.
class FormatDfaCache {
 public:
  static FormatDfaCache& Global() {
    static FormatDfaCache* cache = new FormatDfaCache();  // never destroyed: safe at exit
    return *cache;
  }

  std::shared_ptr<const ByteDfaSpec> Get(const std::string& f) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = dfas_.find(f);
      if (it != dfas_.end()) {
        ++stats_.hits;
        return it->second;
      }
    }
    Grammar scratch;
    ExprId decoded = FormatDecodedExpr(&scratch, f);
    if (decoded == kNoExpr) throw UnsupportedKeyword{"format", "format '" + f + "' is not enforced"};
    // The format constrains the decoded string: every JSON spelling of it matches ("/\"" is
    // the pointer /" and "\/" a "/").
    ExprId content = RegexToJsonContentAllSpellings(&scratch, decoded);
    auto dfa =
        std::make_shared<const ByteDfaSpec>(TrimAndMinimize(ByteDfaOfExpr(scratch, content, kMaxFormatDfaStates)));
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.misses;
    auto [it, added] = dfas_.emplace(f, dfa);  // a thread that built it meanwhile wins
    if (added) stats_.bytes += SpecBytes(*dfa);
    return it->second;
  }

  CacheStats Stats() {
    std::lock_guard<std::mutex> lock(mu_);
    CacheStats s = stats_;
    s.entries = static_cast<int64_t>(dfas_.size());
    return s;
  }

  void Clear() {
    std::lock_guard<std::mutex> lock(mu_);
    dfas_.clear();
    stats_ = CacheStats();
  }

 private:
  // Far above any format's automaton (the largest, e-mail, is a few hundred states minimal).
  static constexpr int64_t kMaxFormatDfaStates = 100000;

  static int64_t SpecBytes(const ByteDfaSpec& d) {
    int64_t n = static_cast<int64_t>(sizeof(ByteDfaSpec) + d.is_final.size());
    for (const auto& e : d.edges) n += static_cast<int64_t>(sizeof(e) + e.size() * sizeof(ByteDfaEdge));
    return n;
  }

  std::mutex mu_;
  std::map<std::string, std::shared_ptr<const ByteDfaSpec>> dfas_;
  CacheStats stats_;
};

}  // namespace

ExprId FormatContentExpr(Grammar* g, const std::string& f) { return g->AddByteDfa(FormatDfaCache::Global().Get(f)); }

// ---------------------------------------------------------------------------- regex mapping

namespace {

struct RegexMapper {
  Grammar* g;
  std::unordered_map<RuleId, RuleId> rules;
  bool all_spellings = false;
  // Mapped node of each regex node already mapped: the regex is a DAG (the grammar interns
  // equal nodes, so e.g. the nine ls32 of an ipv6 share one IPv4 node), and a tree walk
  // mapped each shared node once per path (the email format's IPv6 literal many times over).
  // Nodes are interned, so the memo returns the node the walk would build again; subtrees
  // with a rule reference are not memoised (each reference site stays its own node).
  std::unordered_map<ExprId, ExprId> mapped;

  ExprId Map(ExprId id) {
    bool has_ref = false;
    return Map(id, &has_ref);
  }

  ExprId Map(ExprId id, bool* has_ref) {
    auto hit = mapped.find(id);
    if (hit != mapped.end()) return hit->second;
    bool ref_below = false;
    ExprId out = MapNode(id, &ref_below);
    if (ref_below) {
      *has_ref = true;
    } else {
      mapped.emplace(id, out);
    }
    return out;
  }

  ExprId MapNode(ExprId id, bool* has_ref) {
    Expr e = g->expr(id);  // copy: the arena grows below
    switch (e.kind) {
      case ExprKind::kEmpty: return g->AddEmpty();
      case ExprKind::kBytes:
        return all_spellings ? JsonStringContentAllSpellings(g, e.bytes) : JsonStringContentLiteral(g, e.bytes);
      case ExprKind::kCharClass: {
        std::vector<CodepointRange> r = e.negated ? Complement(e.ranges) : e.ranges;
        return EncodedClass(g, WithoutSurrogates(NormalizeRanges(r)));
      }
      case ExprKind::kSequence:
      case ExprKind::kChoice: {
        std::vector<ExprId> kids;
        for (ExprId c : e.children) kids.push_back(Map(c, has_ref));
        return e.kind == ExprKind::kSequence ? g->AddSequence(kids) : g->AddChoice(kids);
      }
      case ExprKind::kRepeat: return g->AddRepeat(Map(e.children[0], has_ref), e.min, e.max);
      case ExprKind::kTagDispatch:  // regexes never produce one
      case ExprKind::kByteDfa:
      case ExprKind::kAnyOrder:
        throw Error(ErrorKind::kGrammarSemantic,
                    "a TagDispatch, ByteDfa or AnyOrder cannot be mapped into a JSON string");
      case ExprKind::kRuleRef: {
        *has_ref = true;
        auto it = rules.find(e.rule);
        if (it != rules.end()) return g->AddRuleRef(it->second);
        RuleId r = g->DeclareRule(g->rule(e.rule).name + "_json");
        rules[e.rule] = r;
        ExprId body = g->rule(e.rule).body;
        g->SetRuleBody(r, Map(body));
        return g->AddRuleRef(r);
      }
    }
    return g->AddEmpty();
  }
};

}  // namespace

ExprId RegexToJsonContent(Grammar* g, ExprId regex_expr) {
  RegexMapper m{g, {}, false, {}};
  return m.Map(regex_expr);
}

ExprId RegexToJsonContentAllSpellings(Grammar* g, ExprId regex_expr) {
  RegexMapper m{g, {}, true, {}};
  return m.Map(regex_expr);
}

ExprId JsonStringContentAllSpellings(Grammar* g, const std::string& text) {
  bool ok;
  std::vector<uint32_t> cps = DecodeUtf8(text, &ok);
  if (!ok) return Lit(g, text);
  std::vector<ExprId> parts;
  for (uint32_t cp : cps) parts.push_back(EncodedCodepoint(g, cp));
  if (parts.empty()) return g->AddEmpty();
  return parts.size() == 1 ? parts[0] : g->AddSequence(parts);
}

ByteDfaSpec JsonStringSpellingsDfa(const std::vector<std::string>& texts, int64_t max_states, bool quoted) {
  Grammar scratch;
  std::vector<ExprId> alts;
  for (const std::string& t : texts) {
    ExprId content = JsonStringContentAllSpellings(&scratch, t);
    alts.push_back(quoted ? scratch.AddSequence({Lit(&scratch, "\""), content, Lit(&scratch, "\"")}) : content);
  }
  return ByteDfaOfExpr(scratch, scratch.AddChoice(alts), max_states);
}

bool CodepointLengthRange(const Grammar& g, ExprId e, int64_t* lo, int64_t* hi) {
  constexpr int64_t kCap = int64_t(1) << 40;  // beyond any real bound; avoids overflow
  auto add = [&](int64_t a, int64_t b) { return (a < 0 || b < 0) ? -1 : std::min(kCap, a + b); };
  const Expr& x = g.expr(e);
  switch (x.kind) {
    case ExprKind::kEmpty: *lo = *hi = 0; return true;
    case ExprKind::kCharClass: *lo = *hi = 1; return true;
    case ExprKind::kBytes: {
      int64_t n = 0;
      for (unsigned char c : x.bytes) n += (c & 0xC0) != 0x80;
      *lo = *hi = n;
      return true;
    }
    case ExprKind::kSequence: {
      *lo = *hi = 0;
      for (ExprId c : x.children) {
        int64_t a, b;
        if (!CodepointLengthRange(g, c, &a, &b)) return false;
        *lo = add(*lo, a);
        *hi = add(*hi, b);
      }
      return true;
    }
    case ExprKind::kChoice: {
      if (x.children.empty()) return false;
      *lo = kCap;
      *hi = 0;
      for (ExprId c : x.children) {
        int64_t a, b;
        if (!CodepointLengthRange(g, c, &a, &b)) return false;
        *lo = std::min(*lo, a);
        *hi = (*hi < 0 || b < 0) ? -1 : std::max(*hi, b);
      }
      return true;
    }
    case ExprKind::kRepeat: {
      int64_t a, b;
      if (!CodepointLengthRange(g, x.children[0], &a, &b)) return false;
      *lo = std::min(kCap, a * std::min(x.min, kCap / std::max<int64_t>(a, 1)));
      if (b == 0)
        *hi = 0;
      else
        *hi = (b < 0 || x.max == kUnbounded) ? -1 : std::min(kCap, b * std::min(x.max, kCap / std::max<int64_t>(b, 1)));
      return true;
    }
    default: return false;
  }
}

}  // namespace xg2::jsonschema

namespace xg2 {
void ClearKeyExclusionCache() { jsonschema::SchemaAutomatonCache::KeyExclusions().Clear(); }
void ClearPatternAutomatonCache() { jsonschema::SchemaAutomatonCache::Patterns().Clear(); }
void ClearFormatDfaCache() { jsonschema::FormatDfaCache::Global().Clear(); }
CacheStats FormatDfaCacheStats() { return jsonschema::FormatDfaCache::Global().Stats(); }
CacheStats KeyExclusionCacheStats() { return jsonschema::SchemaAutomatonCache::KeyExclusions().Stats(); }
void SetKeyExclusionCacheLimit(int64_t bytes) { jsonschema::SchemaAutomatonCache::KeyExclusions().SetLimit(bytes); }
CacheStats PatternAutomatonCacheStats() { return jsonschema::SchemaAutomatonCache::Patterns().Stats(); }
void SetPatternAutomatonCacheLimit(int64_t bytes) { jsonschema::SchemaAutomatonCache::Patterns().SetLimit(bytes); }
}  // namespace xg2
