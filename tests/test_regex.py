"""Tests of Grammar.from_regex: the compiled grammar's full-match language against Python's
``re`` (with patterns translated where JavaScript and Python semantics differ), prefix
viability byte by byte, search semantics, and the errors of unsupported constructs.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import xg2_jax as xg
from xg2_jax import _core

SETTINGS = dict(
    deadline=None,
    derandomize=True,
    max_examples=40,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.function_scoped_fixture],
)

# JavaScript's \s (WhiteSpace and LineTerminator) and `.` (anything but a LineTerminator) in
# Python syntax: Python's own \s and `.` differ (\x1c-\x1f, \x85; \r, \u2028, \u2029).
JS_SPACE = "\t\n\x0b\x0c\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
JS_DOT = "[^\n\r\u2028\u2029]"

# Vocabulary: single characters, some multi-character and multi-byte tokens, a stop token.
SINGLE = sorted(set(
    [chr(c) for c in range(0x20, 0x7F)]
    + list("\t\n\r\x0b\x0c\x00\x1c\x85")
    + list("\u00e9\u00fc\u20ac\U0001F600\u0661\u00a0\u2028\u3000\ufeff\u07ff\u0800\uffff")
    + ["\U00010000", "\U0010FFFF", "\x80"]
))
MULTI = ["ab", "abc", "00", "12", ".com", "\u00e9\u20ac", "\n\n", "xyz", "aaa"]
VOCAB = SINGLE + MULTI + ["</s>"]
STOP_ID = len(VOCAB) - 1

# (ECMAScript pattern, equivalent Python pattern or None if identical, sample strings).
CASES = [
    ("abc", None, ["abc", "ab", "abcd", "", "xbc", "aabc"]),
    ("a|b|cd", None, ["a", "b", "cd", "c", "ab", "", "d"]),
    ("a*", None, ["", "a", "aaaa", "b", "aab"]),
    ("a+b?", None, ["a", "ab", "aab", "abb", "b", ""]),
    ("(ab)*c", None, ["c", "abc", "ababc", "abac", "ab", ""]),
    ("x{3}", None, ["xxx", "xx", "xxxx", ""]),
    ("x{2,4}", None, ["x", "xx", "xxx", "xxxx", "xxxxx"]),
    ("x{2,}", None, ["x", "xx", "xxxxxxx", "xxy"]),
    ("(?:ab){1,2}c", None, ["abc", "ababc", "abababc", "c", "abab"]),
    ("a{0}b", None, ["b", "ab", ""]),
    ("[a-c]+", None, ["a", "abcabc", "abd", "", "d"]),
    ("[^a-c]", None, ["d", "a", "\u00e9", "\U0001F600", "\n", "dd", ""]),
    (r"[^abc\n]*", None, ["xyz", "xaz", "x\ny", "\r\t", ""]),
    (r"\d{2,3}", "[0-9]{2,3}", ["12", "123", "1", "1234", "\u0661\u0661", "1a"]),
    (r"\w+", "[A-Za-z0-9_]+", ["abc_12", "a-b", "\u00e9", "", "Z"]),
    (r"\s", f"[{JS_SPACE}]", [" ", "\t", "\n", "\u00a0", "\u2028", "\u3000", "\ufeff",
                              "\x1c", "\x85", "a", "  "]),
    (r"\D\W\S", f"[^0-9][^A-Za-z0-9_][^{JS_SPACE}]", ["a-b", "1-b", "a b", "a-\u00e9",
                                                      "\u00e9\u00e9\u00e9", "a-\ufeff"]),
    (".", JS_DOT, ["a", "\n", "\r", "\u2028", "\u2029", "\u00e9", "\U0001F600", "ab", ""]),
    ("\u00e9+\u20ac?\U0001F600", None, ["\u00e9\U0001F600", "\u00e9\u00e9\u20ac\U0001F600",
                                        "\u20ac\U0001F600", "\u00e9\u20ac"]),
    ("[\u00e9-\u00fc]+", None, ["\u00e9", "\u00fc\u00e9", "e", "\u00fd", "\u00f0"]),
    (r"[\u00e9\u{1F600}-\u{1F64F}]", "[\u00e9\U0001F600-\U0001F64F]",
     ["\u00e9", "\U0001F600", "\U0001F64F", "\U0001F650", "e"]),
    (r"\uD83D\uDE00", "\U0001F600", ["\U0001F600", "\U0001F601", ""]),
    (r"\x41\u0042\t\0\cJ", "AB\t\x00\n", ["AB\t\x00\n", "AB\t\x00", "ab\t\x00\n"]),
    ("^ab$", "ab", ["ab", "a", "abb", ""]),
    ("^a|b$", "a|b", ["a", "b", "ab", ""]),
    (r"(?<year>\d{4})-(?:0[1-9]|1[0-2])", "(?P<year>[0-9]{4})-(?:0[1-9]|1[0-2])",
     ["2024-01", "2024-12", "2024-13", "2024-00", "24-01", "2024-1"]),
    ("a*?b+?c??", None, ["b", "abbc", "aab", "ac", "bcc"]),
    (r"[\d-z]", "[0-9z-]", ["5", "-", "z", "a", "y"]),
    ("[a-]x", None, ["ax", "-x", "bx"]),
    (r"[\]\\]", None, ["]", "\\", "[", ""]),
    (r"\.\*\+\?\(\)\[\]\{\}\|\^\$\\\/", r"\.\*\+\?\(\)\[\]\{\}\|\^\$\\/",
     [".*+?()[]{}|^$\\/", ".*+?()[]{}|^$\\", "a"]),
    ("a{,2}", r"a\{,2\}", ["a{,2}", "a", "aa", ""]),
    ("[^]x", "(?s:.)x", ["ax", "\nx", "\U0001F600x", "x"]),
    ("a|[]", "a", ["a", "", "b"]),
    (r"[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\.[a-zA-Z]{2,}", None,
     ["joe@example.com", "a.b+c@x-y.org", "joe@example", "@example.com", "joe@ex.c",
      "joe@@example.com"]),
    ("(a|b)*abb", None, ["abb", "aabb", "babb", "ab", "abba", "bbbabb"]),
    ("((a|b)(c|d)){2}", None, ["acbd", "adad", "ac", "acbdac", "abcd"]),
    ("(?:)", "", ["", "a"]),
    ("", None, ["", "a", "\n"]),
    ("x(?:y|)z", None, ["xz", "xyz", "xyyz", "x"]),
    ("(a+)+b", None, ["ab", "aaab", "b", "aaa"]),
    ("[.*+?]", None, [".", "*", "+", "?", "a"]),
    ("a.c", "a" + JS_DOT + "c", ["abc", "a\nc", "a\rc", "ac", "a\u00e9c"]),
    (r"-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?", r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?",
     ["0", "-12", "3.14", "1e10", "1E-5", "01", "1.", ".5", "-", "2.5e+3"]),
    (r"\u{10FFFF}|\u{80}|\u{7FF}|\u{800}|\uFFFF|\u{10000}",
     "\U0010FFFF|\x80|\u07ff|\u0800|\uffff|\U00010000",
     ["\U0010FFFF", "\x80", "\u07ff", "\u0800", "\uffff", "\U00010000", "\u07fe", "\x7f"]),
    (r"[^\x00-\x7F]+", None, ["\u00e9", "\u00e9\U0001F600", "a", "\u00e9a", ""]),
    (r"[\u0080-\u07FF][\u0800-\uFFFF]", "[\x80-\u07ff][\u0800-\uffff]",
     ["\x80\u0800", "\u07ff\uffff", "\u0800\u0800", "\x7f\u0800", "\u07ff\U00010000"]),
    ("}{]", r"\}\{\]", ["}{]", "}{"]),
    (r"\$\d+(\.\d\d)?", r"\$[0-9]+(\.[0-9][0-9])?", ["$5", "$10.50", "$1.5", "5", "$"]),
    (r"(?:[0-9]{3}-){2}[0-9]{4}", None, ["555-123-4567", "555-1234", "555-123-456"]),
    (r"[\w\s]+", f"[A-Za-z0-9_{JS_SPACE}]+", ["a b", "a\tb_1", "a-b", "\u00e9"]),
    (r"[^\s\d]+", f"[^{JS_SPACE}0-9]+", ["ab", "a b", "a1", "\u00e9\u20ac"]),
]

IDS = [f"case{i}" for i in range(len(CASES))]


@pytest.fixture(scope="module")
def compiler():
    return xg.GrammarCompiler(xg.TokenizerInfo(VOCAB, stop_token_ids=[STOP_ID]))


_COMPILED: dict = {}


def compiled_for(compiler, pattern: str, search: bool = False):
    key = (pattern, search)
    if key not in _COMPILED:
        # The ECMAScript reader of JSON Schema patterns (from_regex reads Python's spellings).
        grammar = xg.Grammar(_core.grammar_from_regex(pattern, search))
        _COMPILED[key] = compiler.compile_grammar(grammar)
    return _COMPILED[key]


def mutations(s: str) -> list[str]:
    out = [s, s[:-1], s[1:], s + s[-1:], s[:1] + s]
    if len(s) >= 2:
        out.append(s[::-1])
    return out


def check_string(compiled, s: str, expected: bool) -> None:
    """The matcher accepts s completely iff expected, and every prefix of a match is viable."""
    matcher = xg.GrammarMatcher(compiled)
    data = s.encode("utf-8")
    if expected:
        for i in range(len(data)):
            assert matcher.accept_string(data[i:i + 1]), (s, i)
        assert matcher.is_completed(), s
        # The stop token is allowed exactly at completion.
        mask = xg.allocate_token_bitmask(1, len(VOCAB))
        matcher.fill_next_token_bitmask(mask)
        assert xg.bitmask_to_bool(mask[0], len(VOCAB))[STOP_ID]
        assert matcher.accept_token(STOP_ID)
    else:
        whole = xg.GrammarMatcher(compiled)
        assert not (whole.accept_string(data) and whole.is_completed()), s
        ok = True
        for i in range(len(data)):
            if not matcher.accept_string(data[i:i + 1]):
                ok = False
                break
        assert not (ok and matcher.is_completed()), s


@pytest.mark.parametrize("pattern,py_pattern,strings", CASES, ids=IDS)
def test_fullmatch_samples(compiler, pattern, py_pattern, strings):
    compiled = compiled_for(compiler, pattern)
    rx = re.compile(py_pattern if py_pattern is not None else pattern)
    seen = set()
    for s0 in strings:
        for s in mutations(s0):
            if s in seen:
                continue
            seen.add(s)
            check_string(compiled, s, rx.fullmatch(s) is not None)


@pytest.mark.parametrize("pattern,py_pattern,strings", CASES, ids=IDS)
def test_fullmatch_random(compiler, pattern, py_pattern, strings):
    compiled = compiled_for(compiler, pattern)
    rx = re.compile(py_pattern if py_pattern is not None else pattern)
    alphabet = sorted(set("".join(strings)) | set("a\n"))

    @settings(**SETTINGS)
    @given(st.text(alphabet=alphabet, max_size=8))
    def run(s):
        check_string(compiled, s, rx.fullmatch(s) is not None)

    run()


SEARCH_CASES = [
    ("ab", None, ["ab", "xaby", "a", "b\nab\n", "", "ba"]),
    ("^ab", None, ["ab", "abc", "xab", ""]),
    ("ab$", None, ["ab", "xab", "abx", "\nab"]),
    ("^ab$", None, ["ab", "abab", "xab"]),
    ("^a|b$", None, ["a", "axx", "xxb", "xax", "bx", ""]),
    (r"\d+", "[0-9]+", ["a1b", "abc", "\u00e9\U0001F6009", ""]),
    ("^$", None, ["", "a", "\n"]),
    ("", None, ["", "abc", "\n\r"]),
]


@pytest.mark.parametrize("pattern,py_pattern,strings", SEARCH_CASES)
def test_search_semantics(compiler, pattern, py_pattern, strings):
    compiled = compiled_for(compiler, pattern, search=True)
    # Python's `$` also matches before a final "\n"; JavaScript's only at the very end.
    rx = re.compile((py_pattern if py_pattern is not None else pattern).replace("$", r"\Z"))
    for s0 in strings:
        for s in mutations(s0):
            check_string(compiled, s, rx.search(s) is not None)


# A run of one class longer than the automaton unrolls, searched for: written as the first such
# run (one parse path instead of a counted loop per start position), the same language.
LONG_RUN_CASES = ["[ab]{34}", "a{33,40}", "[^b]{35,}", "[ab]{33}$", "a{34,}$", ".{33}"]


@pytest.mark.parametrize("pattern", LONG_RUN_CASES)
def test_search_for_a_long_run(compiler, pattern):
    compiled = compiled_for(compiler, pattern, search=True)
    rx = re.compile(pattern.replace("$", r"\Z").replace(".", "[^\n\r\u2028\u2029]"))
    around = ["a" * k for k in (32, 33, 34, 35, 41)]
    fixed = around + [w + "b" + x for w in around for x in ("", "a", "\n")] + ["b" + w + "\n" + w for w in around]
    for s in fixed:
        check_string(compiled, s, rx.search(s) is not None)

    @settings(**SETTINGS)
    @given(st.lists(st.sampled_from(["a" * 8, "a", "b", "\n", "ab"]), max_size=14).map("".join))
    def run(s):
        check_string(compiled, s, rx.search(s) is not None)

    run()


# Anchors inside groups, before other terms and under quantifiers (JSON Schema patterns of the
# corpus use them this way); checked against Python's re with ^ -> \A and $ -> \Z.
INNER_ANCHOR_CASES = [
    ("(^ab$)", ["ab", "xab", "abx", ""]),
    ("(^a|^b)c", ["ac", "bc", "xac", "acx", "c"]),
    ("^([^,]|$)", ["", "a", ",", "ab", ",a"]),
    ("(^a|b)+", ["a", "ab", "bab", "xa", "aa", "x"]),
    (r"^$|(^(?:\S+\s+){0,2}\S+$)", ["", "a", "a b", "a b c", "a b c d", " a", "a "]),
    ("(^x$)*", ["", "x", "xx", "ax"]),
    ("a^b", ["ab", "b", "a"]),
    ("(a$)", ["a", "ba", "ab"]),
    ("(^Hp_|^In_|_Ar_)", ["Hp_x", "xHp_", "x_Ar_y", "In_", "I"]),
    ("^(/?([.]{2}|[a-z]*)($|/))*$", ["", "/", "ab/cd", "../x", "a//", "A"]),
    ("/^[0-9]{2}$/", ["/12/", "12", "x/12/"]),
    ("(a|^)b", ["b", "ab", "xb", "xab", "bx"]),
    ("a($|b)c", ["a", "abc", "ac", "xabcx"]),
    ("(^a)?b(c$)?", ["b", "ab", "bc", "abc", "xbcx", "xab"]),
    ("(^a){2,3}", ["a", "aa", "xa", ""]),
]


def _python_anchors(pattern: str) -> "re.Pattern":
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            out.append(pattern[i:i + 2])
            i += 2
            continue
        if c == "[":  # a class is copied whole (its ^ negates)
            j = pattern.index("]", i + 2)
            out.append(pattern[i:j + 1])
            i = j + 1
            continue
        out.append({"^": r"\A", "$": r"\Z"}.get(c, c))
        i += 1
    return re.compile("".join(out))


@pytest.mark.parametrize("search", [True, False], ids=["search", "fullmatch"])
@pytest.mark.parametrize("pattern,strings", INNER_ANCHOR_CASES)
def test_inner_anchors(compiler, pattern, strings, search):
    rx = _python_anchors(pattern)
    expected = (lambda s: rx.search(s) is not None) if search else (lambda s: rx.fullmatch(s) is not None)
    try:
        compiled = compiled_for(compiler, pattern, search=search)
    except xg.GrammarError:  # a pattern that matches nothing ("a^b") does not compile
        compiled = None

    def check(s):
        if compiled is None:
            assert not expected(s), s
        else:
            check_string(compiled, s, expected(s))

    for s0 in strings:
        for s in mutations(s0) if s0 else [s0]:
            check(s)
    alphabet = sorted(set("".join(strings)) | {"a"})

    @settings(**SETTINGS)
    @given(st.text(alphabet=alphabet, max_size=6))
    def run(s):
        check(s)

    run()


@pytest.mark.parametrize("pattern,column,needle", [
    (r"(a)\1", 4, "Backreferences are not supported"),
    (r"(?<x>a)b\k<x>", 9, "backreference"),
    ("ab(?=c)", 3, "Lookahead"),
    ("a(?!c)", 2, "lookahead"),
    ("(?<=c)a", 1, "Lookbehind"),
    ("\u00e9\u00e9(?<!c)a", 3, "lookbehind"),
    (r"a\bc", 2, r"\b"),
    (r"\p{L}", 1, "property"),
    ("(^a){17}", 1, "anchor under a repetition"),
    ("a**", 3, "Two consecutive repetition modifiers are not allowed: nothing to repeat"),
    ("*a", 1, "nothing to repeat"),
    ("a)", 2, "Unmatched ')'"),
    ("(ab", 1, "The parenthesis is not closed: unterminated group"),
    ("[z-a]", 2, "out of order"),
    (r"\q", 1, "invalid escape"),
])
def test_syntax_errors(pattern, column, needle):
    with pytest.raises(xg.GrammarSyntaxError) as info:
        xg.Grammar.from_regex(pattern)
    assert info.value.column == column
    assert info.value.line == 1
    assert needle in str(info.value)


@pytest.mark.parametrize("pattern,column,needle", [
    ("a{,3}", 2, "Python reads it as {0,n}"),
    ("(a|b){,12}c", 6, "Invalid repetition range"),
    ("[]", 1, "Empty character class is not allowed in regex."),
    ("a[^]", 2, "Empty character class is not allowed in regex."),
    ("\x00", 1, "The regex must not contain null characters."),
    ("[0-9]+\x00", 7, "The regex must not contain null characters."),
])
def test_python_spellings_are_refused_where_readings_differ(pattern, column, needle):
    # from_regex reads as xgrammar (Python's re) does: a spelling ECMAScript reads otherwise is
    # refused, never read one way; the ECMAScript reader of JSON Schema patterns keeps them.
    with pytest.raises(xg.GrammarSyntaxError) as info:
        xg.Grammar.from_regex(pattern)
    assert (info.value.line, info.value.column) == (1, column)
    assert needle in str(info.value)
    xg.Grammar(_core.grammar_from_regex(pattern))


@pytest.mark.parametrize("pattern,strings", [
    (r"\a\e+", {"\x07\x1b": True, "\x07\x1b\x1b": True, "ae": False, "\x07": False}),
    (r"[\a\e]", {"\x07": True, "\x1b": True, "a": False, "e": False}),
    ("a{,}", {"a{,}": True, "a": False}),
    ("a{0,3}", {"": True, "aaa": True, "aaaa": False}),
])
def test_python_escapes_and_literal_braces(compiler, pattern, strings):
    # \a and \e are BEL and ESC (PCRE, xgrammar); a brace that is no quantifier is text.
    compiled = compiler.compile_grammar(xg.Grammar.from_regex(pattern))
    for text, expected in strings.items():
        matcher = xg.GrammarMatcher(compiled)
        assert (matcher.accept_string(text) and matcher.is_completed()) == expected, text
    with pytest.raises(xg.GrammarSyntaxError, match="invalid escape"):
        xg.Grammar(_core.grammar_from_regex(r"\a"))  # ECMAScript reads the letter: refused


def test_anchored_patterns_stay_bounded():
    # Composition around anchors nests expressions: past a budget it is a typed limit, never a
    # deep recursion later; anchor-free runs and alternatives stay flat.
    with pytest.raises(xg.LimitExceededError, match="anchors"):
        xg.Grammar.from_regex("(a|^)" * 50000)
    xg.Grammar.from_regex("(^|" + "a|" * 50000 + "b)")
    xg.Grammar.from_regex("^" + "a" * 100000 + "(a|$)")


def test_limits():
    with pytest.raises(xg.LimitExceededError):
        xg.Grammar.from_regex("a{100001}")
    with pytest.raises(xg.LimitExceededError):
        xg.Grammar.from_regex("(" * 10001 + ")" * 10001)
    xg.Grammar.from_regex("a{2,100000}")


def test_printing():
    g = xg.Grammar.from_regex(r"[a-z]+@\d{2,3}")
    assert str(g).strip() == 'root ::= [a-z]+ "@" [0-9]{2,3}'
    # The printed grammar parses back to the same grammar.
    assert str(xg.Grammar.from_ebnf(str(g))) == str(g)


@settings(**{**SETTINGS, "max_examples": 300})
@given(st.text(alphabet=list("()[]{}|*+?^$.\\-,<>=!:abdDwsuxkpc0129\u00e9"), max_size=12))
def test_never_crashes(pattern):
    try:
        g = xg.Grammar.from_regex(pattern)
    except (xg.GrammarSyntaxError, xg.LimitExceededError):
        return
    assert str(xg.Grammar.from_ebnf(str(g))) == str(g)
