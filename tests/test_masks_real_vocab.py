"""Token masks on real vocabularies (GPT-2, Llama-3, Llama-2), checked token by token.

Matchers are driven along valid documents (greedy longest-match tokenization, so tokens often
span rule boundaries and split UTF-8 characters); at sampled states EVERY token of the vocabulary
is tried with accept_token on a fork, and the mask bit must equal the outcome. Special tokens and
padding ids (logits wider than the token list) must never be allowed, stop tokens exactly when
the output is complete. Lazily compiled grammars must give the same masks as eager ones.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
from helpers import mask_row

import xg2_jax as xg
from xg2_jax import greedy_tokenize

# --------------------------------------------------------------------------------- grammars

ARITH = r"""
# Arithmetic expressions with optional single spaces around operators.
root ::= expr
expr ::= term (ws [-+] ws term)*
term ::= factor (ws [*/] ws factor)*
factor ::= number | "(" ws expr ws ")" | "-" factor | ident call?
call ::= "(" ws (expr (ws "," ws expr)*)? ws ")"
number ::= [0-9]+ ("." [0-9]+)? ([eE] [-+]? [0-9]+)?
ident ::= [a-z] [a-z0-9_]*
ws ::= " "?
"""

KEY_VALUE = r"""
# key = value lines; keys and bare values may hold (some) non-ASCII letters.
root ::= line ("\n" line)* "\n"?
line ::= key ws "=" ws value ws comment?
key ::= [a-zA-Z_\u00C0-\u024F\u0391-\u03C9] [a-zA-Z0-9_.\-\u00C0-\u024F\u0391-\u03C9]*
value ::= quoted | bare | list
quoted ::= "\"" ([^"\\\n] | "\\" ["\\nt] | "\\u" [0-9a-fA-F]{4})* "\""
bare ::= [^\n\t "=\\#,\[\]]+
list ::= "[" ws (value (ws "," ws value)*)? ws "]"
comment ::= "#" [^\n]*
ws ::= [ \t]*
"""

RECORDS = r"""
# Records with bounded repetitions: date, time, code with a Greek suffix.
root ::= record (", " record){0,3}
record ::= date " " time " " code
date ::= [0-9]{4} "-" [0-9]{2} "-" [0-9]{2}
time ::= [0-9]{2} ":" [0-9]{2} (":" [0-9]{2})?
code ::= [A-Z]{2,3} "-" [0-9a-f]{4,8} ("/" [α-ω]{1,3})? "!"{0,2}
"""

DOCS = {
    "json": [
        '{"name": "Zo\u00eb \\u00e9\\n\\"q\\"", "vals": [1, -2.5e+3, true, null, 0.25],'
        ' "nested": {"k": "\u65e5\u672c\u8a9e \U0001F389", "empty": {}, "arr": []}}',
        '[\n  {\n    "id": 17,\n    "tags": ["a", "b\\\\c", "\\/"],\n    "ok": false\n  },\n'
        '  -0.0,\n  "\u00e7a va \u2014 \u20ac5"\n]',
        '[  "just a string with \\t tab and \u00fc"  ]',
    ],
    "arith": [
        "3 * (4 + 5.25) - -2e10 / max(1, x_1 * 2)",
        "((1+2)*(3-4))/f()+g(7, (8))",
    ],
    "key_value": [
        'name = "Zo\u00eb \\"the\\" \\u00e9"\ncount=42 # a comment \u00e9\n'
        '\u00c9t\u00e9 = caf\u00e9\u2615\n\u03b1\u03b2 = [1, "x", [caf\u00e9, b]]\n',
        "path.to-key\t=\t/usr/bin/\U0001F600 #\n_x = []",
    ],
    "records": [
        "2024-01-31 23:59 ABC-dead/\u03b1\u03b2\u03b3!!, 1999-12-31 00:00:00 XY-0123abcd",
        "2000-02-29 12:30:45 QZ-beef!",
    ],
}

GRAMMARS = {"json": None, "arith": ARITH, "key_value": KEY_VALUE, "records": RECORDS}
VOCABS = ["gpt2", "llama3", "llama2"]
STATES_PER_DOC = 12
PADDING = 100  # extra logits beyond the token list


@functools.lru_cache(maxsize=None)
def _tokenizer(path: str, padded: bool) -> xg.TokenizerInfo:
    probe = xg.TokenizerInfo.from_vocab_file(path)
    if not padded:
        return probe
    return xg.TokenizerInfo.from_vocab_file(path, vocab_size=probe.num_tokens + PADDING)


@functools.lru_cache(maxsize=None)
def _compiled(path: str, padded: bool, grammar: str, lazy: bool) -> xg.CompiledGrammar:
    compiler = xg.GrammarCompiler(_tokenizer(path, padded), cache_enabled=False)
    if GRAMMARS[grammar] is None:
        return compiler.compile_builtin_json_grammar(lazy=lazy)
    return compiler.compile_grammar(GRAMMARS[grammar], lazy=lazy)


def mask_bools(m: xg.GrammarMatcher, vocab_size: int) -> np.ndarray:
    return xg.bitmask_to_bool(mask_row(m, vocab_size), vocab_size)


def accepted_by_matcher(m: xg.GrammarMatcher, vocab_size: int) -> np.ndarray:
    """accept_token(t) for every t, on a fork, undoing each success."""
    f = m.fork()
    out = np.zeros(vocab_size, dtype=bool)
    for t in range(vocab_size):
        if f.accept_token(t):
            out[t] = True
            f.rollback(1)
    assert f.num_accepted_tokens == m.num_accepted_tokens
    return out


def check_state(m: xg.GrammarMatcher, lazy_m: xg.GrammarMatcher, tok: xg.TokenizerInfo,
                where: str) -> None:
    v = tok.vocab_size
    bits = mask_bools(m, v)
    assert np.array_equal(mask_bools(lazy_m, v), bits), f"lazy mask differs at {where}"
    truth = accepted_by_matcher(m, v)
    diff = np.flatnonzero(bits != truth)
    assert diff.size == 0, (
        f"{where}: {diff.size} tokens differ, e.g. "
        + ", ".join(f"{t} {tok.decoded_vocab[t] if t < tok.num_tokens else b'<pad>'!r} "
                    f"mask={bits[t]} accept={truth[t]}" for t in diff[:8])
    )
    stops = set(tok.stop_token_ids)
    completed = m.is_completed()
    for t in stops:
        assert bits[t] == completed, where
    for t in set(tok.special_token_ids) - stops:
        assert not bits[t], (where, t)
    assert not bits[tok.num_tokens:].any(), where
    # Some non-stop token or the stop token is always possible on a valid path.
    assert bits.any(), where


@pytest.mark.parametrize("vocab", VOCABS)
@pytest.mark.parametrize("grammar", list(GRAMMARS))
def test_every_token_at_sampled_states(vocab_path, vocab, grammar):
    path = str(vocab_path(vocab))
    # GPT-2 is checked with padded logits (50,257 tokens in 50,357 logits), the others as is.
    padded = vocab == "gpt2"
    tok = _tokenizer(path, padded)
    if padded:
        assert tok.vocab_size == tok.num_tokens + PADDING
    compiled = _compiled(path, padded, grammar, False)
    lazy = _compiled(path, padded, grammar, True)
    for d, doc in enumerate(DOCS[grammar]):
        ids = greedy_tokenize(tok, doc.encode())
        assert b"".join(tok.decoded_vocab[t] for t in ids) == doc.encode()
        m, lm = xg.GrammarMatcher(compiled), xg.GrammarMatcher(lazy)
        checkpoints = set(np.linspace(0, len(ids), STATES_PER_DOC).astype(int).tolist())
        for i, t in enumerate(ids):
            if i in checkpoints:
                check_state(m, lm, tok, f"{vocab}/{grammar} doc {d} after {i} tokens")
            assert m.accept_token(t), (vocab, grammar, d, i, tok.decoded_vocab[t])
            assert lm.accept_token(t)
        assert m.is_completed(), (vocab, grammar, d)
        check_state(m, lm, tok, f"{vocab}/{grammar} doc {d} at the end")
        stop = tok.stop_token_ids[0]
        assert m.accept_token(stop)
        assert m.is_terminated()
        # After the stop token nothing is accepted and a fill raises, as in xgrammar.
        assert not accepted_by_matcher(m, tok.vocab_size).any()
        with pytest.raises(xg.MatcherStateError):
            mask_row(m, tok.vocab_size)


@pytest.mark.parametrize("vocab", VOCABS)
def test_invalid_documents_rejected(vocab_path, vocab):
    """Tokens breaking the structure are refused and leave the matcher where it was."""
    path = str(vocab_path(vocab))
    tok = _tokenizer(path, False)
    m = xg.GrammarMatcher(_compiled(path, False, "json", False))
    assert m.accept_string('{"a": [1, ')
    before = mask_bools(m, tok.vocab_size)
    for bad in ["]", "}", ",", ":", "tru e", "01"]:
        ids = greedy_tokenize(tok, bad.encode())
        f = m.fork()
        results = [f.accept_token(t) for t in ids]
        assert not all(results), bad
    assert np.array_equal(mask_bools(m, tok.vocab_size), before)
    for t in np.flatnonzero(~before)[:2000]:
        assert not m.accept_token(int(t))
    assert np.array_equal(mask_bools(m, tok.vocab_size), before)


def test_qwen3_padded_logits(vocab_path):
    """Qwen3: 151,669 tokens but 151,936 logits; the extra ids are never allowed."""
    path = vocab_path("qwen3")
    tok = xg.TokenizerInfo.from_vocab_file(path, vocab_size=151936)
    assert tok.num_tokens == 151669 and tok.vocab_size == 151936
    m = xg.GrammarMatcher(xg.GrammarCompiler(tok).compile_builtin_json_grammar())
    lm = xg.GrammarMatcher(xg.GrammarCompiler(tok, cache_enabled=False)
                           .compile_builtin_json_grammar(lazy=True))
    doc = '{"k\u00e9y": [true, "\u4f60\u597d", 1.5]}'
    ids = greedy_tokenize(tok, doc.encode())
    for i, t in enumerate(ids):
        if i % 4 == 0:
            check_state(m, lm, tok, f"qwen3 after {i} tokens")
        assert m.accept_token(t) and lm.accept_token(t)
    check_state(m, lm, tok, "qwen3 at the end")
    for t in (151669, 151800, 151935):
        assert not m.accept_token(t)
    with pytest.raises(xg.InvalidArgumentError):
        m.accept_token(151936)


def test_lazy_grammar_shared_between_threads(vocab_path):
    """Matchers on several threads fill masks of one lazily compiled grammar (entries are built
    concurrently on first use); every mask equals the eagerly compiled one."""
    import threading

    path = str(vocab_path("gpt2"))
    tok = _tokenizer(path, False)
    eager = _compiled(path, False, "json", False)
    lazy = xg.GrammarCompiler(tok, cache_enabled=False).compile_builtin_json_grammar(lazy=True)
    docs = DOCS["json"] * 2
    id_lists = [greedy_tokenize(tok, d.encode()) for d in docs]

    def masks(compiled, ids):
        m, out = xg.GrammarMatcher(compiled), []
        bm = xg.allocate_token_bitmask(1, tok.vocab_size)
        for t in ids:
            m.fill_next_token_bitmask(bm)
            out.append(bm[0].copy())
            assert m.accept_token(t)
        return out

    results: list = [None] * len(docs)
    errors: list = []

    def run(i):
        try:
            results[i] = masks(lazy, id_lists[i])
        except BaseException as e:  # reported below, on the main thread
            errors.append(e)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(docs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for i, ids in enumerate(id_lists):
        want = masks(eager, ids)
        assert len(results[i]) == len(want)
        for step, (a, b) in enumerate(zip(results[i], want)):
            assert np.array_equal(a, b), (i, step)
