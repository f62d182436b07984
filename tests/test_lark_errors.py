"""Errors of the Lark front end, of TagDispatch's arguments and of the Python-flavoured regex
readers: each a typed exception whose message leads with xgrammar's phrase, keeps our detail
after it, and locates the error (line:col, then the source line and a caret under the column).
"""

import pytest

import xg2_jax as xg

TEXT = r"TEXT: /(\n|.)*/"


@pytest.mark.parametrize("grammar, line, column, phrase", [
    # names and definitions
    ('start: foo\nfoo: "a"\nfoo: "b"', 3, 1, "duplicate rule or terminal 'foo' (first defined at 2:1)"),
    ('%import common.INT\nINT: "x"\nstart: INT', 1, 9, "duplicate rule or terminal 'INT'"),
    ('start: TOKEN\nTOKEN: rule\nrule: "a"', 2, 8, "terminal 'TOKEN' cannot reference rule 'rule'"),
    ('start "a"', 1, 7, "expected ':' after rule name 'start', found '\"'"),
    ('start::0: "a"', 1, 6, "parametric grammar is not supported"),
    ("start: foo::0", 1, 11, "parametric grammar is not supported"),
    ('start: "a" %if enabled', 1, 12, "parametric %if conditions are not supported"),
    # expressions
    ('start: A & B\nA: "a"\nB: "b"', 1, 10, "terminal intersection '&' is not supported"),
    ("start: ~/[a]/", 1, 8, "regular-expression complement '~' is not supported"),
    ("start: $", 1, 8, "unexpected character '$'"),
    ("start: \x01", 1, 8, "unexpected a control character"),
    ("start: -", 1, 8, "unexpected '-' character"),
    ("start: !", 1, 8, "unexpected '!' character"),
    ('start: ("a"', 1, 12, "expected ')' after group, found end of input (the '(' at line 1, column 8"),
    ('start: ["a" | "b"\n', 1, 18, "expected ']' after optional group, found end of line"),
    ('start: "a" ->', 1, 14, "expected alias name after '->'"),
    ('start: "a"{3,2}', 1, 11, "repetition end must be greater than or equal to start"),
    ('start: "a"~3..2', 1, 11, "repetition end must be greater than or equal to start"),
    ('start: "a"{-1,}', 1, 12, "invalid repetition count"),
    ('start: "a"{2,-1}', 1, 14, "invalid repetition count"),
    ('start: "a"{99999999999}', 1, 12, "invalid repetition count: number too large"),
    ('start: "z".."a"', 1, 8, "character range start must not exceed end"),
    # literals
    ('start: "\\q"', 1, 9, "invalid string literal: invalid escape sequence '\\q'"),
    ('start: "\\x4"', 1, 9, "invalid string literal"),
    ('start: "\u00c4"i', 1, 8, "case-insensitive string literals currently support ASCII characters only"),
    ("start: /[abc/", 1, 8, "failed to compile regular expression /[abc/: unterminated character class"),
    ("start: /[]a]/", 1, 8, "failed to compile regular expression /[]a]/ at character 1: Empty character class is not"),
    ("start: /[^]/", 1, 8, "failed to compile regular expression /[^]/ at character 1: Empty character class is not"),
    ("start: <bad token>", 1, 8, "invalid special token"),
    ("start: @", 1, 8, "empty grammar reference"),
    # directives and JSON values
    ("start: %json {", 1, 14, "failed to parse JSON value after %json"),
    ("start: %json [", 1, 14, "failed to parse JSON value after %json"),
    ("start: %json []", 1, 8, "failed to compile inline JSON schema"),
    ('%grammar_options []\nstart: "a"', 1, 18, "%grammar_options value must be an object"),
    ("start: TOKEN\nTOKEN: <[1]>", 2, 8, "special tokens cannot be used in terminals"),
    ("start: TOKEN\nTOKEN: %json {}", 2, 8, "%json cannot be used in terminals"),
    # special tokens without a tokenizer: the syntax is checked first
    ("start: <[1-2-3]>", 1, 8, "invalid numeric special-token range '1-2-3'"),
    ("start: <[3-1]>", 1, 8, "invalid numeric special-token range '3-1'"),
    ("start: <[1 2]>", 1, 8, "invalid numeric special-token range '1 2'"),
    ("start: <[1, 2-3 ,x]>", 1, 8, "invalid numeric special-token range 'x'"),
    ("start: <[a]>", 1, 8, "invalid numeric special-token range 'a'"),
    ("start: <[,]>", 1, 8, "empty numeric special-token range"),
    ("start: <[0-1000001]>", 1, 8, "special-token range is too large"),
    ("start: <[*]>", 1, 8, "wildcard special token requires tokenizer_info"),
    ("start: <[^*]>", 1, 8, "negated wildcard special token is not supported"),
    ("start: <[*,1]>", 1, 8, "wildcard cannot be mixed with token ranges"),
    ("start: <|tool|>", 1, 8, "named special token <|tool|> requires tokenizer_info"),
    ("start: <[1]>", 1, 8, "numeric special token <[1]> requires tokenizer_info"),
    # stop_capture's value
    (f'start: head\nhead[stop_capture="m"]: TEXT\n{TEXT}', 2, 6, "stop_capture requires stop or suffix"),
    (f'start: head\nhead[stop="x", stop_capture="bad name"]: TEXT\n{TEXT}', 2, 29, "capture name must only contain"),
    (f'start: head\nhead[stop="x", stop_capture=M]: TEXT\n{TEXT}', 2, 29,
     "expected string literal after stop_capture="),
    (f'start: head\nhead[stop="x", stop_capture="a", stop_capture="b"]: TEXT\n{TEXT}', 2, 34,
     "stop_capture attribute is specified more than once"),

])
def test_lark_errors(grammar, line, column, phrase):
    with pytest.raises((xg.GrammarSyntaxError, xg.GrammarError)) as info:
        xg.Grammar.from_lark(grammar)
    message = str(info.value)
    assert isinstance(info.value, RuntimeError)
    assert message.startswith(f"Lark error at line {line}, column {column}: {phrase}"), message


def test_lark_error_shows_the_source_line_and_a_caret():
    with pytest.raises(xg.GrammarSyntaxError) as info:
        xg.Grammar.from_lark('# comment\r\nstart: "a"\r\nitem missing')
    assert (info.value.line, info.value.column) == (3, 6)
    assert str(info.value) == ("Lark error at line 3, column 6: expected ':' after rule name 'item', found 'm'\n"
                               "item missing\n     ^")


def test_nested_lark_error_keeps_one_context():
    with pytest.raises(xg.GrammarSyntaxError) as info:
        xg.Grammar.from_lark('start: %lark { start: $ }')
    message = str(info.value)
    assert message.startswith("Lark error at line 1, column 8: failed to compile nested Lark grammar: "
                              "Lark error at line 1, column 9: unexpected character '$'"), message
    assert message.count("\n") == 2


def test_json_directive_takes_any_json_value():
    accepts = xg.GrammarCompiler(xg.TokenizerInfo([]), cache_enabled=False).compile_grammar(
        xg.Grammar.from_lark('start: "<" %json true ">"'))
    matcher = xg.GrammarMatcher(accepts)
    assert matcher.accept_string('<{"a": [1]}>') and matcher.is_completed()


# Passed to the test by name: a nanobind object in a parametrize id outlives the module
# (pytest keeps the items to the end), which nanobind reports as leaked at exit.
TOOLS = {"tools": xg.TokenizerInfo(["<|bar|>", "x", "a"]), None: None}


@pytest.mark.parametrize("grammar, tokenizer, line, column, phrase", [
    # A dispatch the front end cannot honour would be read as the plain grammar, whose tail
    # TEXT also takes text holding a complete trigger: refused instead.
    (f'start: tool* tail\ntail: TEXT\ntool_head[lazy]: TEXT "<t>"\ntool[max_tokens=3]: tool_head "x"\n{TEXT}',
     None, 4, 6, "max_tokens is not supported on rules consumed by dynamic dispatch (rule 'tool')"),
    (f'start: tool* tail\ntail: TEXT\ntool_head[lazy]: TEXT "<t>"\ntool[capture]: tool_head "x"\n{TEXT}',
     None, 4, 6, "capture is not supported on rules consumed by dynamic dispatch (rule 'tool')"),
    (f'start: tool* tail\ntail: TEXT\ntool_head[lazy, capture]: TEXT "<t>"\ntool: tool_head "x"\n{TEXT}',
     None, 3, 17, "capture is not supported on rules consumed by dynamic dispatch (rule 'tool_head')"),
    (f'start[max_tokens=5]: tool* tail\ntail: TEXT\ntool_head[lazy]: TEXT "<t>"\ntool: tool_head "x"\n{TEXT}',
     None, 1, 7, "max_tokens is not supported on a dynamic dispatch start rule"),
    (f'start: (foo | bar)* tail\ntail: TEXT\nfoo_head[lazy]: TEXT "<foo>"\nfoo: foo_head "x"\n'
     f'bar: TEXT <|bar|> "x"\n{TEXT}', "tools", 1, 1, "a dynamic Lark start rule cannot mix string and token triggers"),
    (f'start: tool* tail\ntail: TEXT\ntool: TEXT <[^1]> "x"\n{TEXT}', "tools", 3, 12,
     "dynamic special-token trigger cannot be negated"),
    (f"start: head\nhead[lazy]: TEXT <[^1]>\n{TEXT}", "tools", 2, 18, "lazy special-token trigger cannot be negated"),
])
def test_lark_dispatch_errors(grammar, tokenizer, line, column, phrase):
    with pytest.raises(xg.GrammarSyntaxError) as info:
        xg.Grammar.from_lark(grammar, tokenizer_info=TOOLS[tokenizer])
    assert str(info.value).startswith(f"Lark error at line {line}, column {column}: {phrase}"), str(info.value)


@pytest.mark.parametrize("grammar, line, column, phrase", [
    # Refused as xgrammar refuses them: a priority picks among tokenizations, which a mask
    # cannot follow; a lazy, stop= or suffix= body is a terminal's; a standalone lazy regex
    # with a trigger suffix is a dispatch head's form.
    ('start.2: "a"', 1, 6, "rule and terminal priorities are not supported"),
    ('start: X\nX.-1: "a"', 2, 2, "rule and terminal priorities are not supported"),
    ("start: head\nhead[lazy]: /(\\n|.)*END/", 2, 1,
     "lazy regex suffix is only supported on a head used by dynamic dispatch"),
    ('start: r\nr[suffix="!"]: sub\nsub: /[a-z]*/', 2, 16, "terminal cannot reference rule 'sub'"),
    ('start: r\nr[stop="!"]: "<" sub\nsub: /[a-z]*/', 2, 18, "terminal cannot reference rule 'sub'"),
    ('start: "<" r ">"\nr[lazy]: "a" x | "b"\nx: "c"', 2, 14, "terminal cannot reference rule 'x'"),
])
def test_lark_refusals_as_xgrammar(grammar, line, column, phrase):
    with pytest.raises(xg.GrammarSyntaxError) as info:
        xg.Grammar.from_lark(grammar)
    assert str(info.value).startswith(f"Lark error at line {line}, column {column}: {phrase}"), str(info.value)


@pytest.mark.parametrize("grammar, accepted, rejected", [
    # The same attributes over terminals, and a lazy regex head inside its dispatch.
    ('start: r\nr[suffix="!"]: SUB\nSUB: /[a-z]*/', ["ab!", "!"], ["ab", "a!!"]),
    ('start: r\nr[stop="!"]: "<" SUB\nSUB: /[a-z]*/', ["<a!"], ["a!"]),
    ('start: "<" r ">"\nr[lazy]: "a" X | "b"\nX: "c"', ["<ac>", "<b>"], ["<a>"]),
    ('start: r "z"\nr[lazy, max_tokens=8]: sub "x"\nsub: /[a-z]*/', ["abxz"], ["abz"]),
    ('start: tool* tail\ntail: TEXT\nhead[lazy]: /(\\n|.)*<call>/\ntool: head /[0-9]+/ "</call>"\nTEXT: /(\\n|.)*/',
     ["x<call>12</call>y", "free text"], ["<call>x</call>", "x<call>12"]),
])
def test_lark_terminal_bodies_kept(grammar, accepted, rejected):
    compiled = xg.GrammarCompiler(xg.TokenizerInfo([]), cache_enabled=False).compile_grammar(
        xg.Grammar.from_lark(grammar))
    for text in accepted + rejected:
        matcher = xg.GrammarMatcher(compiled)
        assert (matcher.accept_string(text) and matcher.is_completed()) == (text in accepted), text


@pytest.mark.parametrize("ebnf, line, column, rule, phrase", [
    ('root ::= Regex("[]")', 1, 10, "root", "in Regex pattern at character 1: Empty character class is not allowed"),
    ('root ::= Regex("[^]")', 1, 10, "root", "in Regex pattern at character 1: Empty character class is not allowed"),
    ('root ::= Regex("\\\\u{110000}")', 1, 10, "root", "beyond the Unicode range"),
    ('root ::= Regex("\\\\x4")', 1, 10, "root", "must be followed by two hexadecimal digits"),
    ('root ::= Regex("a(")', 1, 10, "root", "The parenthesis is not closed"),
    ('root ::= Regex("(?<n>a)\\\\k<n>")', 1, 10, "root", "Backreferences are not supported: named backreference"),
    ('root ::= "<" body ">"\nbody ::= "x" Regex("+a", json_string=true)', 2, 14, "body", "nothing to repeat"),
    ('root ::= "<" (body | "y") ">"\nbody ::= Regex("a\x00")', 2, 10, "body", "must not contain null characters"),
])
def test_ebnf_macro_errors_are_raised_by_the_compile(ebnf, line, column, rule, phrase):
    # As xgrammar: the grammar reads, prints, combines and serializes; compiling it raises the
    # pattern's error at the macro's place, whatever path the grammar took.
    grammar = xg.Grammar.from_ebnf(ebnf)
    printed = xg.Grammar.from_ebnf(str(grammar))
    assert str(printed) == str(grammar)
    compiler = xg.GrammarCompiler(xg.TokenizerInfo(["a", "x"]), cache_enabled=False)
    for form, rule_name in [(grammar, rule), (printed, rule),
                            (xg.Grammar.deserialize_json(grammar.serialize_json()), rule),
                            (xg.Grammar.union(xg.Grammar.from_ebnf('root ::= "q"'), grammar), "g1_" + rule)]:
        with pytest.raises(xg.GrammarSyntaxError) as info:
            compiler.compile_grammar(form)
        message = str(info.value)
        assert message.startswith(f"Failed to build the automaton for rule {rule_name}: EBNF parser error at line "
                                  f"{line}, column {column}: "), message
        assert phrase in message, message
        if form is grammar:
            assert (info.value.line, info.value.column) == (line, column)
        # The compiler is unharmed: a valid grammar compiles after the refusal.
        assert compiler.compile_grammar('root ::= "a"') is not None


def test_tag_dispatch_excludes_take_precedence_over_triggers():
    # As xgrammar: an exclude that starts a trigger is refused at parse time, and a trigger
    # holding one never fires (tests/test_structural_tag.py's reference checks the language).
    with pytest.raises(xg.GrammarSyntaxError, match="Exclude string must not be a prefix of trigger string: tag "):
        xg.Grammar.from_ebnf('root ::= TagDispatch(("tag1", r), excludes=("tag"))\nr ::= "!"')
    compiled = xg.GrammarCompiler(xg.TokenizerInfo([]), cache_enabled=False).compile_grammar(
        xg.Grammar.from_ebnf('root ::= TagDispatch(("<tag1", r), excludes=("tag"))\nr ::= "!"'))
    for text, ok in [("x ta <", True), ("x <tag1!", False), ("x tag", False)]:
        matcher = xg.GrammarMatcher(compiled)
        assert (matcher.accept_string(text) and matcher.is_completed()) == ok, text


def test_ecmascript_readers_keep_empty_classes():
    # JSON Schema patterns are ECMAScript: [] matches nothing, [^] any character. (from_regex,
    # Lark and Regex() read Python's spellings and refuse both.)
    compiled = xg.GrammarCompiler(xg.TokenizerInfo([]), cache_enabled=False).compile_json_schema(
        {"type": "string", "pattern": "^([^]x|[]y)$"}, any_whitespace=False)
    matcher = xg.GrammarMatcher(compiled)
    assert matcher.accept_string('"\\nx"') and matcher.is_completed()
    matcher = xg.GrammarMatcher(compiled)
    assert not matcher.accept_string('"y"')
    with pytest.raises(xg.GrammarSyntaxError, match="Empty character class is not allowed"):
        xg.Grammar.from_regex("[^]x|[]y")
