"""xgrammar 0.2.9's API on xg2-jax: option and method names, argument forms, JSON
serialization, exceptions, host-buffer interop and the mask/accept agreement with overridden
stop tokens (docs/XGRAMMAR_COMPAT.md)."""

import array
import json

import numpy as np
import pytest

import xg2_jax as xg
from xg2_jax import testing as xgt


def mask_allows(matcher, vocab_size):
    mask = xg.allocate_token_bitmask(1, vocab_size)
    matcher.fill_next_token_bitmask(mask)
    return xg.bitmask_to_bool(mask[0], vocab_size)


# ------------------------------------------------------------- override_stop_tokens agreement
@pytest.mark.parametrize("extra_vocab", [[], ["\n", "\r", "\t", "\x00", "\x01", "\x02"]],
                         ids=["rejected-set", "accepted-set"])
def test_override_stop_token_inside_string_is_masked_and_refused(extra_vocab):
    # "<stop>" is text to the compiled mask cache; overridden as a stop token, the mask must
    # forbid it inside a JSON string (accept_token refuses it there) and allow it at the end.
    tok = xg.TokenizerInfo(["</s>", "<stop>", "text", '"}'] + extra_vocab, stop_token_ids=[0])
    compiled = xg.GrammarCompiler(tok).compile_builtin_json_grammar()
    m = xg.GrammarMatcher(compiled, override_stop_tokens=[1])
    assert m.accept_string('{"name":"')
    assert not mask_allows(m, tok.vocab_size)[1]
    assert not m.accept_token(1)
    assert mask_allows(m, tok.vocab_size)[2] and m.accept_token(2) and m.accept_token(3)
    assert mask_allows(m, tok.vocab_size)[1]
    assert m.accept_token(1) and m.is_terminated()


def test_every_allowed_token_is_accepted_with_override_stops():
    tok = xg.TokenizerInfo(["</s>", "a", "b", '"', "ab"], stop_token_ids=[0])
    compiled = xg.GrammarCompiler(tok).compile_grammar('root ::= "\\"" [ab]* "\\""')
    for stops in ([1], [1, 4], [3]):
        m = xg.GrammarMatcher(compiled, override_stop_tokens=stops)
        for prefix in ["", '"', '"a', '"ab"']:
            m.reset()
            assert m.accept_string(prefix)
            allowed = mask_allows(m, tok.vocab_size)
            for t in range(tok.vocab_size):
                probe = m.fork()
                assert probe.accept_token(t) == bool(allowed[t]), (stops, prefix, t)


# ------------------------------------------------------------------- jump-forward tokens
@pytest.mark.parametrize("vocab, grammar, expected", [
    (["ab", "c"], 'root ::= "abc" [xy]', [0, 1]),
    (["ab", "c", "cd"], 'root ::= "abc" [xy]', [0]),
    (["abc", "abcd"], 'root ::= "abc"', []),
    (["abc", "abc"], 'root ::= "abc"', [0]),
    (["a", "ab", "abc", "d"], 'root ::= "abcd"', [2, 3]),
    (["ab", "d"], 'root ::= "abcd"', [0]),
    (["", "a"], 'root ::= "a"', [1]),
    (["a", "b"], "root ::= [ab]", []),
    ([b"\xe4", b"\xbd"], 'root ::= "你" | "佡"', [0, 1]),
])
def test_find_jump_forward_tokens(vocab, grammar, expected):
    tok = xg.TokenizerInfo(vocab)
    m = xg.GrammarMatcher(xg.GrammarCompiler(tok).compile_grammar(grammar))
    before = m._debug_print_internal_state()
    assert m.find_jump_forward_tokens() == expected
    assert m._debug_print_internal_state() == before
    for t in expected:  # the matcher is unchanged and every returned token is accepted
        assert m.accept_token(t)
    assert m._debug_print_internal_state() != before or not expected


def test_jump_forward_tokens_skip_stop_tokens():
    tok = xg.TokenizerInfo(["a", "ab"])
    m = xg.GrammarMatcher(xg.GrammarCompiler(tok).compile_grammar('root ::= "a"'),
                          override_stop_tokens=[1])
    assert m.find_jump_forward_tokens() == [0]
    assert m.accept_token(0) and m.find_jump_forward_tokens() == []


# ---------------------------------------------------------------- matcher and batch forms
def test_is_terminated_without_stop_token_means_complete():
    tok = xg.TokenizerInfo(["a", "</s>"])
    m = xg.GrammarMatcher(xg.GrammarCompiler(tok).compile_grammar('root ::= "a"+'),
                          terminate_without_stop_token=True)
    assert not m.is_terminated()
    assert m.accept_token(0) and m.is_terminated()
    assert m.accept_token(0) and m.is_terminated()  # the grammar still continues


def test_batch_calls_in_xgrammar_forms():
    tok = xg.TokenizerInfo(["a", "b", "</s>"], stop_token_ids=[2])
    compiled = xg.GrammarCompiler(tok, max_threads=2, cache_enabled=False,
                                  cache_limit_bytes=-1).compile_grammar('root ::= "a" "b"')
    ms = [xg.GrammarMatcher(compiled) for _ in range(3)]
    assert xg.BatchGrammarMatcher.batch_accept_string(ms, ["a", b"ab", "b"]) == [True, True,
                                                                                False]
    assert xg.BatchGrammarMatcher.batch_accept_token(ms[:1], [1]) == [True]
    xg.BatchGrammarMatcher.batch_rollback(ms[:2], 1)
    assert [m.num_accepted_tokens for m in ms] == [1, 0, 0]
    batch = xg.BatchGrammarMatcher("auto")
    mask = xg.allocate_token_bitmask(3, tok.vocab_size)
    batch.batch_fill_next_token_bitmask(ms, mask, None, False)
    assert [xg.bitmask_to_bool(r, 3).tolist() for r in mask] == [
        [False, True, False], [True, False, False], [True, False, False]]
    with pytest.raises(xg.InvalidArgumentError):
        batch.batch_accept_string(ms, ["a", 3, "b"])
    with pytest.raises(xg.InvalidArgumentError):
        batch.batch_accept_string(ms, ["a"])


def test_matcher_xgrammar_keywords():
    tok = xg.TokenizerInfo(["a", "</s>"])
    compiled = xg.GrammarCompiler(tok, enable_dynamic_compilation=True).compile_grammar(
        'root ::= "a"')
    m = xg.GrammarMatcher(compiled, max_rollback_tokens=-1)
    assert m.max_rollback_tokens == -1
    assert m.accept_token(0, debug_print=False) and m.is_completed()
    with pytest.warns(DeprecationWarning):
        xg.GrammarMatcher(compiled, max_rollback_tokens=5)
    with pytest.raises(xg.InvalidArgumentError):
        xg.GrammarMatcher(xg.Grammar.from_ebnf('root ::= "a"'))


# -------------------------------------------------------------------------- serialization
def _objects():
    tok = xg.TokenizerInfo(["<s>", "</s>", "Ġhi", "Ġthere", "!"], xg.VocabType.BYTE_LEVEL,
                           vocab_size=8, special_token_ids=[0])
    compiled = xg.GrammarCompiler(tok).compile_json_schema(
        {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]})
    return tok, compiled


def test_json_round_trips():
    tok, compiled = _objects()
    tok2 = xg.TokenizerInfo.deserialize_json(tok.serialize_json())
    assert tok2.decoded_vocab == tok.decoded_vocab
    assert tok2.vocab_type == tok.vocab_type and tok2.stop_token_ids == tok.stop_token_ids
    assert tok2.serialize_json() == tok.serialize_json()
    g2 = xg.Grammar.deserialize_json(compiled.grammar.serialize_json())
    assert str(g2) == str(compiled.grammar)
    c2 = xg.CompiledGrammar.deserialize_json(compiled.serialize_json(), tok2)
    m1, m2 = xg.GrammarMatcher(compiled), xg.GrammarMatcher(c2)
    for text in ['{"a"', ": 1", "}"]:
        assert m1.accept_string(text) and m2.accept_string(text)
        assert (mask_allows(m1, 8) == mask_allows(m2, 8)).all()
    json.loads(compiled.serialize_json())  # plain JSON


def _corrupt(document, path, value):
    doc = json.loads(document)
    node = doc
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return json.dumps(doc)


@pytest.mark.parametrize("kind, path, value, error", [
    ("tokenizer", ["__VERSION__"], "v0", xg.DeserializeVersionError),
    ("tokenizer", ["decoded_vocab"], [1, 2], xg.DeserializeFormatError),
    ("tokenizer", ["decoded_vocab"], ["\u4f60"], xg.DeserializeFormatError),
    ("tokenizer", ["vocab_size"], 2, xg.DeserializeFormatError),
    ("tokenizer", ["stop_token_ids"], [99], xg.DeserializeFormatError),
    ("tokenizer", ["vocab_type"], "BPE", xg.DeserializeFormatError),
    ("tokenizer", ["type"], "Grammar", xg.DeserializeFormatError),
    ("grammar", ["ebnf"], "root ::= (", xg.DeserializeFormatError),
    ("grammar", ["root_rule_name"], 7, xg.DeserializeFormatError),
    ("compiled", ["vocabulary_digest"], "0" * 64, xg.DeserializeFormatError),
    ("compiled", ["grammar", "ebnf"], "nope", xg.DeserializeFormatError),
    ("compiled", ["vocab_size"], True, xg.DeserializeFormatError),
    ("tokenizer", ["trie_subtree_nodes_range"], [], xg.DeserializeFormatError),  # unknown fields
    ("grammar", ["root_rule_id"], 0, xg.DeserializeFormatError),
    ("compiled", ["grammar", "rules"], [], xg.DeserializeFormatError),
])
def test_json_corruption_raises_typed_errors(kind, path, value, error):
    tok, compiled = _objects()
    readers = {"tokenizer": (tok.serialize_json(), xg.TokenizerInfo.deserialize_json),
               "grammar": (compiled.grammar.serialize_json(), xg.Grammar.deserialize_json),
               "compiled": (compiled.serialize_json(),
                            lambda s: xg.CompiledGrammar.deserialize_json(s, tok))}
    document, read = readers[kind]
    with pytest.raises(error):
        read(_corrupt(document, path, value))
    with pytest.raises(xg.InvalidJSONError):
        read(document[:-3])
    with pytest.raises(RuntimeError):  # xgrammar's base class
        read("[]")


# ------------------------------------------------------------ exceptions and recursion depth
def test_exception_names_and_bases():
    assert xg.InvalidStructuralTagError is xg.StructuralTagError
    for cls in (xg.GrammarError, xg.InvalidArgumentError, xg.TokenizerError,
                xg.DeserializeFormatError, xg.InvalidJSONError):
        assert issubclass(cls, RuntimeError) and issubclass(cls, ValueError)
    with pytest.raises(RuntimeError):
        xg.Grammar.from_ebnf("root ::= (")
    from xg2_jax import exception

    assert exception.DeserializeVersionError is xg.DeserializeVersionError


def test_recursion_depth():
    before = xg.get_max_recursion_depth()
    with xg.max_recursion_depth(20):
        assert xg.get_max_recursion_depth() == 20
        with pytest.raises(xg.LimitExceededError):
            xg.Grammar.from_ebnf("root ::= " + "(" * 30 + '"a"' + ")" * 30)
    assert xg.get_max_recursion_depth() == before
    for bad in (-1, 0, 10**8, 2.5):
        with pytest.raises(RuntimeError):
            xg.set_max_recursion_depth(bad)


# --------------------------------------------------------------------- host buffer interop
def test_buffer_protocol_bitmask():
    tok = xg.TokenizerInfo(["a", "b", "</s>"], stop_token_ids=[2])
    m = xg.GrammarMatcher(xg.GrammarCompiler(tok).compile_grammar('root ::= "a"'))
    buf = array.array("i", [0])
    m.fill_next_token_bitmask(buf)
    assert buf.tolist() == [1]
    xg.reset_token_bitmask(buf)
    assert buf.tolist() == [-1]


@pytest.mark.parametrize("bad", [
    np.zeros((1, 1), np.int64), np.zeros((1, 4), np.int32)[:, ::2], b"\0\0\0\0",
    "not a buffer",
])
def test_bad_bitmask_buffers_raise(bad):
    tok = xg.TokenizerInfo(["a", "b", "</s>"] + [f"t{i}" for i in range(40)])
    m = xg.GrammarMatcher(xg.GrammarCompiler(tok).compile_grammar('root ::= "a"'))
    with pytest.raises(xg.InvalidArgumentError):
        m.fill_next_token_bitmask(bad)
    assert m.accept_token(0)  # still usable


def test_jax_array_bitmask_refused():
    jnp = pytest.importorskip("jax.numpy")
    tok = xg.TokenizerInfo(["a", "</s>"])
    m = xg.GrammarMatcher(xg.GrammarCompiler(tok).compile_grammar('root ::= "a"'))
    with pytest.raises(xg.InvalidArgumentError, match="immutable"):
        m.fill_next_token_bitmask(jnp.zeros((1, 1), jnp.int32))


def test_apply_token_bitmask_inplace_numpy():
    logits = np.zeros((3, 40), np.float32)
    mask = np.zeros((3, 2), np.int32)
    mask[:, 0] = 0b101
    xg.apply_token_bitmask_inplace(logits, mask, indices=[0, 2])
    assert np.isneginf(logits[0]).sum() == 38 and not np.isneginf(logits[1]).any()
    assert logits[2, 0] == 0 and logits[2, 2] == 0 and np.isneginf(logits[2, 1])
    strided = np.zeros((40, 2), np.float32)[:, 0]  # 1-D and strided: still written in place
    xg.apply_token_bitmask_inplace(strided, mask[0])
    assert np.isneginf(strided).sum() == 38
    with pytest.raises(xg.InvalidArgumentError):
        xg.apply_token_bitmask_inplace(logits, mask.astype(np.int64))
    with pytest.raises(xg.InvalidArgumentError):
        xg.apply_token_bitmask_inplace(logits, mask[:2])


def test_testing_helpers():
    assert xgt._is_grammar_accept_string('root ::= "a"+', "aaa")
    assert not xgt._is_grammar_accept_string('root ::= "a"+', "ab")
    mask = np.array([[0b1010]], np.int32)
    assert xgt._get_masked_tokens_from_bitmask(mask, 4) == [0, 2]
    assert xgt._is_single_token_bitmask(np.array([[0b100]], np.int32), 5) == (True, 2)
    bools = np.array([[True, False] * 20])
    assert (xgt.bitmask_to_bool_mask(xgt.bool_mask_to_bitmask(bools), 40) == bools).all()


# -------------------------------------------------------------------------------- torch
def test_torch_interop_and_hf_processor():
    torch = pytest.importorskip("torch")
    tok = xg.TokenizerInfo(["a", "b", "</s>"] + [f"t{i}" for i in range(40)],
                           stop_token_ids=[2])
    compiled = xg.GrammarCompiler(tok).compile_grammar('root ::= "a" "b"')
    m = xg.GrammarMatcher(compiled)
    mask = torch.full((2, 2), -1, dtype=torch.int32)
    m.fill_next_token_bitmask(mask, 1)
    assert mask[1].tolist() == [1, 0] and mask[0].tolist() == [-1, -1]
    with pytest.raises(xg.InvalidArgumentError):
        m.fill_next_token_bitmask(torch.zeros((1, 2), dtype=torch.int64))
    with pytest.raises(xg.InvalidArgumentError):
        m.fill_next_token_bitmask(torch.zeros((1, 4), dtype=torch.int32)[:, ::2])
    xg.BatchGrammarMatcher().batch_fill_next_token_bitmask([m], mask)
    logits = torch.zeros((2, 43))
    xg.apply_token_bitmask_inplace(logits, mask, indices=[0])
    assert torch.isinf(logits[0]).sum() == 42 and not torch.isinf(logits[1]).any()

    transformers = pytest.importorskip("transformers")
    from xg2_jax.contrib.hf import LogitsProcessor

    processors = transformers.LogitsProcessorList([LogitsProcessor(compiled)])
    ids = torch.tensor([[5, 6], [7, 8]])
    for step, expected in enumerate([0, 1, 2]):
        scores = processors(ids, torch.zeros((2, 50)))
        assert (scores.argmax(-1) == expected).all()  # the only allowed token
        assert torch.isinf(scores).sum() == 2 * 49
        ids = torch.cat([ids, torch.full((2, 1), expected)], dim=1)
