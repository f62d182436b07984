// Core matcher checks without Python: every token the mask allows is accepted and every
// forbidden one rejected, along sample strings, for a few grammars over a small vocabulary.
// Built with -DXG2_BUILD_CPP_TESTS=ON (and -DXG2_SANITIZE=ON for ASan/UBSan).
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "check.h"
#include "compiler/grammar_compiler.h"
#include "compiler/token_mask_cache.h"
#include "matcher/grammar_matcher.h"
#include "xg2/errors.h"
#include "xg2/grammar.h"
#include "xg2/tokenizer.h"

namespace {

std::vector<std::string> Vocab() {
  std::vector<std::string> v = {"</s>", "", "{", "}", "[", "]", ",", ":", " ", "\"", "a", "b", "ab", "\"a", "a\"",
                                "\",", "1", "12", "-", ".", "e", "true", "null", "{\"", "\":", "é", "\xc3", "\xa9",
                                "\\", "\\n", "x", "yes", "no",
                                // Text tokens above non-text ones, and the UTF-8 edge cases
                                // of the text slice (tokenizer/text_slice.h).
                                "ab\"", "ab\",", "é\"", "a\x01", "\x7f", "\xe0\xa0\x80", "\xed\xa0\x80",
                                "\xf4\x8f\xbf\xbf", "\xf4\x90\x80\x80", "x\\", "yes!",
                                // Tokens that open and close a nested rule (a string inside a
                                // value) and go on in the caller.
                                "\"a\",", "\"ab\":", "\"x\"}", "[\"a\"]", "\"\xc3\xa9\"", "1,\"a",
                                // Tokens that leave a counted loop and go on in its caller.
                                "[]", "b]", "[,]", "ab]", "[b]", "[cb]"};
  return v;
}

void CheckAlong(const std::shared_ptr<xg2::CompiledGrammar>& compiled, const std::string& text) {
  const auto& tok = *compiled->tokenizer();
  xg2::GrammarMatcher matcher(compiled, {}, false);
  std::vector<int32_t> mask((tok.vocab_size() + 31) / 32);
  size_t pos = 0;
  while (true) {
    matcher.FillNextTokenBitmask(mask.data(), static_cast<int64_t>(mask.size()));
    for (int32_t t = 0; t < tok.vocab_size(); ++t) {
      bool allowed = (static_cast<uint32_t>(mask[t >> 5]) >> (t & 31)) & 1;
      auto fork = matcher.Fork();
      bool accepted = fork->AcceptToken(t);
      if (allowed != accepted) {
        std::fprintf(stderr, "mismatch at offset %zu of %s: token %d allowed=%d accepted=%d\n", pos, text.c_str(), t,
                     allowed, accepted);
        ++g_failures;
      }
    }
    if (pos == text.size()) break;
    // Advance by one byte through accept_string (the texts need not be tokenizable).
    CHECK(matcher.AcceptString(text.substr(pos, 1)));
    ++pos;
  }
  CHECK(matcher.IsCompleted());
}

// The cores a compiled grammar built (through its subtree memo, shared by its states, and
// taking text-only subtrees whole) equal a direct node-by-node walk of the vocabulary from
// each state.
void CheckCoresMatchUnmemoised(const std::shared_ptr<xg2::CompiledGrammar>& compiled) {
  const auto& a = *compiled->automaton();
  for (int32_t s = 0; s < a.num_states(); ++s) {
    if (a.byte_edge_begin[s] == a.byte_edge_begin[s + 1]) continue;
    const xg2::MaskCore& got = *compiled->mask_cache().Get(s).core;
    const xg2::MaskCore want = xg2::TokenMaskCache::ComputeCore(compiled->automaton(), *compiled->tokenizer(), s, -1,
                                                                nullptr, /*fast_paths=*/false);
    CHECK(got.storage == want.storage && got.ids == want.ids && got.bitset == want.bitset &&
          got.num_accepted == want.num_accepted && got.dead_nodes == want.dead_nodes &&
          got.dead_offset_begin == want.dead_offset_begin && got.dead_offsets == want.dead_offsets);
  }
}

// Under every loop context of every counted loop (star, star without completion, each exact
// count), from every state of the loop's rule: the walk with fast paths (a loop of a plain
// rule as a DFA, text subtrees whole) equals the parser's node-by-node walk.
int g_loop_cores = 0;  // contexts compared, over all grammars

void CheckLoopCores(const std::shared_ptr<xg2::CompiledGrammar>& compiled) {
  const auto& a = *compiled->automaton();
  for (const auto& r : a.repeats) {
    std::vector<int32_t> contexts = {r.star(), r.star_no_complete()};
    for (int32_t c = 0; c < r.span; ++c) contexts.push_back(r.base + c);
    for (int32_t s = a.rule_start[r.child]; s < a.num_states() && a.state_rule[s] == r.child; ++s) {
      if (a.byte_edge_begin[s] == a.byte_edge_begin[s + 1]) continue;
      for (int32_t loop : contexts) {
        const auto fast = xg2::TokenMaskCache::ComputeCore(compiled->automaton(), *compiled->tokenizer(), s, loop);
        const auto want = xg2::TokenMaskCache::ComputeCore(compiled->automaton(), *compiled->tokenizer(), s, loop,
                                                           nullptr, /*fast_paths=*/false);
        CHECK(fast.storage == want.storage && fast.ids == want.ids && fast.bitset == want.bitset &&
              fast.num_accepted == want.num_accepted && fast.dead_nodes == want.dead_nodes &&
              fast.dead_offset_begin == want.dead_offset_begin && fast.dead_offsets == want.dead_offsets);
        ++g_loop_cores;
      }
    }
  }
}

}  // namespace

// Counted loops of more than max_counted_span counts are split into loops over blocks (here
// with spans of at most 4, splitting again where a block loop is long): each count is accepted
// exactly when it is within the bounds, and masks agree with accept_token along a text.
void CheckSplitCountedLoops(xg2::GrammarCompiler& compiler) {
  struct Bounds {
    int64_t lo, hi;
  };
  for (Bounds b : {Bounds{0, 20}, Bounds{3, 20}, Bounds{7, 7}, Bounds{0, 9}, Bounds{13, 13}, Bounds{2, 40},
                   Bounds{5, xg2::kUnbounded}, Bounds{11, xg2::kUnbounded}}) {
    const std::string hi = b.hi == xg2::kUnbounded ? "" : std::to_string(b.hi);
    const std::string ebnf = "root ::= (\"a\" | \"b\" \"a\"){" + std::to_string(b.lo) + "," + hi + "} \"x\"";
    for (bool eager : {true, false}) {
      xg2::CompileOptions options;
      options.precompute_masks = eager;
      options.limits.max_unrolled_repeat = 2;
      options.limits.max_counted_span = 4;
      auto compiled = compiler.Compile(xg2::ParseEbnf(ebnf), options);
      const int64_t top = (b.hi == xg2::kUnbounded ? b.lo : b.hi) + 3;
      std::string items, valid;
      for (int64_t n = 0; n <= top; items += n % 3 == 1 ? "ba" : "a", ++n) {
        xg2::GrammarMatcher m(compiled, {}, false);
        const bool accepted = m.AcceptString(items + "x") && m.IsCompleted();
        const bool want = n >= b.lo && (b.hi == xg2::kUnbounded || n <= b.hi);
        if (accepted != want) {
          std::fprintf(stderr, "%s: %lld items accepted=%d expected=%d\n", ebnf.c_str(), static_cast<long long>(n),
                       accepted, want);
          ++g_failures;
        }
        if (want) valid = items + "x";
      }
      CheckAlong(compiled, valid);
    }
  }
}

int main() {
  auto tok = std::make_shared<xg2::TokenizerInfo>(Vocab(), xg2::VocabType::kRaw, 64, std::vector<int32_t>{0},
                                                  std::vector<int32_t>{}, false);
  xg2::GrammarCompiler compiler(tok, 2, true);
  struct Case {
    std::string ebnf;
    std::vector<std::string> texts;
  };
  std::vector<Case> cases = {
      {xg2::BuiltinJsonGrammarEbnf(), {"{\"a\": [1, -12.5e1, true, null, \"\\n\\u00e9\"]}", "[]", "[\"é\"]"}},
      {"root ::= \"yes\" | \"no\" | [0-9]{1,3}", {"yes", "12", "no"}},
      {"root ::= item (\",\" item)*\nitem ::= [a-b]+ | \"\\\"\" [^\"]* \"\\\"\"", {"ab,\"x,y\",a"}},
      {"root ::= e\ne ::= t | e \"-\" t\nt ::= \"1\" | \"(\" e \")\"", {"1-(1-1)"}},
      // A recursive rule (kept, not inlined) that may end inside tokens such as "a\"" and "ab".
      {"root ::= \"[\" item (\",\" item)* \"]\"\nitem ::= [a-b]+ | \"[\" item \"]\"", {"[ab,[a],b]"}},
      // String bodies that accept all text, and ones that do not (é, DEL, a rule inside).
      {"root ::= \"\\\"\" [^\"\\\\]* \"\\\"\" \",\"?", {"\"ab\xc3\xa9x\",", "\"\""}},
      {"root ::= \"\\\"\" [^\"\\\\\u00e9]* \"\\\"\"", {"\"ab\""}},
      {"root ::= \"\\\"\" [ -~]* \"\\\"\"", {"\"yes!\""}},
      // Bounded string bodies: text up to so many characters (the bound falls with each one).
      {"root ::= \"\\\"\" [^\"\\\\]{0,3} \"\\\"\"", {"\"y\xc3\xa9s\"", "\"\""}},
      {"root ::= \"\\\"\" [^\"\\\\]{2,4} \"\\\"\" \",\"", {"\"yes!\",", "\"ab\","}},
      // Text up to a length, but a longer string too; text up to a length where the rule
      // may end after each character (both walked without text-by-length).
      {"root ::= \"\\\"\" ([^\"\\\\]{0,2} | \"yes!\") \"\\\"\"", {"\"yes!\"", "\"ab\""}},
      {"root ::= [^\"\\\\]{0,3}", {"ab", "y\xc3\xa9s"}},
      // Counted loops (bounds above the unrolling limit): plain iterations (one character,
      // two alternatives of different lengths) run as a DFA, the last one by the parser (its
      // final state has byte edges).
      {"root ::= \"\\\"\" [^\"\\\\]{0,40} \"\\\"\"",
       {"\"yes\xc3\xa9"
        "ab\"",
        "\"\""}},
      {"root ::= [a-z]{35,60} \",\"", {std::string(36, 'a') + ","}},
      {"root ::= (\"ab\" | \"e\"){2,40} \"!\"", {"abeab!"}},
      {"root ::= \"[\" ([a-b] [0-9]*){0,40} \"]\"", {"[a1b]"}},
      {"root ::= \"\\\"\" [^\"\\\\]{40,} \"\\\"\"", {"\"" + std::string(41, 'x') + "\""}},
      // A walk entering a counted loop from its caller: a string body after a first
      // character; a loop whose caller goes on with bytes the iterations also take (b, c:
      // the parser decides); a loop whose caller goes on into another rule; a loop called
      // inside a nested rule (a parser walk's stretch reaches the call).
      {"root ::= \"\\\"\" [a-z] [^\"\\\\]{0,40} \"\\\"\" \",\"",
       {"\"yes\xc3\xa9"
        "ab\",",
        "\"a\","}},
      {"root ::= \"[\" [a-e]{0,40} [b-d] \"]\"", {"[abeb]", "[c]"}},
      {"root ::= \"[\" [a-b]{35,60} item\nitem ::= \"]\" | \",]\"", {"[" + std::string(36, 'a') + ",]"}},
      {"root ::= \"[\" [a-b]{0,40} item\nitem ::= \"]\" | \",\" item", {"[ab,]", "[]"}},
      // The caller may end right after the loop; the caller's state before the loop has byte
      // edges of its own.
      {"root ::= \"[\" [a-b]{0,40}", {"[ab", "["}},
      {"root ::= \"[\" ([a-b]{0,40} \"]\" | \",]\")", {"[ab]", "[,]"}},
      // A loop that may end at once, called again by its caller's state after it.
      {"root ::= \"[\" ([a-b]{0,40} \",\"?)* \"]\"", {"[ab,b]", "[]"}},
      {"root ::= (\"[\" str \"]\")+\nstr ::= \"\\\"\" [a-z] [^\"\\\\]{0,40} \"\\\"\"", {"[\"ab\"][\"yes\"]"}},
      {"root ::= \"\\\"\" ([^\"\\\\] | esc)* \"\\\"\"\nesc ::= \"\\\\\" [n\\\\] | \"\\\\\" esc", {"\"a\\\\n\""}},
  };
  for (const auto& c : cases) {
    for (bool eager : {true, false}) {
      xg2::CompileOptions options;
      options.precompute_masks = eager;
      auto compiled = compiler.Compile(xg2::ParseEbnf(c.ebnf), options);
      for (const auto& text : c.texts) CheckAlong(compiled, text);
      CheckCoresMatchUnmemoised(compiled);
      CheckLoopCores(compiled);
    }
  }
  CHECK(g_loop_cores > 100);
  CheckSplitCountedLoops(compiler);
  // Misuse raises and leaves the matcher usable.
  auto compiled = compiler.Compile(xg2::ParseEbnf("root ::= \"a\""), xg2::CompileOptions());
  xg2::GrammarMatcher m(compiled, {}, false);
  bool threw = false;
  try {
    m.Rollback(1);
  } catch (const xg2::Error& e) {
    threw = e.kind() == xg2::ErrorKind::kMatcherState;
  }
  CHECK(threw);
  CHECK(m.AcceptToken(10));
  CHECK(m.AcceptToken(0));
  CHECK(m.IsTerminated());
  // After termination every token is refused and a fill throws (as xgrammar).
  CHECK(!m.AcceptToken(10));
  CHECK(!m.AcceptToken(0));
  CHECK(m.IsTerminated());
  std::vector<int32_t> words(static_cast<size_t>(compiled->mask_cache().num_words()) + 1);
  bool fill_threw = false;
  try {
    m.FillNextTokenBitmask(words.data(), static_cast<int64_t>(words.size()));
  } catch (const xg2::Error& e) {
    fill_threw = e.kind() == xg2::ErrorKind::kMatcherState;
  }
  CHECK(fill_threw);
  m.Rollback(1);
  CHECK(!m.IsTerminated());
  CHECK(m.IsCompleted());
  if (g_failures) {
    std::fprintf(stderr, "%d failures\n", g_failures);
    return 1;
  }
  std::printf("test_matcher: OK\n");
  return 0;
}
